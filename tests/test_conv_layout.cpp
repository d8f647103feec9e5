// Convolution layout (schedule/conv_layout.cpp): the tensor graph of a convolution is the same on
// every device; the scheduler, reading the device's Target, runs a deep convolution with wide output
// rows over channels-last copies where the device has 16 vector registers (AVX2) and in the NCHW
// layout where it has none (GPUs) or 32 (AVX-512); forward and gradients match naive float64 loops
// on either kind of device.
#include <gtest/gtest.h>
#include <kiln/device.h>
#include <kiln/kiln.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "kiln/ir/pattern_matcher.h"
#include "reference.h"
#include "scalar_device.h"
#include "schedule/schedule.h"
#include "support/env.h"

namespace {

using namespace kiln;
using namespace kiln::runtime;

const std::string& scalar_device() {
  static const std::string name = kt::register_scalar_device("SCALARCONV");
  return name;
}

using kt::without_buffers;

Tensor on(const std::string& device, const ref::NdArray& a, DType dtype = dtypes::float32) {
  env::ScopedEnv dev("DEV", device);
  return kt::make(a, dtype);
}

struct Case {
  ref::Shape x, w;
  int stride, padding;
};
// 16 or more channels, output rows of 16 or more: channels-last copies on AVX2 only
const std::vector<Case> kDeep = {{{2, 32, 18, 18}, {32, 32, 3, 3}, 1, 0},
                                 {{2, 16, 16, 16}, {24, 16, 3, 3}, 1, 1},
                                 {{1, 16, 33, 33}, {16, 16, 3, 3}, 2, 1},
                                 {{2, 16, 20}, {16, 16, 3}, 1, 0}};

// A loss whose gradients reach the convolution's input and weight through its backward
// convolutions: sum(conv(x, w) * s).
Tensor loss_of(const Tensor& x, const Tensor& w, const Tensor& s, const Case& c) {
  return (x.conv2d(w, std::nullopt, c.stride, c.padding) * s).sum();
}

ref::Shape out_shape(const Case& c) {
  ref::Shape out{c.x[0], c.w[0]};
  for (size_t i = 2; i < c.x.size(); i++) out.push_back((c.x[i] + 2 * c.padding - c.w[i]) / c.stride + 1);
  return out;
}

TEST(ConvLayout, TensorGraphIsTheSameOnEveryDevice) {
  for (const Case& c : kDeep)
    for (DType dtype : {dtypes::float32, dtypes::float16}) {
      SCOPED_TRACE(ref::shape_str(c.x) + " * " + ref::shape_str(c.w) + " " + std::string(dtype.name()));
      ref::NdArray x = ref::random(c.x, 1), w = ref::random(c.w, 2), sc = ref::random(out_shape(c), 3);
      Tensor xc = on("CPU", x, dtype).requires_grad_(), wc = on("CPU", w, dtype).requires_grad_();
      Tensor xs = on(scalar_device(), x, dtype).requires_grad_(), ws = on(scalar_device(), w, dtype).requires_grad_();
      Tensor cpu = loss_of(xc, wc, on("CPU", sc, dtype), c);
      Tensor scalar = loss_of(xs, ws, on(scalar_device(), sc, dtype), c);
      EXPECT_EQ(scalar.device(), scalar_device());
      std::vector<Tensor> cpu_grads = cpu.gradient({xc, wc}), scalar_grads = scalar.gradient({xs, ws});
      for (size_t i = 0; i < 2; i++)
        EXPECT_EQ(without_buffers(cpu_grads[i]).get(), without_buffers(scalar_grads[i]).get())
            << "gradient " << i << "\nCPU:\n"
            << print_graph(without_buffers(cpu_grads[i])) << "\n"
            << scalar_device() << ":\n"
            << print_graph(without_buffers(scalar_grads[i]));
    }
}

// Calls fn(x index, w index, out index) (flat, row-major) for each product a convolution of stride
// s and padding p sums: out[n, co, o...] += x[n, ci, o*s + k - p...] * w[co, ci, k...] (1 or 2
// spatial axes; taps in the padding are left out).
template <class F>
void for_each_tap(const Case& c, F fn) {
  const bool two_d = c.x.size() == 4;
  const ref::Shape out = out_shape(c);
  const int64_t bs = c.x[0], cin = c.x[1], cout = c.w[0], s = c.stride, p = c.padding;
  const int64_t h = two_d ? c.x[2] : 1, wd = c.x.back(), kh = two_d ? c.w[2] : 1, kw = c.w.back();
  const int64_t oh = two_d ? out[2] : 1, ow = out.back(), ph = two_d ? p : 0;
  for (int64_t n = 0; n < bs; n++)
    for (int64_t co = 0; co < cout; co++)
      for (int64_t i = 0; i < oh; i++)
        for (int64_t j = 0; j < ow; j++)
          for (int64_t ci = 0; ci < cin; ci++)
            for (int64_t a = 0; a < kh; a++)
              for (int64_t b = 0; b < kw; b++) {
                const int64_t y = i * s + a - ph, z = j * s + b - p;
                if (y < 0 || y >= h || z < 0 || z >= wd) continue;
                fn(((n * cin + ci) * h + y) * wd + z, ((co * cin + ci) * kh + a) * kw + b,
                   ((n * cout + co) * oh + i) * ow + j);
              }
}

TEST(ConvLayout, ForwardAndGradientsMatchOnEveryDevice) {
  // float32 sums of up to a few hundred products of values in [-1, 1), in any order: within 1e-4
  // relative of float64, the absolute part for sums near zero
  const kt::Tol tol{1e-4, 1e-4};
  for (const Case& c : kDeep) {
    ref::NdArray x = ref::random(c.x, 4), w = ref::random(c.w, 5), sc = ref::random(out_shape(c), 6);
    // float64 references: the conv, and the gradients of sum(conv * s): dx += s * w, dw += s * x per tap
    ref::NdArray out(out_shape(c)), dx(c.x), dw(c.w);
    for_each_tap(c, [&](int64_t xi, int64_t wi, int64_t oi) {
      out.data[oi] += x.data[xi] * w.data[wi];
      dx.data[xi] += sc.data[oi] * w.data[wi];
      dw.data[wi] += sc.data[oi] * x.data[xi];
    });
    for (const std::string& device : {std::string("CPU"), scalar_device()}) {
      SCOPED_TRACE(device + " " + ref::shape_str(c.x) + " * " + ref::shape_str(c.w));
      Tensor xt = on(device, x).requires_grad_(), wt = on(device, w).requires_grad_();
      EXPECT_TRUE(kt::matches(xt.conv2d(wt, std::nullopt, c.stride, c.padding), out, tol));
      std::vector<Tensor> grads = loss_of(xt, wt, on(device, sc), c).gradient({xt, wt});
      EXPECT_TRUE(kt::matches(grads[0], dx, tol));
      EXPECT_TRUE(kt::matches(grads[1], dw, tol));
    }
  }
}

// The kernel names of the schedule of `ts` for a device of the given Target.
std::vector<std::string> kernels_for(const std::vector<Tensor>& ts, schedule::Target target) {
  std::vector<UOpRef> roots;
  for (const Tensor& t : ts) roots.push_back(t.uop());
  const schedule::Schedule s = schedule::build_schedule(roots, "CPU", [&](const std::string&) { return target; });
  std::vector<std::string> names;
  for (const ScheduleItem& item : schedule::schedule_items(s.linear)) names.push_back(item.name);
  return names;
}

const schedule::Target kNoVectors{.loops_in_order = true, .vector_bytes = 0, .vector_registers = 16};
const schedule::Target kAvx2{.loops_in_order = true, .vector_bytes = 32, .vector_registers = 16};
const schedule::Target kAvx512{.loops_in_order = true, .vector_bytes = 64, .vector_registers = 32};

using Names = std::vector<std::string>;

TEST(ConvLayout, WideRowsRunChannelsLastWithSixteenVectorRegistersOnly) {
  Tensor x = Tensor::randn({2, 32, 18, 18}).realize(), w = Tensor::randn({32, 32, 3, 3}).realize();
  Tensor out = x.conv2d(w);
  // copies of input and weight, the conv, the NCHW copy of its channels-last result
  EXPECT_EQ(kernels_for({out}, kAvx2).size(), 4u);
  EXPECT_EQ(kernels_for({out}, kNoVectors), (Names{"r_2_32_16_16_32_3_3"}));
  EXPECT_EQ(kernels_for({out}, kAvx512), (Names{"r_2_32_16_16_32_3_3"}));
  // padded: the NCHW form stores its input padded, then convolves
  Tensor padded = x.conv2d(w, std::nullopt, 1, 1);
  EXPECT_EQ(kernels_for({padded}, kNoVectors), (Names{"E_2_32_20_20", "r_2_32_18_18_32_3_3"}));
  // with its weight gradient (a training step): the gradient's channels-last copy of the padded
  // input copies the stored padded input, not a channels-last copy of the input (E_2_18_18_32)
  Tensor wg = Tensor::randn({24, 32, 3, 3}).realize().requires_grad_();
  Tensor trained = x.conv2d(wg, std::nullopt, 1, 1);
  const Tensor dw = (trained * trained).sum().gradient({wg})[0];
  const Names step = kernels_for({trained, dw}, kNoVectors);
  EXPECT_EQ(std::count(step.begin(), step.end(), "E_2_32_20_20"), 1) << testing::PrintToString(step);
  EXPECT_EQ(std::count(step.begin(), step.end(), "E_2_18_18_32"), 0) << testing::PrintToString(step);
  // narrow rows (6) fill no vector in the NCHW layout: channels-last everywhere
  Tensor narrow = Tensor::randn({2, 32, 8, 8}).realize().conv2d(w);
  EXPECT_EQ(kernels_for({narrow}, kNoVectors), kernels_for({narrow}, kAvx2));
}

TEST(ConvLayout, DebugNamesWhatWasDone) {
  Tensor x = Tensor::randn({2, 32, 18, 18}).realize(), w = Tensor::randn({32, 32, 3, 3}).realize();
  env::ScopedEnv debug("DEBUG", "3");
  testing::internal::CaptureStderr();
  kernels_for({x.conv2d(w)}, kNoVectors);
  const std::string log = testing::internal::GetCapturedStderr();
  const std::string note = "conv (2, 32, 18, 18) * (32, 32, 3, 3): NCHW layout, channels-last copies dropped";
  EXPECT_NE(log.find(note), std::string::npos) << log;
}

}  // namespace
