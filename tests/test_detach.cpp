// DETACH inside a lazy graph: the scheduler sees through it (it only stops gradients), yet every
// tensor of the graph, the detached ones and those computed from them, must become its buffer when
// realized, and a second realize of the same structure must reuse the first one's dispatch plan.
// Values against naive float64 loops (float32 tolerance of kt::matches).
#include <gtest/gtest.h>

#include <cmath>

#include "engine/dispatch_cache.h"
#include "kiln/kiln.h"
#include "reference.h"

using namespace kiln;

namespace {

// Realized: nothing left to run for it.
bool realized(const Tensor& t) { return t.schedule().empty(); }

// exp(x - max(x, axis)) and its gradient d sum(y) / dx = y (the max is a constant to autograd).
ref::NdArray shifted_exp(const ref::NdArray& x, int axis) {
  ref::NdArray m = ref::expand(ref::max(x, {axis}, true), x.shape);
  return ref::zip(x, m, [](double v, double mv) { return std::exp(v - mv); });
}

TEST(Detach, ShiftByDetachedMaxRealizesWithItsGradient) {
  for (int round = 0; round < 3; round++) {
    ref::NdArray xs = ref::random({4, 7}, 10 + round, -3, 3);
    Tensor x = kt::make(xs).requires_grad_();
    Tensor y = (x - x.max({1}, true).detach()).exp();
    y.sum().backward();
    Tensor g = *x.grad();
    const int64_t hits_before = engine::dispatch_cache_hits();
    Tensor::realize({y, g});
    EXPECT_TRUE(realized(y)) << "round " << round;
    EXPECT_TRUE(realized(g)) << "round " << round;
    // the second round on has the first's structure: its plan was recorded and is reused
    if (round > 0) EXPECT_EQ(engine::dispatch_cache_hits(), hits_before + 1) << "round " << round;
    const ref::NdArray want = shifted_exp(xs, 1);
    EXPECT_TRUE(kt::matches(y, want)) << "round " << round;
    EXPECT_TRUE(kt::matches(g, want)) << "round " << round;
  }
}

TEST(Detach, DetachedTensorRealizedBesideItsSource) {
  for (int round = 0; round < 2; round++) {
    ref::NdArray xs = ref::random({5, 3}, 3 + round);
    Tensor x = kt::make(xs);
    Tensor m = x.max({0}, true);
    Tensor d = m.detach();
    Tensor s = x - d;  // computed from the detached max
    const int64_t hits_before = engine::dispatch_cache_hits();
    Tensor::realize({m, d, s});
    if (round > 0) EXPECT_EQ(engine::dispatch_cache_hits(), hits_before + 1);
    EXPECT_TRUE(realized(m) && realized(d) && realized(s)) << "round " << round;
    const ref::NdArray mw = ref::max(xs, {0}, true);
    EXPECT_TRUE(kt::matches(m, mw)) << "round " << round;
    EXPECT_TRUE(kt::matches(d, mw)) << "round " << round;
    EXPECT_TRUE(kt::matches(s, ref::zip(xs, ref::expand(mw, xs.shape), [](double a, double b) { return a - b; })))
        << "round " << round;
  }
}

// A contiguous intermediate over a DETACH gets its own kernel: the tensor holding it becomes that
// kernel's buffer, not a graph that computes it again.
TEST(Detach, ContiguousIntermediateOverDetachBecomesItsBuffer) {
  ref::NdArray xs = ref::random({3, 8}, 7, -2, 2);
  Tensor x = kt::make(xs);
  Tensor e = (x - x.max({1}, true).detach()).exp().contiguous();
  Tensor y = e.sum({1});
  y.realize();
  EXPECT_TRUE(realized(e));
  EXPECT_TRUE(kt::matches(y, ref::sum(shifted_exp(xs, 1), {1})));
  EXPECT_TRUE(kt::matches(e, shifted_exp(xs, 1)));
}

}  // namespace
