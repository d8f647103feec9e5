// Operator tests, part 3: movement ops (reshape, permute, expand, pad, shrink, flip, transpose,
// flatten/squeeze/unsqueeze), chains of them, views feeding computations, and matmul — each compared
// with the naive index loops of reference.h. Also a few self-checks of the reference itself.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "error_message.h"
#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/tensor.h"
#include "reference.h"

namespace {

using kiln::DType;
using kiln::Tensor;
using ref::NdArray;
using ref::Shape;
using Pairs = std::vector<std::pair<int64_t, int64_t>>;
namespace dtypes = kiln::dtypes;

// 0, 1, 2, ... in `shape`: every element distinct, so any indexing mistake shows.
NdArray iota(const Shape& shape) {
  NdArray a(shape);
  for (int64_t i = 0; i < a.size(); i++) a.data[i] = static_cast<double>(i);
  return a;
}

// A float32 tensor and its reference, with distinct values.
struct Pair {
  NdArray ref;
  Tensor t;
};
Pair distinct(const Shape& shape) {
  NdArray r = iota(shape);
  return {r, kt::make(r)};
}

// ============================================================================ reference self-checks

TEST(Reference, SmallKnownResults) {
  NdArray a({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(ref::permute(a, {1, 0}).data, (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(ref::flip(a, {1}).data, (std::vector<double>{3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(ref::pad(a, {{0, 1}, {1, 0}}).data, (std::vector<double>{0, 1, 2, 3, 0, 4, 5, 6, 0, 0, 0, 0}));
  EXPECT_EQ(ref::shrink(a, {{1, 2}, {1, 3}}).data, (std::vector<double>{5, 6}));
  EXPECT_EQ(ref::sum(a, {0}).data, (std::vector<double>{5, 7, 9}));
  EXPECT_EQ(ref::sum(a, {-1}, true).shape, (Shape{2, 1}));
  EXPECT_EQ(ref::expand(NdArray({2, 1}, {1, 2}), {3, 2, 2}).data,
            (std::vector<double>{1, 1, 2, 2, 1, 1, 2, 2, 1, 1, 2, 2}));
  EXPECT_EQ(ref::broadcast_shape({3, 1, 5}, {4, 1}), (Shape{3, 4, 5}));
  NdArray b({3, 2}, {1, 0, 0, 1, 1, 1});
  EXPECT_EQ(ref::matmul(a, b).data, (std::vector<double>{4, 5, 10, 11}));
  EXPECT_EQ(ref::matmul(NdArray({3}, {1, 2, 3}), NdArray({3}, {4, 5, 6})).shape, Shape{});
  EXPECT_EQ(ref::argmax(NdArray({4}, {1, 3, 3, 0}), 0).data, (std::vector<double>{1}));
  NdArray sm = ref::softmax(NdArray({2}, {0, std::log(3.0)}), 0);
  EXPECT_NEAR(sm.data[0], 0.25, 1e-12);
  EXPECT_FALSE(ref::expect_close(std::vector<float>{1, 2}, NdArray({2}, {1, 2.1})));
  EXPECT_TRUE(ref::expect_close(std::vector<float>{1, 2}, NdArray({2}, {1, 2.00001})));
}

// ============================================================================ single movement ops

TEST(Reshape, ShapesIncludingInferred) {
  Pair x = distinct({3, 7, 13});
  Tensor p = x.t.permute({2, 0, 1});  // a non-contiguous source, so reshape needs index math
  NdArray pr = ref::permute(x.ref, {2, 0, 1});
  for (const Shape& s : {Shape{21, 13}, Shape{-1}, Shape{13, -1}, Shape{273}, Shape{1, 3, 1, 91}, Shape{7, -1, 3}}) {
    SCOPED_TRACE("reshape to " + ref::shape_str(s));
    EXPECT_TRUE(kt::matches(x.t.reshape(s), ref::reshape(x.ref, s)));
    EXPECT_TRUE(kt::matches(p.reshape(s), ref::reshape(pr, s)));
  }
}

TEST(Reshape, ScalarsOnesAndEmpty) {
  Tensor s = Tensor::full({}, 2.5);
  EXPECT_EQ(s.reshape({1}).shape(), (Shape{1}));
  EXPECT_EQ(s.reshape({1, 1, 1}).shape(), (Shape{1, 1, 1}));
  EXPECT_EQ(s.reshape({1}).reshape({}).shape(), Shape{});
  EXPECT_EQ(s.reshape({-1}).shape(), (Shape{1}));
  Tensor one = Tensor::from_vector<float>({7}, {1});
  EXPECT_EQ(one.reshape({}).item<float>(), 7.0f);
  Tensor e = Tensor::zeros({0, 3});
  EXPECT_EQ(e.reshape({3, 0}).shape(), (Shape{3, 0}));
  EXPECT_EQ(e.reshape({0, 5, 7}).shape(), (Shape{0, 5, 7}));
  EXPECT_TRUE(e.reshape({3, 0}).to_vector<float>().empty());
}

TEST(Permute, EveryOrderOfThreeAxes) {
  Pair x = distinct({3, 7, 13});
  std::vector<int> order = {0, 1, 2};
  do {
    SCOPED_TRACE("permute " + std::to_string(order[0]) + std::to_string(order[1]) + std::to_string(order[2]));
    Tensor p = x.t.permute(order);
    EXPECT_TRUE(kt::matches(p, ref::permute(x.ref, order)));
  } while (std::next_permutation(order.begin(), order.end()));
}

TEST(Permute, FourAxesNegativeAndSizeOne) {
  Pair x = distinct({2, 3, 1, 5});
  EXPECT_TRUE(kt::matches(x.t.permute({3, 1, 0, 2}), ref::permute(x.ref, {3, 1, 0, 2})));
  EXPECT_TRUE(kt::matches(x.t.permute({-1, 0, -2, 1}), ref::permute(x.ref, {3, 0, 2, 1})));
  EXPECT_TRUE(kt::matches(x.t.permute({0, 1, 2, 3}), x.ref));
}

TEST(Transpose, DefaultsAndNegativeAxes) {
  Pair m = distinct({7, 13});
  EXPECT_TRUE(kt::matches(m.t.transpose(), ref::transpose(m.ref)));
  EXPECT_TRUE(kt::matches(m.t.transpose(-1, -2), ref::transpose(m.ref)));
  Pair c = distinct({3, 7, 13});
  EXPECT_TRUE(kt::matches(c.t.transpose(0, 2), ref::transpose(c.ref, 0, 2)));
  EXPECT_TRUE(kt::matches(c.t.transpose(-1, 1), ref::transpose(c.ref, 2, 1)));
  EXPECT_TRUE(kt::matches(c.t.transpose(1, 1), c.ref));
  EXPECT_TRUE(kt::matches(m.t.transpose().transpose(), m.ref));
}

TEST(Expand, BroadcastsSizeOneAndNewLeadingAxes) {
  Pair x = distinct({3, 1, 5});
  EXPECT_TRUE(kt::matches(x.t.expand({3, 4, 5}), ref::expand(x.ref, {3, 4, 5})));
  EXPECT_TRUE(kt::matches(x.t.expand({2, 3, 7, 5}), ref::expand(x.ref, {2, 3, 7, 5})));
  EXPECT_TRUE(kt::matches(x.t.expand({-1, 4, -1}), ref::expand(x.ref, {3, 4, 5})));
  EXPECT_TRUE(kt::matches(x.t.expand({3, 1, 5}), x.ref));
  Pair v = distinct({1});
  EXPECT_TRUE(kt::matches(v.t.expand({97}), ref::expand(v.ref, {97})));
  Tensor s = Tensor::full({}, 1.5);
  EXPECT_TRUE(kt::matches(s.expand({2, 3}), NdArray({2, 3}, 1.5)));
  EXPECT_TRUE(kt::matches(x.t.expand({3, 0, 5}), NdArray({3, 0, 5})));
}

TEST(Pad, ZerosBeforeAndAfter) {
  Pair m = distinct({3, 5});
  for (const Pairs& p : {Pairs{{1, 2}, {0, 3}}, Pairs{{0, 0}, {4, 0}}, Pairs{{2, 2}, {2, 2}}, Pairs{{0, 0}, {0, 0}}}) {
    SCOPED_TRACE("pad " + std::to_string(p[0].first) + "," + std::to_string(p[0].second) + " / " +
                 std::to_string(p[1].first) + "," + std::to_string(p[1].second));
    EXPECT_TRUE(kt::matches(m.t.pad(p), ref::pad(m.ref, p)));
  }
  Pair c = distinct({2, 3, 4});
  EXPECT_TRUE(kt::matches(c.t.pad({{1, 0}, {0, 0}, {2, 2}}), ref::pad(c.ref, {{1, 0}, {0, 0}, {2, 2}})));
  Pair v = distinct({7});
  EXPECT_TRUE(kt::matches(v.t.pad({{3, 1}}), ref::pad(v.ref, {{3, 1}})));
}

TEST(Pad, EmptyAndIntegerTensors) {
  Tensor e = Tensor::ones({0, 3});
  EXPECT_TRUE(kt::matches(e.pad({{1, 1}, {0, 0}}), NdArray({2, 3}, 0.0)));
  NdArray i = ref::random_int({3, 4}, 2000, -9, 9);
  Tensor ti = kt::make(i, dtypes::int32);
  Tensor padded = ti.pad({{1, 1}, {2, 0}});
  EXPECT_EQ(padded.dtype(), dtypes::int32);
  EXPECT_TRUE(kt::matches(padded, ref::pad(i, {{1, 1}, {2, 0}})));
}

TEST(Shrink, RangesPerAxis) {
  Pair m = distinct({7, 13});
  EXPECT_TRUE(kt::matches(m.t.shrink({{1, 6}, {0, 13}}), ref::shrink(m.ref, {{1, 6}, {0, 13}})));
  EXPECT_TRUE(kt::matches(m.t.shrink({{6, 7}, {12, 13}}), ref::shrink(m.ref, {{6, 7}, {12, 13}})));
  EXPECT_TRUE(kt::matches(m.t.shrink({{0, 7}, {0, 13}}), m.ref));
  Pair c = distinct({3, 7, 13});
  EXPECT_TRUE(kt::matches(c.t.shrink({{0, 3}, {2, 5}, {12, 13}}), ref::shrink(c.ref, {{0, 3}, {2, 5}, {12, 13}})));
  Tensor empty = m.t.shrink({{3, 3}, {0, 13}});
  EXPECT_EQ(empty.shape(), (Shape{0, 13}));
  EXPECT_TRUE(empty.to_vector<float>().empty());
}

// tinygrad's shrink_to / pad_to: every axis cut or padded at its end, nullopt keeping one
TEST(ShrinkToPadTo, CutAndPadEachAxisAtItsEnd) {
  Pair m = distinct({4, 8});
  EXPECT_TRUE(kt::matches(m.t.shrink_to({2, 2}), ref::shrink(m.ref, {{0, 2}, {0, 2}})));
  EXPECT_TRUE(kt::matches(m.t.shrink_to({std::nullopt, 3}), ref::shrink(m.ref, {{0, 4}, {0, 3}})));
  EXPECT_TRUE(kt::matches(m.t.shrink_to({0, 8}), NdArray({0, 8})));
  EXPECT_TRUE(kt::matches(m.t.pad_to({6, std::nullopt}), ref::pad(m.ref, {{0, 2}, {0, 0}})));
  EXPECT_TRUE(kt::matches(m.t.pad_to({5, 11}, -1.5), ref::pad(m.ref, {{0, 1}, {0, 3}}, -1.5)));
  EXPECT_TRUE(kt::matches(m.t.pad_to({4, 8}, 7), m.ref));  // nothing to pad: the fill is unused
  NdArray i = ref::random_int({3}, 2001, -9, 9);
  Tensor padded = kt::make(i, dtypes::int32).pad_to({5}, 2);
  EXPECT_EQ(padded.dtype(), dtypes::int32);
  EXPECT_TRUE(kt::matches(padded, ref::pad(i, {{0, 2}}, 2)));
}

TEST(ShrinkToPadTo, SizesInTheWrongDirectionOrCountAreErrors) {
  Tensor t = Tensor::ones({4, 8});
  EXPECT_NE(kt::error_of([&] { t.shrink_to({5, 8}); }).find("shrink_to: size 5 for axis 0 of shape (4, 8) must be "
                                                           "between 0 and 4"), std::string::npos);
  EXPECT_NE(kt::error_of([&] { t.shrink_to({2}); }).find("shrink_to: expected 2 sizes"), std::string::npos);
  EXPECT_NE(kt::error_of([&] { t.pad_to({4, 7}); }).find("pad_to: size 7 for axis 1 of shape (4, 8) must be at "
                                                         "least 8"), std::string::npos);
  EXPECT_NE(kt::error_of([&] { t.pad_to({4, 8, 1}); }).find("pad_to: expected 2 sizes"), std::string::npos);
}

TEST(Flip, SingleMultipleAndNegativeAxes) {
  Pair c = distinct({3, 7, 13});
  for (const std::vector<int>& axes : std::vector<std::vector<int>>{{0}, {1}, {2}, {-1}, {0, 2}, {0, 1, 2}}) {
    SCOPED_TRACE("flip " + std::to_string(axes.size()) + " axes starting " + std::to_string(axes[0]));
    EXPECT_TRUE(kt::matches(c.t.flip(axes), ref::flip(c.ref, axes)));
  }
  EXPECT_TRUE(kt::matches(c.t.flip({1}).flip({1}), c.ref));
  Pair one = distinct({1, 5});
  EXPECT_TRUE(kt::matches(one.t.flip({0}), one.ref));
}

TEST(Flatten, SqueezeUnsqueeze) {
  Pair c = distinct({3, 1, 5});
  EXPECT_EQ(c.t.flatten().shape(), (Shape{15}));
  EXPECT_TRUE(kt::matches(c.t.flatten(), ref::reshape(c.ref, {15})));
  EXPECT_EQ(c.t.flatten(1).shape(), (Shape{3, 5}));
  EXPECT_EQ(c.t.flatten(0, 1).shape(), (Shape{3, 5}));
  EXPECT_EQ(c.t.squeeze(1).shape(), (Shape{3, 5}));
  EXPECT_EQ(c.t.squeeze(0).shape(), (Shape{3, 1, 5}));
  EXPECT_EQ(c.t.unsqueeze(0).shape(), (Shape{1, 3, 1, 5}));
  EXPECT_EQ(c.t.unsqueeze(-1).shape(), (Shape{3, 1, 5, 1}));
  EXPECT_TRUE(kt::matches(c.t.squeeze(1).unsqueeze(2), ref::reshape(c.ref, {3, 5, 1})));
  EXPECT_EQ(Tensor::zeros({4, 0, 3}).flatten().shape(), (Shape{0}));
}

// ============================================================================ chains and views in computations

TEST(Chains, PermuteReshapeShrinkFlipPad) {
  Pair x = distinct({3, 7, 13});
  Tensor t = x.t.permute({2, 0, 1}).reshape({13, 21}).shrink({{2, 11}, {4, 20}}).flip({0}).pad({{1, 2}, {3, 0}});
  NdArray r =
      ref::pad(ref::flip(ref::shrink(ref::reshape(ref::permute(x.ref, {2, 0, 1}), {13, 21}), {{2, 11}, {4, 20}}), {0}),
               {{1, 2}, {3, 0}});
  EXPECT_EQ(t.shape(), (Shape{12, 19}));
  EXPECT_TRUE(kt::matches(t, r));
}

TEST(Chains, ExpandPermuteReshape) {
  Pair x = distinct({3, 1, 5});
  Tensor t = x.t.expand({3, 4, 5}).permute({1, 2, 0}).reshape({20, 3});
  EXPECT_TRUE(kt::matches(t, ref::reshape(ref::permute(ref::expand(x.ref, {3, 4, 5}), {1, 2, 0}), {20, 3})));
}

TEST(Chains, PadThenShrinkAndShrinkThenPad) {
  Pair m = distinct({7, 13});
  EXPECT_TRUE(kt::matches(m.t.pad({{2, 3}, {1, 1}}).shrink({{2, 9}, {1, 14}}), m.ref));
  Tensor partly = m.t.pad({{2, 3}, {1, 1}}).shrink({{0, 5}, {0, 4}});  // part padding, part data
  EXPECT_TRUE(kt::matches(partly, ref::shrink(ref::pad(m.ref, {{2, 3}, {1, 1}}), {{0, 5}, {0, 4}})));
  Tensor sp = m.t.shrink({{1, 6}, {2, 12}}).pad({{1, 1}, {0, 2}});
  EXPECT_TRUE(kt::matches(sp, ref::pad(ref::shrink(m.ref, {{1, 6}, {2, 12}}), {{1, 1}, {0, 2}})));
}

TEST(Chains, ReshapeSplitsAndMergesAcrossPermute) {
  Pair x = distinct({4, 6});
  Tensor t = x.t.reshape({2, 2, 3, 2}).permute({3, 1, 0, 2}).reshape({4, 6}).transpose().reshape({2, 12});
  NdArray r = ref::reshape(
      ref::transpose(ref::reshape(ref::permute(ref::reshape(x.ref, {2, 2, 3, 2}), {3, 1, 0, 2}), {4, 6})), {2, 12});
  EXPECT_TRUE(kt::matches(t, r));
}

TEST(Views, FeedElementwiseAndReductions) {
  NdArray a = kt::wrap(ref::random({7, 13}, 2100), dtypes::float32);
  NdArray b = kt::wrap(ref::random({13, 7}, 2101), dtypes::float32);
  Tensor ta = kt::make(a), tb = kt::make(b);
  // a + b^T, flipped, then reduced
  Tensor out = (ta + tb.transpose()).flip({1}).sum({0});
  NdArray want =
      ref::sum(ref::flip(ref::zip(a, ref::transpose(b), [](double x, double y) { return x + y; }), {1}), {0});
  EXPECT_TRUE(kt::matches(out, want));
  // a padded view times a shrunk view of the same buffer
  Tensor mix = ta.pad({{0, 0}, {1, 0}}).shrink({{0, 7}, {0, 13}}) * ta;
  NdArray shifted = ref::shrink(ref::pad(a, {{0, 0}, {1, 0}}), {{0, 7}, {0, 13}});
  EXPECT_TRUE(kt::matches(mix, ref::zip(shifted, a, [](double x, double y) { return x * y; })));
  // padding happens after the elementwise op: exp of the pad region is not exp(0) = 1
  Tensor pe = ta.exp().pad({{1, 0}, {0, 0}});
  EXPECT_TRUE(kt::matches(pe, ref::pad(ref::map(a, [](double v) { return std::exp(v); }), {{1, 0}, {0, 0}})));
}

class MovementPerDtype : public ::testing::TestWithParam<DType> {};

TEST_P(MovementPerDtype, ChainKeepsValuesAndDtype) {
  DType dt = GetParam();
  NdArray x = kt::random_for(dt, {3, 5}, 2200, 1);
  Tensor t = kt::make(x, dt).permute({1, 0}).pad({{1, 0}, {0, 2}}).flip({0}).shrink({{1, 6}, {0, 4}});
  NdArray want = ref::shrink(ref::flip(ref::pad(ref::permute(x, {1, 0}), {{1, 0}, {0, 2}}), {0}), {{1, 6}, {0, 4}});
  EXPECT_EQ(t.dtype(), dt);
  EXPECT_TRUE(kt::matches(t, want, kt::Tol{0, 0}));
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, MovementPerDtype, ::testing::ValuesIn(dtypes::all()), kt::dtype_param_name);

// ============================================================================ matmul

struct MatmulCase {
  Shape a, b;
};

// float32 with inner dimension k: rtol 1e-4, atol 1e-5 * k (rounding grows with the sum length)
kt::Tol matmul_tol(int64_t k) { return {1e-4, 1e-5 * static_cast<double>(std::max<int64_t>(k, 1))}; }

TEST(Matmul, ShapesAgainstReference) {
  const std::vector<MatmulCase> cases = {
      {{1, 1}, {1, 1}},       {{7, 13}, {13, 5}},  {{64, 64}, {64, 64}}, {{2, 3, 4}, {4, 5}},
      {{2, 3, 4}, {2, 4, 5}}, {{3, 4}, {2, 4, 5}}, {{4}, {4, 5}},        {{7, 13}, {13}},
      {{13}, {13}},           {{1, 7}, {7, 1}},    {{97, 1}, {1, 31}},   {{2, 1, 3, 4}, {5, 4, 2}},
  };
  uint64_t seed = 2300;
  for (const MatmulCase& c : cases) {
    SCOPED_TRACE(ref::shape_str(c.a) + " @ " + ref::shape_str(c.b));
    NdArray a = kt::wrap(ref::random(c.a, seed++), dtypes::float32);
    NdArray b = kt::wrap(ref::random(c.b, seed++), dtypes::float32);
    NdArray want = ref::matmul(a, b);
    Tensor out = kt::make(a).matmul(kt::make(b));
    EXPECT_EQ(out.dtype(), dtypes::float32);
    EXPECT_TRUE(kt::matches(out, want, matmul_tol(c.a.back())));
  }
}

TEST(Matmul, LargeRightOperandsReadFromColumnPanels) {
  // k * m >= 2048 * 2048 on the CPU: the right operand is copied in panels of 32 columns first
  // (reduce.cpp); a transposed view and a gradient go through the same copy
  NdArray a = kt::wrap(ref::random({3, 2048}, 2410), dtypes::float32);
  NdArray b = kt::wrap(ref::random({2048, 2080}, 2411), dtypes::float32);
  Tensor ta = kt::make(a), tb = kt::make(b);
  EXPECT_TRUE(kt::matches(ta.matmul(tb), ref::matmul(a, b), matmul_tol(2048)));
  EXPECT_TRUE(kt::matches(ta.matmul(tb.transpose().contiguous().transpose()), ref::matmul(a, b), matmul_tol(2048)));
  Tensor w = kt::make(b).requires_grad_(true);
  Tensor loss = ta.matmul(w).sum();
  Tensor grad = loss.gradient({w}).at(0);
  // d(sum(a @ w))/dw[k][j] = sum_i a[i][k]
  NdArray want({2048, 2080});
  for (int64_t k = 0; k < 2048; k++)
    for (int64_t j = 0; j < 2080; j++) want.at({k, j}) = a.at({0, k}) + a.at({1, k}) + a.at({2, k});
  EXPECT_TRUE(kt::matches(grad, want, matmul_tol(3)));
}

TEST(Matmul, SizesWithoutTileDivisorsArePaddedToWholeTiles) {
  // 257 rows (prime) and 250 columns: on the CPU both operands are copied zero-padded to whole
  // register tiles (264 x 256) and the result is cut back (schedule/matmul_tiles.cpp; other devices keep the
  // sizes); batched operands on either side, and the gradients of both operands (through pad and
  // cut) against float64 formulas
  NdArray a = kt::wrap(ref::random({257, 129}, 2420), dtypes::float32);
  NdArray b = kt::wrap(ref::random({129, 250}, 2421), dtypes::float32);
  Tensor ta = kt::make(a), tb = kt::make(b);
  Tensor out = ta.matmul(tb);
  EXPECT_EQ(out.shape(), (Shape{257, 250}));
  if (out.device() == "CPU") EXPECT_GE(out.schedule().size(), 3u);  // the two padded copies and the matmul
  EXPECT_TRUE(kt::matches(out, ref::matmul(a, b), matmul_tol(129)));
  NdArray a3 = kt::wrap(ref::random({2, 130, 129}, 2422), dtypes::float32);
  EXPECT_TRUE(kt::matches(kt::make(a3).matmul(tb), ref::matmul(a3, b), matmul_tol(129)));
  NdArray b3 = kt::wrap(ref::random({2, 129, 140}, 2423), dtypes::float32);
  EXPECT_TRUE(kt::matches(ta.matmul(kt::make(b3)), ref::matmul(a, b3), matmul_tol(129)));
  // loss = sum(c * (a @ b)): d/da = c @ b^T, d/db = a^T @ c
  NdArray c = kt::wrap(ref::random({257, 250}, 2424), dtypes::float32);
  Tensor wa = kt::make(a).requires_grad_(true), wb = kt::make(b).requires_grad_(true);
  std::vector<Tensor> grads = (kt::make(c) * wa.matmul(wb)).sum().gradient({wa, wb});
  EXPECT_TRUE(kt::matches(grads.at(0), ref::matmul(c, ref::transpose(b)), matmul_tol(250)));
  EXPECT_TRUE(kt::matches(grads.at(1), ref::matmul(ref::transpose(a), c), matmul_tol(257)));
}

TEST(Matmul, DotAndTransposedOperands) {
  NdArray a = kt::wrap(ref::random({13, 7}, 2400), dtypes::float32);
  NdArray b = kt::wrap(ref::random({5, 13}, 2401), dtypes::float32);
  Tensor ta = kt::make(a), tb = kt::make(b);
  // a^T @ b^T: both operands are permuted views
  EXPECT_TRUE(kt::matches(ta.transpose().matmul(tb.transpose()), ref::matmul(ref::transpose(a), ref::transpose(b)),
                          matmul_tol(13)));
  EXPECT_TRUE(kt::matches(tb.dot(ta), ref::matmul(b, a), matmul_tol(13)));
}

TEST(Matmul, IntegersAreExact) {
  NdArray a = ref::random_int({7, 13}, 2402, -20, 20), b = ref::random_int({13, 5}, 2403, -20, 20);
  Tensor out = kt::make(a, dtypes::int32).matmul(kt::make(b, dtypes::int32));
  EXPECT_EQ(out.dtype(), dtypes::int32);
  EXPECT_TRUE(kt::matches(out, ref::matmul(a, b)));
  Tensor mixed = kt::make(a, dtypes::int32).matmul(kt::make(b, dtypes::float32));
  EXPECT_EQ(mixed.dtype(), dtypes::float32);
  EXPECT_TRUE(kt::matches(mixed, ref::matmul(a, b)));
}

TEST(Matmul, EmptyInnerDimensionGivesZeros) {
  Tensor out = Tensor::ones({3, 0}).matmul(Tensor::ones({0, 4}));
  EXPECT_EQ(out.shape(), (Shape{3, 4}));
  EXPECT_TRUE(kt::matches(out, NdArray({3, 4}, 0.0)));
}

TEST(Matmul, Float64) {
  NdArray a = ref::random({9, 17}, 2404), b = ref::random({17, 6}, 2405);
  Tensor out = kt::make(a, dtypes::float64).matmul(kt::make(b, dtypes::float64));
  EXPECT_EQ(out.dtype(), dtypes::float64);
  EXPECT_TRUE(kt::matches(out, ref::matmul(a, b), kt::Tol{1e-12, 1e-12}));
}

// One large product: (1024 x 1024) @ (1024 x 1024) in kiln, checked at 512 sampled entries (the full
// reference would cost 10^9 double multiply-adds). Tolerance: rtol 1e-4, atol 1e-5 * 1024.
TEST(Matmul, Large1024SampledEntries) {
  const int64_t n = 1024;
  NdArray a = kt::wrap(ref::random({n, n}, 2500), dtypes::float32);
  NdArray b = kt::wrap(ref::random({n, n}, 2501), dtypes::float32);
  std::vector<float> got = kt::make(a).matmul(kt::make(b)).to_vector<float>();
  ASSERT_EQ(static_cast<int64_t>(got.size()), n * n);
  // the four corners, then random entries
  std::vector<std::pair<int64_t, int64_t>> at = {{0, 0}, {0, n - 1}, {n - 1, 0}, {n - 1, n - 1}};
  ref::Lcg rng(2502);
  while (at.size() < 512) at.emplace_back(rng.integer(0, n - 1), rng.integer(0, n - 1));
  std::vector<float> sampled;
  std::vector<double> want;
  for (auto [i, j] : at) {
    double acc = 0;
    for (int64_t k = 0; k < n; k++) acc += a.data[i * n + k] * b.data[k * n + j];
    sampled.push_back(got[i * n + j]);
    want.push_back(acc);
  }
  kt::Tol tol = matmul_tol(n);
  EXPECT_TRUE(ref::expect_close(sampled, want, tol.rtol, tol.atol));
}

}  // namespace
