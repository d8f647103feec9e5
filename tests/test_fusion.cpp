// Fusion: how many kernels expressions become, seen two ways — `schedule().size()` before
// realizing, and GlobalCounters::kernel_count around realize() — plus the values, so a fusion that
// miscomputes is caught too. Also: the schedule is printable, and nothing runs twice.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kiln/counters.h"
#include "kiln/device.h"
#include "kiln/dtype.h"
#include "kiln/ir/pattern_matcher.h"
#include "kiln/nn/layers.h"
#include "kiln/nn/optim.h"
#include "kiln/schedule_item.h"
#include "kiln/tensor.h"
#include "engine/realize.h"
#include "reference.h"
#include "schedule/schedule.h"

namespace {

using kiln::GlobalCounters;
using kiln::Tensor;
using ref::NdArray;
using ref::Shape;
namespace dtypes = kiln::dtypes;

// Realizes `t` and returns how many kernels that launched.
int64_t kernels_run_by_realize(Tensor& t) {
  GlobalCounters::reset();
  t.realize();
  return GlobalCounters::kernel_count;
}

// Reads `t` back and returns how many kernels that launched (values into `out`).
int64_t kernels_run_by_readback(const Tensor& t, std::vector<float>& out) {
  GlobalCounters::reset();
  out = t.to_vector<float>();
  return GlobalCounters::kernel_count;
}

// A float32 input already in a device buffer, and its reference.
struct Input {
  NdArray ref;
  Tensor t;
};
Input input(const Shape& s, uint64_t seed) {
  NdArray r = kt::wrap(ref::random(s, seed), dtypes::float32);
  return {r, kt::make(r)};
}

std::string describe(const std::vector<kiln::ScheduleItem>& items) {
  std::string s;
  for (const auto& it : items) s += "  " + it.name + "\n";
  return s;
}

TEST(Fusion, ElementwiseChainWithBroadcastingIsOneKernel) {
  Input a = input({16, 1}, 1), b = input({1, 16}, 2), c = input({16, 16}, 3);
  Tensor out = (a.t * b.t + c.t).relu() * 2 - 1;
  auto items = out.schedule();
  EXPECT_EQ(items.size(), 1u) << describe(items);
  EXPECT_EQ(kernels_run_by_realize(out), 1);
  NdArray want = ref::map(ref::zip3(a.ref, b.ref, c.ref, [](double x, double y, double z) { return x * y + z; }),
                          [](double v) { return std::max(v, 0.0) * 2 - 1; });
  EXPECT_TRUE(kt::matches(out, want));
}

TEST(Fusion, ElementwiseReduceElementwiseIsOneKernel) {
  Input a = input({16, 16}, 4);
  Tensor out = ((a.t * 2).sum({1}) + 1).exp();
  auto items = out.schedule();
  EXPECT_EQ(items.size(), 1u) << describe(items);
  EXPECT_EQ(kernels_run_by_realize(out), 1);
  NdArray want = ref::map(ref::sum(ref::map(a.ref, [](double v) { return v * 2; }), {1}),
                          [](double v) { return std::exp(v + 1); });
  EXPECT_TRUE(kt::matches(out, want));
}

TEST(Fusion, MatmulIsOneKernel) {
  Input a = input({7, 13}, 5), b = input({13, 5}, 6);
  Tensor out = a.t.matmul(b.t);
  auto items = out.schedule();
  EXPECT_EQ(items.size(), 1u) << describe(items);
  EXPECT_EQ(kernels_run_by_realize(out), 1);
  EXPECT_TRUE(kt::matches(out, ref::matmul(a.ref, b.ref)));
}

TEST(Fusion, MovementViewsFuseIntoTheirConsumer) {
  Input a = input({7, 13}, 7), b = input({13, 7}, 8);
  Tensor out = (a.t.permute({1, 0}).flip({0}) + b.t).pad({{1, 0}, {0, 2}}).shrink({{0, 13}, {1, 9}}).exp();
  auto items = out.schedule();
  EXPECT_EQ(items.size(), 1u) << describe(items);
  EXPECT_EQ(kernels_run_by_realize(out), 1);
  NdArray sum = ref::zip(ref::flip(ref::permute(a.ref, {1, 0}), {0}), b.ref, [](double x, double y) { return x + y; });
  NdArray want =
      ref::map(ref::shrink(ref::pad(sum, {{1, 0}, {0, 2}}), {{0, 13}, {1, 9}}), [](double v) { return std::exp(v); });
  EXPECT_TRUE(kt::matches(out, want));
}

TEST(Fusion, ATensorUsedTwiceWithTheSameIndexingIsOneKernel) {
  Input a = input({13, 31}, 9);
  Tensor x = a.t * 2;
  Tensor out = x + x.exp();
  auto items = out.schedule();
  EXPECT_EQ(items.size(), 1u) << describe(items);
  EXPECT_EQ(kernels_run_by_realize(out), 1);
  EXPECT_TRUE(kt::matches(out, ref::map(a.ref, [](double v) { return 2 * v + std::exp(2 * v); })));
}

TEST(Fusion, ReshapeOfARealizedContiguousBufferIsZeroKernels) {
  Input a = input({4, 6}, 10);
  Tensor r = a.t.reshape({24});
  EXPECT_TRUE(r.schedule().empty()) << describe(r.schedule());
  std::vector<float> got;
  EXPECT_EQ(kernels_run_by_readback(r, got), 0);
  EXPECT_TRUE(ref::expect_close(got, ref::reshape(a.ref, {24})));
  // the same for a computed tensor once it is realized, and for reshapes that split and add 1s
  Tensor computed = (a.t + 1).realize();
  Tensor r2 = computed.reshape({2, 3, 1, 4});
  EXPECT_TRUE(r2.schedule().empty()) << describe(r2.schedule());
  EXPECT_EQ(kernels_run_by_readback(r2, got), 0);
  EXPECT_TRUE(ref::expect_close(got, ref::map(a.ref, [](double v) { return v + 1; })));
}

TEST(Fusion, IdenticalExpressionsShareTheirResult) {
  Input a = input({16, 16}, 11), b = input({16, 16}, 12);
  Tensor x1 = (a.t * b.t + 1).exp();
  Tensor x2 = (a.t * b.t + 1).exp();  // built separately, before either is realized
  EXPECT_EQ(x2.schedule().size(), 1u);
  EXPECT_EQ(kernels_run_by_realize(x1), 1);
  auto items = x2.schedule();
  EXPECT_TRUE(items.empty()) << "after realizing x1, x2 still schedules:\n" << describe(items);
  std::vector<float> v2;
  EXPECT_EQ(kernels_run_by_readback(x2, v2), 0);
  EXPECT_EQ(v2, x1.to_vector<float>());
  NdArray want = ref::map(ref::zip(a.ref, b.ref, [](double x, double y) { return x * y; }),
                          [](double v) { return std::exp(v + 1); });
  EXPECT_TRUE(ref::expect_close(v2, want));
}

// A reduction over short rows broadcast back along them runs inside its consumer's kernel, once
// per row, before the loop along the row, on devices without work-groups, as the CPU (on the
// others, OpenCL here, where a work-item per output would recompute it, it is stored).
size_t kernels_of_row_fusion(const Tensor& t) {
  return kiln::runtime::get_device(t.device()).max_local_size() == 0 ? 1 : 2;
}

TEST(Fusion, RowReductionBroadcastBackIsOneKernel) {
  Input a = input({13, 40}, 13);
  Tensor out = a.t - a.t.max({1}, true);
  auto items = out.schedule();
  EXPECT_EQ(items.size(), kernels_of_row_fusion(a.t)) << describe(items);
  EXPECT_EQ(kernels_run_by_realize(out), static_cast<int64_t>(kernels_of_row_fusion(a.t)));
  NdArray mx = ref::expand(ref::max(a.ref, {1}, true), a.ref.shape);
  EXPECT_TRUE(kt::matches(out, ref::zip(a.ref, mx, [](double x, double m) { return x - m; })));
}

// A column's reduction read inside the row loop would be recomputed for every row, one over
// rows longer than a cache holds would read them from memory twice, a scalar is one value and rows
// shorter than a few vectors (a 2x2 pool window) are cheaper to store: all are stored.
TEST(Fusion, ColumnLongRowScalarAndShortRowReductionsBroadcastBackAreTwoKernels) {
  Input a = input({13, 31}, 15);
  Tensor out = a.t - a.t.max({0}, true);
  auto items = out.schedule();
  EXPECT_EQ(items.size(), 2u) << describe(items);
  EXPECT_EQ(kernels_run_by_realize(out), 2);
  NdArray mx = ref::expand(ref::max(a.ref, {0}, true), a.ref.shape);
  EXPECT_TRUE(kt::matches(out, ref::zip(a.ref, mx, [](double x, double m) { return x - m; })));
  Input b = input({2, 20000}, 16);
  Tensor centered = b.t - b.t.sum({1}, true);
  EXPECT_EQ(centered.schedule().size(), 2u) << describe(centered.schedule());
  NdArray s = ref::expand(ref::sum(b.ref, {1}, true), b.ref.shape);
  EXPECT_TRUE(kt::matches(centered, ref::zip(b.ref, s, [](double x, double t) { return x - t; })));
  Tensor from_mean = a.t - a.t.mean();
  EXPECT_EQ(from_mean.schedule().size(), 2u) << describe(from_mean.schedule());
  Input c = input({13, 8}, 17);
  Tensor short_rows = c.t - c.t.max({1}, true);
  EXPECT_EQ(short_rows.schedule().size(), 2u) << describe(short_rows.schedule());
  NdArray cm = ref::expand(ref::max(c.ref, {1}, true), c.ref.shape);
  EXPECT_TRUE(kt::matches(short_rows, ref::zip(c.ref, cm, [](double x, double m) { return x - m; })));
}

TEST(Fusion, SoftmaxOverRowsIsOneKernelOnTheCpu) {
  Input a = input({13, 40}, 14);
  Tensor out = a.t.softmax(1);
  auto items = out.schedule();
  const bool fused = kernels_of_row_fusion(a.t) == 1;
  if (fused) EXPECT_EQ(items.size(), 1u) << describe(items);
  EXPECT_EQ(kernels_run_by_realize(out), static_cast<int64_t>(items.size()));
  EXPECT_TRUE(kt::matches(out, ref::softmax(a.ref, 1)));
  Tensor ls = a.t.log_softmax(1);
  if (fused) EXPECT_EQ(ls.schedule().size(), 1u) << describe(ls.schedule());
  EXPECT_TRUE(kt::matches(ls, ref::log_softmax(a.ref, 1)));
  Tensor cols = a.t.log_softmax(0);
  EXPECT_LE(cols.schedule().size(), 3u) << describe(cols.schedule());
}

// The gradient of a matmul's output z (stored, as training stores activations) through a long
// elementwise expression of z (four GELUs) is broadcast along k for both input gradients (dx sums it
// over the columns, dW over the rows). Read two ways, it is stored as it is, not as its broadcast:
// that buffer would hold k copies of every element, each written and read back.
TEST(Fusion, AGradientReadByTwoMatmulsIsStoredBeforeItsBroadcast) {
  const int64_t N = 32, K = 16, M = 64;
  Input x = input({N, K}, 31), w = input({M, K}, 32), r = input({N, M}, 33);
  x.t.requires_grad_();
  w.t.requires_grad_();
  Tensor y = x.t.matmul(w.t.transpose()).contiguous();
  for (int i = 0; i < 4; i++) y = y.gelu("tanh");
  std::vector<Tensor> g = (y * r.t).sum().gradient({x.t, w.t});
  auto items = kiln::schedule::schedule_items(kiln::engine::schedule({g[0].uop(), g[1].uop()}).linear);
  for (const kiln::ScheduleItem& it : items)
    EXPECT_LE(it.buffers[0]->arg_as<kiln::BufferArg>().size, N * M) << it.name << " stores a broadcast\n"
                                                                      << describe(items);
  // float64 reference: z = x W^T, dz = r times gelu' at each GELU's input, dx = dz W, dW = dz^T x, where
  // with t = tanh(c (z + 0.044715 z^3)), gelu(z) = z (1 + t) / 2, gelu'(z) = (1 + t) / 2 + z (1 - t^2) c (1 + 3 0.044715 z^2) / 2
  const double c = std::sqrt(2 / M_PI);
  auto t = [c](double z) { return std::tanh(c * (z + 0.044715 * z * z * z)); };
  auto slope = [c, t](double z) { return (1 + t(z)) / 2 + z * (1 - t(z) * t(z)) * c * (1 + 3 * 0.044715 * z * z) / 2; };
  NdArray dz = ref::zip(ref::matmul(x.ref, ref::transpose(w.ref)), r.ref, [&](double z, double dy) {
    for (int i = 0; i < 4; i++) dy *= slope(z), z = z * (1 + t(z)) / 2;
    return dy;
  });
  EXPECT_TRUE(kt::matches(g[0], ref::matmul(dz, w.ref)));
  EXPECT_TRUE(kt::matches(g[1], ref::matmul(ref::transpose(dz), x.ref)));
}

TEST(Fusion, CreationFromHostValuesSchedulesNothing) {
  Tensor v(std::vector<float>{1, 2, 3});
  EXPECT_TRUE(v.schedule().empty()) << describe(v.schedule());
  Tensor f = Tensor::from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_TRUE(f.schedule().empty()) << describe(f.schedule());
  Tensor b = Tensor::from_vector<bool>({true, false}, {2});
  EXPECT_TRUE(b.schedule().empty()) << describe(b.schedule());
  Tensor s = Tensor::from_vector<double>({2.5}, {});
  EXPECT_TRUE(s.schedule().empty()) << describe(s.schedule());
  std::vector<float> got;
  EXPECT_EQ(kernels_run_by_readback(v, got), 0);
  EXPECT_EQ(got, (std::vector<float>{1, 2, 3}));
  GlobalCounters::reset();
  EXPECT_EQ(f.to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(GlobalCounters::kernel_count, 0);
}

TEST(Fusion, ARealizedTensorSchedulesNothing) {
  Input a = input({7, 13}, 15);
  Tensor out = (a.t * 3).sum({0});
  out.realize();
  EXPECT_TRUE(out.schedule().empty()) << describe(out.schedule());
  std::vector<float> got;
  EXPECT_EQ(kernels_run_by_readback(out, got), 0);
  EXPECT_TRUE(ref::expect_close(got, ref::sum(ref::map(a.ref, [](double v) { return v * 3; }), {0})));
}

TEST(Fusion, RealizingTwiceRunsNothingTheSecondTime) {
  Input a = input({7, 13}, 16);
  Tensor out = (a.t + 1).sqrt().sum({1});
  EXPECT_EQ(kernels_run_by_realize(out), 1);
  EXPECT_EQ(kernels_run_by_realize(out), 0);
  std::vector<float> got;
  EXPECT_EQ(kernels_run_by_readback(out, got), 0);
  EXPECT_EQ(kernels_run_by_readback(out, got), 0);
}

TEST(Fusion, ScheduleDoesNotRunAnything) {
  Input a = input({7, 13}, 17);
  Tensor out = (a.t * a.t).sum({1});
  GlobalCounters::reset();
  auto first = out.schedule();
  auto second = out.schedule();
  EXPECT_EQ(GlobalCounters::kernel_count, 0);
  EXPECT_EQ(first.size(), 1u);
  EXPECT_EQ(second.size(), first.size());
  EXPECT_EQ(kernels_run_by_realize(out), 1);
}

TEST(Fusion, ContiguousForcesItsOwnKernel) {
  Input a = input({7, 13}, 18);
  Tensor out = (a.t + 1).contiguous() * 2;
  auto items = out.schedule();
  EXPECT_EQ(items.size(), 2u) << describe(items);
  EXPECT_EQ(kernels_run_by_realize(out), 2);
  EXPECT_TRUE(kt::matches(out, ref::map(a.ref, [](double v) { return (v + 1) * 2; })));
}

TEST(Fusion, OutputsReadingEachOtherAsIsShareOneKernel) {
  // x and y are both realized; y reads x element for element: one kernel stores both
  Input a = input({9, 11}, 20), b = input({9, 11}, 21);
  Tensor x = a.t + 1, y = x * b.t;
  GlobalCounters::reset();
  Tensor::realize({x, y});
  EXPECT_EQ(GlobalCounters::kernel_count, 1);
  EXPECT_TRUE(kt::matches(x, ref::map(a.ref, [](double v) { return v + 1; })));
  EXPECT_TRUE(kt::matches(y, ref::zip(a.ref, b.ref, [](double u, double v) { return (u + 1) * v; })));
}

TEST(Fusion, AdamUpdatesEachParameterInOneKernel) {
  // m, v and the parameter itself in one kernel per parameter, plus the two b^t scalars
  kiln::nn::Linear layer(6, 4);
  Tensor x = Tensor::randn({5, 6});
  kiln::nn::optim::Adam opt({layer.weight, *layer.bias}, 1e-2);
  layer(x).square().sum().backward();
  Tensor::realize({*layer.weight.grad(), *layer.bias->grad()});
  GlobalCounters::reset();
  Tensor::realize(opt.schedule_step());
  EXPECT_EQ(GlobalCounters::kernel_count, 2 + 2);
}

TEST(Fusion, CountersMeasureWork) {
  Input a = input({64, 64}, 19);
  Tensor out = (a.t * 2 + 1).sum();
  GlobalCounters::reset();
  out.realize();
  EXPECT_EQ(GlobalCounters::kernel_count, 1);
  EXPECT_GT(GlobalCounters::global_ops, 0);
  EXPECT_GE(GlobalCounters::global_mem, 64 * 64 * 4);  // it read the whole input at least once
  EXPECT_GT(GlobalCounters::mem_used, 0);
}

TEST(Schedule, ItemsArePrintable) {
  Input a = input({13, 31}, 20);
  Tensor out = a.t.softmax(1);
  auto items = out.schedule();
  ASSERT_FALSE(items.empty());
  for (const kiln::ScheduleItem& it : items) {
    SCOPED_TRACE("kernel " + it.name);
    EXPECT_FALSE(it.name.empty());
    ASSERT_TRUE(it.ast);
    EXPECT_FALSE(it.buffers.empty());
    for (const kiln::UOpRef& buf : it.buffers) {
      ASSERT_TRUE(buf);
      EXPECT_EQ(buf->op, kiln::Ops::BUFFER);
    }
    std::string s = it.str();
    EXPECT_FALSE(s.empty());
    EXPECT_NE(s.find("STORE"), std::string::npos) << s;
    EXPECT_NE(s.find(it.name), std::string::npos) << s;
    EXPECT_NE(kiln::print_graph(it.ast).find("STORE"), std::string::npos);
  }
  // kernel names follow tinygrad: "r_" when the kernel reduces, "E_" for purely elementwise
  auto ew = (a.t + 1).schedule();
  ASSERT_EQ(ew.size(), 1u);
  EXPECT_EQ(ew[0].name.rfind("E_", 0), 0u) << ew[0].name;
  auto red = a.t.sum({1}).schedule();
  ASSERT_EQ(red.size(), 1u);
  EXPECT_EQ(red[0].name.rfind("r_", 0), 0u) << red[0].name;
}

}  // namespace
