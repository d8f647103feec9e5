// Copies between devices (Tensor::to): round trips of every dtype and of views, computation on the
// copy compared with the CPU's, COPY steps in schedule(), the mixed-device error, gradients flowing
// back through a copy, TinyJit replays of a copy, and the memory planner releasing copies. Needs the
// CL device (OpenCL on PoCL here): skipped without it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/buffers.h"
#include "engine/dispatch_cache.h"
#include "engine/kernel_cache.h"
#include "error_message.h"
#include "kiln/kiln.h"
#include "runtime/device.h"
#include "schedule/schedule.h"

namespace {

using kiln::GlobalCounters;
using kiln::Shape;
using kiln::Tensor;
using kiln::TinyJit;

bool has_cl() {
  std::vector<std::string> names = kiln::runtime::device_names();
  return std::find(names.begin(), names.end(), "CL") != names.end();
}

#define SKIP_WITHOUT_CL() \
  if (!has_cl()) GTEST_SKIP() << "no CL device (kiln built without OpenCL, or the ICD loader finds none)"

// n values of T that use the type's whole width: sign, high bits, fractions below float precision.
template <class T>
std::vector<T> pattern(size_t n) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; i++) {
    if constexpr (std::is_same_v<T, bool>) v[i] = i % 3 == 0;
    else if constexpr (std::is_floating_point_v<T>) v[i] = static_cast<T>(std::sin(0.7 * i) * 1000.0 + 1e-9 * i);
    else v[i] = static_cast<T>(static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull);  // wraps: every bit in use
  }
  return v;
}

template <class T>
void expect_round_trip(const Shape& shape) {
  const std::string dtype = kiln::dtype_of<T>().name();
  std::vector<T> values = pattern<T>(static_cast<size_t>(kiln::prod(shape)));
  Tensor x = Tensor::from_vector<T>(values, shape);
  Tensor on_cl = x.to("CL");
  EXPECT_EQ(on_cl.device(), "CL") << dtype;
  EXPECT_EQ(on_cl.shape(), shape) << dtype;
  EXPECT_EQ(on_cl.dtype(), x.dtype()) << dtype;
  Tensor back = on_cl.to("CPU");
  EXPECT_EQ(back.device(), "CPU") << dtype;
  EXPECT_EQ(back.to_vector<T>(), values) << dtype << " " << kiln::shape_to_string(shape);
  EXPECT_EQ(on_cl.to_vector<T>(), values) << dtype << " read from CL";
}

class Copy : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_CL();
    if (kiln::engine::default_device() != "CPU") GTEST_SKIP() << "these tests create tensors on CPU: run without DEV";
  }
};

TEST_F(Copy, RoundTripsEveryDtypeAndOddShapes) {
  for (const Shape& shape : {Shape{1}, Shape{7}, Shape{3, 5, 7}, Shape{1, 1031}}) {
    expect_round_trip<bool>(shape);
    expect_round_trip<int8_t>(shape);
    expect_round_trip<uint8_t>(shape);
    expect_round_trip<int16_t>(shape);
    expect_round_trip<uint16_t>(shape);
    expect_round_trip<int32_t>(shape);
    expect_round_trip<uint32_t>(shape);
    expect_round_trip<int64_t>(shape);
    expect_round_trip<uint64_t>(shape);
    expect_round_trip<float>(shape);
    expect_round_trip<double>(shape);
  }
}

TEST_F(Copy, EmptyTensorsAndSameDeviceCopies) {
  Tensor empty = Tensor::from_vector<float>({}, {0, 3}).to("CL");
  EXPECT_EQ(empty.device(), "CL");
  EXPECT_TRUE(empty.to_vector<float>().empty());
  Tensor x = Tensor::from_vector<float>({1, 2, 3}, {3});
  EXPECT_EQ(x.to("cpu").uop(), x.uop()) << "a copy to the tensor's own device is the tensor";
  Tensor on_cl = x.to("cl:0");
  EXPECT_EQ(on_cl.device(), "CL") << "device names are canonical";
  EXPECT_EQ(on_cl.to("CL").uop(), on_cl.uop());
}

TEST_F(Copy, ViewsAreCopiedAsTheirElements) {
  const int64_t a = 4, b = 5, c = 6;
  std::vector<int32_t> values(a * b * c);
  for (size_t i = 0; i < values.size(); i++) values[i] = static_cast<int32_t>(i * 7 - 50);
  Tensor x = Tensor::from_vector<int32_t>(values, {a, b, c});
  // permuted: (c, a, b)
  std::vector<int32_t> want;
  for (int64_t k = 0; k < c; k++)
    for (int64_t i = 0; i < a; i++)
      for (int64_t j = 0; j < b; j++) want.push_back(values[(i * b + j) * c + k]);
  Tensor permuted = x.permute({2, 0, 1}).to("CL");
  EXPECT_EQ(permuted.shape(), (Shape{c, a, b}));
  EXPECT_EQ(permuted.to_vector<int32_t>(), want);
  // sliced and flipped: x[1:3, ::-1, 2:5]
  want.clear();
  for (int64_t i = 1; i < 3; i++)
    for (int64_t j = b - 1; j >= 0; j--)
      for (int64_t k = 2; k < 5; k++) want.push_back(values[(i * b + j) * c + k]);
  Tensor sliced = x.shrink({{1, 3}, {0, b}, {2, 5}}).flip({1}).to("CL");
  EXPECT_EQ(sliced.to_vector<int32_t>(), want);
  // and back: a view of a CL tensor copied to CPU
  EXPECT_EQ(x.to("CL").shrink({{1, 3}, {0, b}, {2, 5}}).flip({1}).to("CPU").to_vector<int32_t>(), want);
  // a tensor made of constants only
  EXPECT_EQ(Tensor::full({2, 3}, 2.5).to("CL").to_vector<float>(), std::vector<float>(6, 2.5f));
}

TEST_F(Copy, ComputationOnClMatchesCpuAndAFloat64Reference) {
  const int64_t rows = 33, cols = 65;
  std::vector<float> values = pattern<float>(rows * cols);
  for (float& v : values) v /= 1000.0f;  // in [-1, 1]
  Tensor x = Tensor::from_vector<float>(values, {rows, cols});
  auto f = [](const Tensor& t) { return ((t * 2.0f + 1.0f).exp() * t).sum(1); };
  Tensor on_cl = f(x.to("CL"));
  EXPECT_EQ(on_cl.device(), "CL");
  std::vector<float> cl = on_cl.to_vector<float>(), cpu = f(x).to_vector<float>();
  ASSERT_EQ(cl.size(), static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; r++) {
    double want = 0;
    for (int64_t k = 0; k < cols; k++) {
      double v = values[r * cols + k];
      want += std::exp(v * 2 + 1) * v;
    }
    // float32 sums of 65 terms of magnitude <= e^3: relative error well under 1e-5 of the largest term
    const double tol = 1e-5 * cols * std::exp(3.0);
    EXPECT_NEAR(cl[r], want, tol) << "row " << r;
    EXPECT_NEAR(cl[r], cpu[r], tol) << "row " << r;
  }
}

TEST_F(Copy, MatmulOnClMatchesAFloat64Reference) {
  const int64_t n = 17, k = 29, m = 13;
  std::vector<float> a = pattern<float>(n * k), b = pattern<float>(k * m);
  for (float& v : a) v /= 1000.0f;
  for (float& v : b) v /= 500.0f;
  Tensor product = Tensor::from_vector<float>(a, {n, k}).to("CL").matmul(Tensor::from_vector<float>(b, {k, m}).to("CL"));
  EXPECT_EQ(product.device(), "CL");
  std::vector<float> got = product.to("CPU").to_vector<float>();
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < m; j++) {
      double want = 0;
      for (int64_t p = 0; p < k; p++) want += double(a[i * k + p]) * b[p * m + j];
      EXPECT_NEAR(got[i * m + j], want, 1e-5 * k * 2) << i << "," << j;  // float32 sums of k terms of magnitude <= 2
    }
}

TEST_F(Copy, ScheduleShowsCopyStepsAndKernelsStayOnOneDevice) {
  Tensor x = Tensor::from_vector<float>(pattern<float>(1024), {32, 32});
  std::vector<kiln::ScheduleItem> items = (x.to("CL") * 2.0f).schedule();
  ASSERT_EQ(items.size(), 2u);
  EXPECT_TRUE(items[0].is_copy());
  EXPECT_EQ(items[0].name, "copy 4096, CL <- CPU");
  ASSERT_EQ(items[0].buffers.size(), 2u);
  EXPECT_EQ(items[0].buffers[0]->arg_as<kiln::BufferArg>().device, "CL");
  EXPECT_EQ(items[0].buffers[1]->arg_as<kiln::BufferArg>().device, "CPU");
  EXPECT_NE(items[0].str().find("0:float32[1024]@CL 1:float32[1024]@CPU"), std::string::npos) << items[0].str();
  EXPECT_FALSE(items[1].is_copy());
  for (const kiln::UOpRef& b : items[1].buffers) EXPECT_EQ(b->arg_as<kiln::BufferArg>().device, "CL");
  // A permuted view is made contiguous on its own device before the copy; the result comes back.
  items = (x.permute({1, 0}).to("CL") + 1.0f).to("CPU").schedule();
  std::vector<std::string> kinds;
  for (const kiln::ScheduleItem& item : items) {
    kinds.push_back(item.is_copy() ? item.name : "kernel");
    if (item.is_copy()) continue;
    for (const kiln::UOpRef& b : item.buffers)
      EXPECT_EQ(b->arg_as<kiln::BufferArg>().device, item.buffers[0]->arg_as<kiln::BufferArg>().device) << item.str();
  }
  EXPECT_EQ(kinds, (std::vector<std::string>{"kernel", "copy 4096, CL <- CPU", "kernel", "copy 4096, CPU <- CL"}));
}

TEST_F(Copy, MixedDevicesAreAnErrorNamingTheOpAndDevices) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3}, {3});
  std::string msg = kt::error_of([&] { (x + x.to("CL")).realize(); });
  EXPECT_NE(msg.find("ADD"), std::string::npos) << msg;
  EXPECT_NE(msg.find("CPU and CL"), std::string::npos) << msg;
  msg = kt::error_of([&] { (x.to("CL") * x).sum().realize(); });
  EXPECT_NE(msg.find("MUL"), std::string::npos) << msg;
  EXPECT_NE(msg.find("CL and CPU"), std::string::npos) << msg;
  Tensor w = Tensor::from_vector<float>({0, 0, 0}, {3});
  msg = kt::error_of([&] { w.assign(x.to("CL")); });
  EXPECT_NE(msg.find("assign: expected a value on CPU, got one on CL"), std::string::npos) << msg;
  msg = kt::error_of([&] { x.to("NO_SUCH_DEVICE"); });
  EXPECT_NE(msg.find("NO_SUCH_DEVICE"), std::string::npos) << msg;
  // asking for the copy makes it work
  EXPECT_EQ((x + x.to("CL").to("CPU")).to_vector<float>(), (std::vector<float>{2, 4, 6}));
}

TEST_F(Copy, OneRealizeRunsKernelsOnBothDevices) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {4});
  Tensor half = Tensor::ones({4}) * 0.5f;  // constants only: computed on whichever device reads them
  Tensor on_cpu = x * 2.0f + half, on_cl = x.to("CL") * 3.0f + half;
  Tensor::realize({on_cpu, on_cl});
  EXPECT_EQ(on_cpu.device(), "CPU");
  EXPECT_EQ(on_cl.device(), "CL");
  EXPECT_EQ(on_cpu.to_vector<float>(), (std::vector<float>{2.5f, 4.5f, 6.5f, 8.5f}));
  EXPECT_EQ(on_cl.to_vector<float>(), (std::vector<float>{3.5f, 6.5f, 9.5f, 12.5f}));
  EXPECT_EQ(half.to("CL").to_vector<float>(), std::vector<float>(4, 0.5f));
}

TEST_F(Copy, GradientsFlowBackToTheSourceDevice) {
  std::vector<float> w_values = {0.5f, -1.0f, 2.0f, 3.0f}, c_values = {1.0f, 2.0f, -3.0f, 0.25f};
  Tensor w = Tensor::from_vector<float>(w_values, {4}).requires_grad_();
  Tensor c = Tensor::from_vector<float>(c_values, {4}).to("CL");
  // loss = sum(c * w^2) on CL: d/dw = 2 c w, on CPU
  Tensor loss = (w.to("CL") * w.to("CL") * c).sum();
  EXPECT_EQ(loss.device(), "CL");
  loss.backward();
  ASSERT_TRUE(w.grad().has_value());
  EXPECT_EQ(w.grad()->device(), "CPU");
  std::vector<float> g = w.grad()->to_vector<float>();
  for (size_t i = 0; i < g.size(); i++) EXPECT_FLOAT_EQ(g[i], 2.0f * c_values[i] * w_values[i]) << i;
  // a round trip CPU -> CL -> CPU: the gradient passes through both copies
  Tensor v = Tensor::from_vector<float>(w_values, {4}).requires_grad_();
  Tensor y = (v.to("CL").exp().to("CPU") * 3.0f).sum();
  std::vector<Tensor> grads = y.gradient({v});
  EXPECT_EQ(grads[0].device(), "CPU");
  std::vector<float> gv = grads[0].to_vector<float>();
  for (size_t i = 0; i < gv.size(); i++) EXPECT_NEAR(gv[i], 3.0 * std::exp(double(w_values[i])), 1e-5 * 3 * std::exp(3.0)) << i;
}

TEST_F(Copy, JitReplaysCopies) {
  auto f = [](const Tensor& x) { return ((x.to("CL") * 2.0f + 1.0f).relu().to("CPU") * x).sum(); };
  TinyJit jit(f);
  for (int call = 0; call < 5; call++) {
    std::vector<float> values = pattern<float>(777);
    for (float& v : values) v = v / 1000.0f + static_cast<float>(call) * 0.1f;
    Tensor x = Tensor::from_vector<float>(values, {777});
    const float want = f(x).item<float>();
    const int64_t schedules = kiln::engine::engine_stats().schedules.load();
    Tensor got = jit(x);
    EXPECT_EQ(got.device(), "CPU");
    EXPECT_EQ(got.item<float>(), want) << "call " << call;
    double reference = 0;
    for (float v : values) reference += std::max(0.0, 2.0 * v + 1.0) * v;
    EXPECT_NEAR(got.item<float>(), reference, 1e-4 * 777) << "call " << call;
    if (call >= 2) EXPECT_EQ(kiln::engine::engine_stats().schedules.load(), schedules) << "a replay schedules nothing";
  }
  EXPECT_EQ(jit.captured_kernels(), 2u) << "the CL kernel and the CPU sum; the two copies are not kernels";
}

TEST_F(Copy, MemoryPlannerReleasesCopiedIntermediates) {
  constexpr int64_t kN = 1 << 20;  // 4 MB of float32
  Tensor x = Tensor::ones({kN}).contiguous().realize();
  // CPU kernel -> 4 MB intermediate -> copy to a 4 MB CL intermediate -> CL sum
  Tensor total = ((x * 1.5f).to("CL") * 2.0f).sum();
  const int64_t before = GlobalCounters::mem_used;
  total.realize();
  EXPECT_LE(GlobalCounters::mem_used - before, 4096) << "both intermediates were released; only the sum remains";
  EXPECT_FLOAT_EQ(total.item<float>(), 3.0f * kN);
  // a copy a live tensor still holds keeps its buffer and its value
  Tensor on_cl = (x * 1.5f).to("CL");
  Tensor doubled = on_cl * 2.0f;
  const int64_t before_held = GlobalCounters::mem_used;
  doubled.realize();
  EXPECT_GE(GlobalCounters::mem_used - before_held, 2 * 4 * kN) << "the copy and the result are held";
  EXPECT_EQ(on_cl.to_vector<float>()[kN - 1], 1.5f);
}

TEST_F(Copy, ScheduleCacheReusesSchedulesWithCopies) {
  auto f = [](const Tensor& x) { return (x.to("CL") - 1.0f).to("CPU"); };
  std::vector<float> a = {1, 2, 3}, b = {10, 20, 30};
  EXPECT_EQ(f(Tensor::from_vector<float>(a, {3})).to_vector<float>(), (std::vector<float>{0, 1, 2}));
  // the dispatch cache (realize's fast path) answers before the schedule cache is asked
  auto reused = [] { return kiln::schedule::schedule_cache_hits() + kiln::engine::dispatch_cache_hits(); };
  const int64_t hits = reused();
  EXPECT_EQ(f(Tensor::from_vector<float>(b, {3})).to_vector<float>(), (std::vector<float>{9, 19, 29}));
  EXPECT_GT(reused(), hits);
}

TEST_F(Copy, ToInPlaceMovesEveryHandleAndTheGradient) {
  std::vector<float> values = {1.0f, -2.0f, 3.0f};
  Tensor w = Tensor::from_vector<float>(values, {3}).requires_grad_();
  Tensor alias = w;  // another handle of the same tensor, as an optimizer holds its parameters
  (w * w).sum().backward();
  EXPECT_EQ(&w.to_("CL"), &w);
  EXPECT_EQ(alias.device(), "CL");
  ASSERT_TRUE(alias.grad().has_value());
  EXPECT_EQ(alias.grad()->device(), "CL");
  EXPECT_EQ(alias.to_vector<float>(), values);
  std::vector<float> g = alias.grad()->to_vector<float>();
  for (size_t i = 0; i < g.size(); i++) EXPECT_FLOAT_EQ(g[i], 2.0f * values[i]) << i;  // d sum(w^2) / dw
  EXPECT_NE(kt::error_of([&] { w.to_("NO_SUCH_DEVICE"); }).find("NO_SUCH_DEVICE"), std::string::npos);
  EXPECT_EQ(w.device(), "CL") << "a failed move leaves the tensor where it was";
  // ops now run on the new device with no copy asked for
  EXPECT_EQ((w + Tensor::from_vector<float>(values, {3}).to("CL")).to_vector<float>(), (std::vector<float>{2, -4, 6}));
}

}  // namespace
