// Regressions of the random op-graph fuzzer (test_fuzz_graphs.cpp): the smallest programs its
// failures reduced to, kept so each stays fixed whatever seeds the random tests run. Each is
// compared with the double-precision reference in reference.h.
#include <gtest/gtest.h>

#include "kiln/dtype.h"
#include "kiln/tensor.h"
#include "reference.h"

namespace {

using kiln::Tensor;
using ref::NdArray;
using ref::Shape;

NdArray data(const Shape& s, uint64_t seed) { return kt::wrap(ref::random(s, seed, -2, 2), kiln::dtypes::float32); }

// C renderer: `x - c` with a negative constant c was printed as "x--0.5f".
TEST(FuzzRegressions, SubtractingANegativeConstant) {
  NdArray x = data({3}, 1);
  EXPECT_TRUE(kt::matches(kt::make(x) - (-0.5f), ref::map(x, [](double v) { return v + 0.5; })));
}

// UPCAST of a whole output loop (size 8 by 8, size 4 by 4) left a size-1 loop the index no longer
// used: "linearize: no node can be placed".
TEST(FuzzRegressions, ReductionWhoseOutputLoopsAreUpcastWhole) {
  NdArray a = data({8, 3}, 2), b = data({4, 8, 3}, 3);
  EXPECT_TRUE(kt::matches(kt::make(a).sum({1}), ref::sum(a, {1})));
  EXPECT_TRUE(kt::matches(kt::make(b).sum({2}), ref::sum(b, {2})));
}

// A CONTIGUOUS whose source is itself realized recomputed the source at an access the scheduler
// never planned: map::at in the kernel builder.
TEST(FuzzRegressions, ContiguousOfARealizedReduction) {
  NdArray a = data({2, 3}, 4);
  Tensor s = kt::make(a).sum({1}, true);
  NdArray want = ref::map(ref::sum(a, {1}, true), [](double v) { return 2 * v; });
  EXPECT_TRUE(kt::matches(s.contiguous() + s, want));
}

// A reduction of a broadcast input does not depend on the output loop it is broadcast along; its
// accumulator was initialized outside that loop and accumulated across it ([10, 20, 30] for
// [10, 10, 10]).
TEST(FuzzRegressions, ReductionOfABroadcastInput) {
  NdArray a = data({4}, 5);
  NdArray rows = ref::expand(a, {3, 4});
  EXPECT_TRUE(kt::matches(kt::make(a).expand({3, 4}).sum({1}), ref::sum(rows, {1})));
  EXPECT_TRUE(kt::matches(kt::make(a).expand({3, 4}).mean({1}), ref::mean(rows, {1})));
  NdArray cols = ref::expand(ref::reshape(a, {4, 1}), {4, 3});
  EXPECT_TRUE(kt::matches(kt::make(a).reshape({4, 1}).expand({4, 3}).sum({0}), ref::sum(cols, {0})));
}

// An inner reduction that does not depend on the enclosing reduction's loop, fused into it.
TEST(FuzzRegressions, NestedReductionInvariantInTheOuterLoop) {
  NdArray x = data({5}, 6), y = data({4}, 7);
  NdArray inner = ref::sum(ref::expand(x, {4, 5}), {1});
  NdArray diff = ref::zip(y, inner, [](double a, double b) { return a - b; });
  Tensor t = kt::make(y) - kt::make(x).expand({4, 5}).sum({1});
  EXPECT_TRUE(kt::matches(t.sum(), ref::sum(diff)));
  Tensor u = kt::make(y) - kt::make(x).expand({4, 5}).sum({1});
  EXPECT_TRUE(kt::matches(u.max(), ref::max(diff)));
}

// The same in a kernel with output loops (the one of size 8 is upcast): the inner reduction is
// invariant in the enclosing reduction's loop and in the output loops.
TEST(FuzzRegressions, NestedReductionInvariantInTheOuterLoopWithKeepdim) {
  NdArray x = data({5}, 9), y = data({8, 4}, 10);
  NdArray inner = ref::sum(ref::expand(x, {8, 4, 5}), {2});
  NdArray diff = ref::zip(y, inner, [](double a, double b) { return a - b; });
  Tensor t = kt::make(y) - kt::make(x).expand({8, 4, 5}).sum({2});
  EXPECT_TRUE(kt::matches(t.sum({1}, true), ref::sum(diff, {1}, true)));
  EXPECT_TRUE(kt::matches(t.max({0}, true), ref::max(diff, {0}, true)));
}

// Three nested reductions: the innermost is invariant in both enclosing loops (then, second case,
// depends on the outermost one only); the middle one is invariant in the outermost loop.
TEST(FuzzRegressions, TwoLevelsOfNestedReductions) {
  NdArray w = data({3}, 11), y = data({4}, 12), x = data({5}, 13), x2 = data({3, 1, 5}, 14);
  auto sub = [](double a, double b) { return a - b; };
  for (bool per_outer : {false, true}) {
    NdArray xs = per_outer ? x2 : x;
    NdArray inner = ref::sum(ref::expand(xs, {3, 4, 5}), {2});
    NdArray middle = ref::sum(ref::zip(ref::expand(y, {3, 4}), inner, sub), {1});
    Tensor ti = kt::make(xs).expand({3, 4, 5}).sum({2});
    Tensor tm = (kt::make(y).expand({3, 4}) - ti).sum({1});
    EXPECT_TRUE(kt::matches((kt::make(w) - tm).sum(), ref::sum(ref::zip(w, middle, sub))));
  }
}

// A reshape of contiguous() of an input buffer is a view of that buffer, yet after realize() the
// readback found the CONTIGUOUS under the RESHAPE instead of the buffer: std::get threw.
TEST(FuzzRegressions, ReshapeOfContiguousOfABuffer) {
  NdArray a = data({6}, 8);
  EXPECT_TRUE(kt::matches(kt::make(a).contiguous().reshape({2, 3}), ref::reshape(a, {2, 3})));
}

}  // namespace
