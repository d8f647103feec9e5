// Host memory lent to kiln (what the Python package does with NumPy arrays): kernels read it in
// place, nothing writes it, and it is given back exactly once, when the last graph using it is done.
#include <gtest/gtest.h>

#include <algorithm>
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
