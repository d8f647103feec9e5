// Host memory lent to kiln (what the Python package does with NumPy arrays): kernels read it in
// place, nothing writes it, and it is given back exactly once, when the last graph using it is done.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "engine/buffers.h"
#include "error_message.h"
#include "kiln/kiln.h"
#include "tensor/tensor_impl.h"

using namespace kiln;

TEST(LentMemory, IsReadInPlaceNeverWrittenAndGivenBackOnce) {
  std::vector<float> data = {1, 2, 3, 4, 5, 6};
  int released = 0;
  {
    Tensor t = tensor_over_host_memory(data.data(), dtypes::float32, {2, 3}, [&] { released++; });
    Tensor doubled = t * 2.0f + 1.0f;
    EXPECT_EQ(doubled.to_vector<float>(), (std::vector<float>{3, 5, 7, 9, 11, 13}));
    data[5] = 60;  // read in place: the next use sees the change
    EXPECT_EQ(t.sum().item<float>(), 1 + 2 + 3 + 4 + 5 + 60);
    t.assign(t * 10.0f).realize();  // functional: a new buffer, the lent memory is untouched
    EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{10, 20, 30, 40, 50, 600}));
    EXPECT_EQ(data, (std::vector<float>{1, 2, 3, 4, 5, 60}));
    EXPECT_EQ(released, 1);  // t holds the new value: nothing reads the lent memory any more
    Tensor lazy = tensor_over_host_memory(data.data(), dtypes::float32, {6}, [&] { released++; }).exp();
    EXPECT_EQ(released, 1);  // a graph still reads the second
  }
  EXPECT_EQ(released, 2);
}

TEST(LentMemory, OnlyForDevicesThatComputeOnHostMemory) {
  float x = 1;
  UOpRef cpu_buffer = engine::new_buffer(dtypes::float32, 1, "CPU");
  engine::adopt_host_memory(*cpu_buffer, &x, [] {});
  const std::string twice = kt::error_of([&] { engine::adopt_host_memory(*cpu_buffer, &x, [] {}); });
  EXPECT_NE(twice.find("already has memory"), std::string::npos) << twice;
  const std::vector<std::string> devices = runtime::device_names();
  if (std::find(devices.begin(), devices.end(), "CL") == devices.end()) GTEST_SKIP() << "no OpenCL device for the other half";
  UOpRef cl_buffer = engine::new_buffer(dtypes::float32, 1, "CL");
  const std::string message = kt::error_of([&] { engine::adopt_host_memory(*cl_buffer, &x, [] {}); });
  EXPECT_NE(message.find("device CL does not compute on host memory"), std::string::npos) << message;
}

// Tensor::from_blob (tinygrad's): memory at an address, read in place, never written or freed.
TEST(FromBlob, ReadsTheMemoryInPlaceAndNeverWritesIt) {
  std::vector<int16_t> data = {1, -2, 3, -4, 5, -6};
  Tensor t = Tensor::from_blob(data.data(), {2, 3}, dtypes::int16);
  EXPECT_EQ(t.dtype(), dtypes::int16);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.sum({1}).cast(dtypes::int32).to_vector<int32_t>(), (std::vector<int32_t>{1 - 2 + 3, -4 + 5 - 6}));
  data[0] = 100;  // in place: the next use sees the change
  EXPECT_EQ(t.max().item<int16_t>(), 100);
  t.assign(t * int16_t{2}).realize();
  EXPECT_EQ(t.to_vector<int16_t>(), (std::vector<int16_t>{200, -4, 6, -8, 10, -12}));
  EXPECT_EQ(data, (std::vector<int16_t>{100, -2, 3, -4, 5, -6}));
}

TEST(FromBlob, MisalignedEmptyAndBadArguments) {
  std::vector<unsigned char> bytes(1 + 3 * sizeof(float));
  const float values[3] = {1.5f, -2.25f, 1e30f};
  std::memcpy(bytes.data() + 1, values, sizeof values);  // an address no float may sit at: copied
  EXPECT_EQ(Tensor::from_blob(bytes.data() + 1, {3}).to_vector<float>(), (std::vector<float>{1.5f, -2.25f, 1e30f}));
  EXPECT_EQ(Tensor::from_blob(nullptr, {0, 4}).shape(), (Shape{0, 4}));
  std::string message = kt::error_of([] { Tensor::from_blob(nullptr, {2}); });
  EXPECT_NE(message.find("from_blob: null pointer for 2 elements of float32"), std::string::npos) << message;
  message = kt::error_of([&] { Tensor::from_blob(bytes.data(), {-1, 2}); });
  EXPECT_NE(message.find("from_blob: expected a shape of sizes >= 0, got (-1, 2)"), std::string::npos) << message;
}
