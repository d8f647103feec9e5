// Operator tests, part 2: reductions (sum, max, min, mean, prod with axes and keepdim), their result
// dtypes, argmax/argmin, the softmax family, and reductions over empty axes — each compared with the
// double-precision reference in reference.h.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/tensor.h"
#include "reference.h"

namespace {

using kiln::DType;
using kiln::Tensor;
using ref::NdArray;
using ref::Shape;
namespace dtypes = kiln::dtypes;

std::string axes_str(const std::vector<int>& axes) {
  std::string s = "{";
  for (size_t i = 0; i < axes.size(); i++) s += (i ? "," : "") + std::to_string(axes[i]);
  return s + "}";
}

// A shape and the axes to reduce (empty = all).
struct Config {
  Shape shape;
  std::vector<int> axes;
};

// sum runs over every configuration; the other reductions over kOpConfigs (each distinct
// configuration is a compiled kernel).
const std::vector<Config> kAllConfigs = {
    {{7}, {}},           {{7}, {0}},        {{7}, {-1}},          {{13, 31}, {}},         {{13, 31}, {0}},
    {{13, 31}, {1}},     {{13, 31}, {-1}},  {{13, 31}, {0, 1}},   {{3, 7, 13}, {}},       {{3, 7, 13}, {0}},
    {{3, 7, 13}, {1}},   {{3, 7, 13}, {2}}, {{3, 7, 13}, {0, 2}}, {{3, 7, 13}, {-1, -3}}, {{3, 7, 13}, {1, 2}},
    {{1, 1, 5}, {0, 1}}, {{1, 1, 5}, {2}},  {{97, 1}, {0}},       {{97, 1}, {1}},         {{}, {}},
};
const std::vector<Config> kOpConfigs = {
    {{3, 7, 13}, {1}}, {{3, 7, 13}, {0, 2}}, {{3, 7, 13}, {}}, {{13, 31}, {-1}}, {{97, 1}, {0}}, {{}, {}},
};

struct ReduceCase {
  std::string name;
  bool all_configs;
  std::function<Tensor(const Tensor&, std::vector<int>, bool)> fn;
  std::function<NdArray(const NdArray&, std::vector<int>, bool)> ref;
  double lo, hi;  // input range
};

const std::vector<ReduceCase>& reduce_cases() {
  static const std::vector<ReduceCase> cases = {
      {"sum", true, [](const Tensor& t, std::vector<int> a, bool k) { return t.sum(a, k); },
       [](const NdArray& x, std::vector<int> a, bool k) { return ref::sum(x, a, k); }, -1, 1},
      {"max", false, [](const Tensor& t, std::vector<int> a, bool k) { return t.max(a, k); },
       [](const NdArray& x, std::vector<int> a, bool k) { return ref::max(x, a, k); }, -1, 1},
      {"min", false, [](const Tensor& t, std::vector<int> a, bool k) { return t.min(a, k); },
       [](const NdArray& x, std::vector<int> a, bool k) { return ref::min(x, a, k); }, -1, 1},
      {"mean", false, [](const Tensor& t, std::vector<int> a, bool k) { return t.mean(a, k); },
       [](const NdArray& x, std::vector<int> a, bool k) { return ref::mean(x, a, k); }, -1, 1},
      // inputs near 1 keep products of up to 273 values in float32 range
      {"prod", false, [](const Tensor& t, std::vector<int> a, bool k) { return t.prod(a, k); },
       [](const NdArray& x, std::vector<int> a, bool k) { return ref::prod(x, a, k); }, 0.6, 1.5},
  };
  return cases;
}

class Reduce : public ::testing::TestWithParam<size_t> {};

TEST_P(Reduce, AxesAndKeepdim) {
  const ReduceCase& c = reduce_cases()[GetParam()];
  uint64_t seed = 1000;
  for (const Config& cfg : c.all_configs ? kAllConfigs : kOpConfigs)
    for (bool keepdim : {false, true}) {
      SCOPED_TRACE(c.name + " of " + ref::shape_str(cfg.shape) + " over " + axes_str(cfg.axes) +
                   (keepdim ? " keepdim" : ""));
      NdArray x = kt::wrap(ref::random(cfg.shape, seed++, c.lo, c.hi), dtypes::float32);
      Tensor out = c.fn(kt::make(x), cfg.axes, keepdim);
      EXPECT_EQ(out.dtype(), dtypes::float32);
      EXPECT_TRUE(kt::matches(out, c.ref(x, cfg.axes, keepdim)));
    }
}

INSTANTIATE_TEST_SUITE_P(Ops, Reduce, ::testing::Range<size_t>(0, reduce_cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& i) { return reduce_cases()[i.param].name; });

// NaN follows PyTorch: a row holding NaN has max and min NaN, and argmax points at the NaN; the
// elementwise maximum/minimum of NaN and a number is NaN from either side.
TEST(ReduceValues, NaNPropagatesThroughMaxMinAndArgmax) {
  const float nan = std::nanf("");
  Tensor x = Tensor::from_vector<float>({1, nan, 3, -2, 5, 4, nan, 0, 2}, {3, 3});
  std::vector<float> mx = x.max({1}).to_vector<float>(), mn = x.min({1}).to_vector<float>();
  EXPECT_TRUE(std::isnan(mx[0]) && std::isnan(mx[2]) && std::isnan(mn[0]) && std::isnan(mn[2]));
  EXPECT_EQ(mx[1], 5.0f);
  EXPECT_EQ(mn[1], -2.0f);
  EXPECT_EQ(x.argmax(1).to_vector<int32_t>(), (std::vector<int32_t>{1, 1, 0}));
  Tensor a = Tensor::from_vector<float>({nan, 1, 2}, {3}), b = Tensor::from_vector<float>({0, nan, 1}, {3});
  for (const Tensor& r : {a.maximum(b), b.maximum(a), a.minimum(b), b.minimum(a)}) {
    std::vector<float> v = r.to_vector<float>();
    EXPECT_TRUE(std::isnan(v[0]) && std::isnan(v[1]));
  }
  EXPECT_EQ(a.maximum(b).to_vector<float>()[2], 2.0f);
  EXPECT_EQ(a.minimum(b).to_vector<float>()[2], 1.0f);
}

TEST(ReduceValues, DefaultsReduceEverything) {
  NdArray x = kt::wrap(ref::random({5, 3}, 1100), dtypes::float32);
  Tensor t = kt::make(x);
  EXPECT_EQ(t.sum().shape(), Shape{});
  EXPECT_TRUE(kt::matches(t.sum(), ref::sum(x)));
  EXPECT_TRUE(kt::matches(t.max(), ref::max(x)));
  EXPECT_TRUE(kt::matches(t.min(), ref::min(x)));
  EXPECT_TRUE(kt::matches(t.mean(), ref::mean(x)));
  EXPECT_TRUE(kt::matches(t.sum({}, true), ref::sum(x, {}, true)));
  EXPECT_EQ(t.sum({}, true).shape(), (Shape{1, 1}));
}

// x.sum(1) is x.sum({1}), for every reduction over a list of axes; braces still make a list, so
// sum({}) stays "every axis" (an int overload would take {} as axis 0). bool is not an axis.
template <class T>
concept SumsWith = requires(const Tensor& t, T v) { t.sum(v); };
static_assert(SumsWith<int> && SumsWith<int64_t> && !SumsWith<bool>);

TEST(ReduceValues, OneAxisAsAPlainInteger) {
  NdArray x = kt::wrap(ref::random({3, 7, 13}, 1102, 0.6, 1.5), dtypes::float32);
  Tensor t = kt::make(x);
  EXPECT_TRUE(kt::matches(t.sum(1), ref::sum(x, {1})));
  EXPECT_TRUE(kt::matches(t.sum(-1, true), ref::sum(x, {2}, true)));
  EXPECT_TRUE(kt::matches(t.max(0), ref::max(x, {0})));
  EXPECT_TRUE(kt::matches(t.min(int64_t{2}), ref::min(x, {2})));
  EXPECT_TRUE(kt::matches(t.mean(0, true), ref::mean(x, {0}, true)));
  EXPECT_TRUE(kt::matches(t.prod(1), ref::prod(x, {1})));
  // var with Bessel's correction (the default) by its definition; std is its square root
  NdArray centered = ref::zip(x, ref::mean(x, {1}, true), [](double v, double m) { return v - m; });
  NdArray var = ref::map(ref::sum(ref::map(centered, [](double c) { return c * c; }), {1}),
                         [](double s) { return s / (7 - 1); });
  EXPECT_TRUE(kt::matches(t.var(1), var));
  EXPECT_TRUE(kt::matches(t.std(1), ref::map(var, [](double v) { return std::sqrt(v); })));
  EXPECT_TRUE(kt::matches(t.sum({}), ref::sum(x)));
  EXPECT_EQ(t.sum({}, true).shape(), (Shape{1, 1, 1}));
  EXPECT_TRUE(kt::matches(t.max({}, true), ref::max(x, {}, true)));
  EXPECT_TRUE(kt::matches(t.mean({}), ref::mean(x)));
  EXPECT_TRUE(kt::matches(t.sum({1}), ref::sum(x, {1})));
}

TEST(ReduceValues, AxisOrderDoesNotMatter) {
  NdArray x = kt::wrap(ref::random({3, 7, 13}, 1101), dtypes::float32);
  Tensor t = kt::make(x);
  EXPECT_TRUE(kt::matches(t.sum({2, 0}), ref::sum(x, {0, 2})));
  EXPECT_TRUE(kt::matches(t.max({-1, 0}, true), ref::max(x, {0, 2}, true)));
}

TEST(ReduceValues, ReduceAfterElementwiseAndTwice) {
  NdArray x = kt::wrap(ref::random({13, 31}, 1102), dtypes::float32);
  Tensor t = kt::make(x);
  NdArray sq = ref::map(x, [](double v) { return v * v; });
  EXPECT_TRUE(kt::matches((t * t).sum({1}).sqrt(), ref::map(ref::sum(sq, {1}), [](double v) { return std::sqrt(v); })));
  EXPECT_TRUE(kt::matches(t.sum({1}).max(), ref::max(ref::sum(x, {1}))));
  EXPECT_TRUE(kt::matches(t.max({0}).sum(), ref::sum(ref::max(x, {0}))));
}

TEST(ReduceValues, LargeSumIsAccurate) {
  // 10^5 values in [0, 1): the sum (~5e4) must keep float32 relative accuracy 1e-4
  NdArray x = kt::wrap(ref::random({100000}, 1103, 0, 1), dtypes::float32);
  Tensor t = kt::make(x);
  EXPECT_TRUE(kt::matches(t.sum(), ref::sum(x)));
  EXPECT_TRUE(kt::matches(t.mean(), ref::mean(x)));
  NdArray y = kt::wrap(ref::random({50, 2000}, 1104, 0, 1), dtypes::float32);
  EXPECT_TRUE(kt::matches(kt::make(y).sum({1}), ref::sum(y, {1})));
  EXPECT_TRUE(kt::matches(kt::make(y).sum({0}), ref::sum(y, {0})));
}

// Sums of many equal terms are the worst case of one running accumulator (each add rounds at the
// total's size, always the same way): 10^7 values of 0.1 erred by 1.2e-5 relative that way.
// Blocked accumulation keeps them within 1e-6 (PyTorch: 5.8e-7 on the same sum), against the
// exact float64 sum of the float32 values.
TEST(ReduceValues, LongSumsOfEqualTermsKeepFloat32Accuracy) {
  const double tenth = static_cast<double>(0.1f);
  auto rel_err = [](double got, double want) { return std::abs(got - want) / std::abs(want); };
  const int64_t n = 10'000'000;
  EXPECT_LT(rel_err(Tensor::full({n}, 0.1).sum().item<float>(), tenth * n), 1e-6);
  EXPECT_LT(rel_err(Tensor::full({n}, 0.1).mean().item<float>(), tenth), 1e-6);
  // per row, each row one kernel's output (no split into partial sums)
  std::vector<float> rows = Tensor::full({16, 200'000}, 0.1).sum({1}).to_vector<float>();
  for (float r : rows) EXPECT_LT(rel_err(r, tenth * 200'000), 1e-6);
  // and along the outer axis: 200,000 terms per output, read with a stride
  std::vector<float> cols = Tensor::full({200'000, 16}, 0.1).sum({0}).to_vector<float>();
  for (float c : cols) EXPECT_LT(rel_err(c, tenth * 200'000), 1e-6);
  // random terms against their float64 sum
  NdArray x = kt::wrap(ref::random({1 << 22}, 1105, 0, 1), dtypes::float32);
  EXPECT_LT(rel_err(kt::make(x).sum().item<float>(), ref::sum(x).data[0]), 1e-6);
}

TEST(ReduceValues, MaxMinWithInfinityAndEqualValues) {
  Tensor t(std::vector<float>{-INFINITY, -INFINITY, 3, 3, -1, INFINITY});
  Tensor r = t.reshape({3, 2});
  EXPECT_TRUE(kt::matches(r.max({1}), NdArray({3}, {-INFINITY, 3, INFINITY})));
  EXPECT_TRUE(kt::matches(r.min({1}), NdArray({3}, {-INFINITY, 3, -1})));
  Tensor neg(std::vector<float>{-5, -7, -2.5f});
  EXPECT_EQ(neg.max().item<float>(), -2.5f);  // the max of negatives is not clamped at 0
  EXPECT_EQ(neg.min().item<float>(), -7.0f);
}

// ============================================================================ result dtypes

struct SumDtypeCase {
  DType in, out;
};

TEST(ReduceDtypes, SumAccumulatesSmallTypesIn32Bits) {
  // tinygrad: bool and signed ints below 32 bits sum in int32, unsigned ones in uint32; others keep their dtype
  const std::vector<SumDtypeCase> cases = {
      {dtypes::bool_, dtypes::int32},     {dtypes::int8, dtypes::int32},        {dtypes::int16, dtypes::int32},
      {dtypes::int32, dtypes::int32},     {dtypes::int64, dtypes::int64},       {dtypes::uint8, dtypes::uint32},
      {dtypes::uint16, dtypes::uint32},   {dtypes::uint32, dtypes::uint32},     {dtypes::uint64, dtypes::uint64},
      {dtypes::float16, dtypes::float16}, {dtypes::bfloat16, dtypes::bfloat16}, {dtypes::float32, dtypes::float32},
      {dtypes::float64, dtypes::float64},
  };
  for (const SumDtypeCase& c : cases) {
    SCOPED_TRACE("sum of " + c.in.name());
    // 31 values of up to 100 (1 for bool): sums overflow 8 bits, so the accumulator width shows
    NdArray x = c.in.is_bool()    ? ref::random_int({31}, 1200, 0, 1)
                : c.in.is_float() ? ref::random_grid({31}, 1200, 0, 100, 1)
                                  : ref::random_int({31}, 1200, 50, 100);
    Tensor s = kt::make(x, c.in).sum();
    EXPECT_EQ(s.dtype(), c.out);
    EXPECT_TRUE(kt::matches(s, ref::sum(x), kt::tol_for(c.out)));
  }
}

// tinygrad accumulates float16/bfloat16 sums in float32 and casts the result back. Accumulating in
// the half type itself gets stuck: 2048 + 1 == 2048 in float16, 256 + 1 == 256 in bfloat16.
TEST(ReduceDtypes, HalfSumsAccumulateInFloat32) {
  Tensor h = kt::make(NdArray({4096}, 1.0), dtypes::float16);
  h.realize();
  EXPECT_EQ(h.sum().dtype(), dtypes::float16);
  EXPECT_TRUE(kt::matches(h.sum(), NdArray(Shape{}, 4096.0)));
  Tensor b = kt::make(NdArray({1024}, 1.0), dtypes::bfloat16);
  b.realize();
  EXPECT_EQ(b.sum().dtype(), dtypes::bfloat16);
  EXPECT_TRUE(kt::matches(b.sum(), NdArray(Shape{}, 1024.0)));
  EXPECT_TRUE(kt::matches(h.mean(), NdArray(Shape{}, 1.0)));
}

TEST(ReduceDtypes, BoolSumCounts) {
  NdArray x = kt::wrap(ref::random({13, 31}, 1201), dtypes::float32);
  Tensor positive = kt::make(x).gt(Tensor::zeros({}));
  NdArray want = ref::sum(ref::map(x, [](double v) { return v > 0 ? 1.0 : 0.0; }), {1});
  EXPECT_EQ(positive.sum({1}).dtype(), dtypes::int32);
  EXPECT_TRUE(kt::matches(positive.sum({1}), want));
}

class ReducePerDtype : public ::testing::TestWithParam<DType> {};

TEST_P(ReducePerDtype, MaxMinKeepDtypeSumMatches) {
  DType dt = GetParam();
  NdArray x = kt::random_for(dt, {5, 7}, 1300);
  Tensor t = kt::make(x, dt);
  EXPECT_EQ(t.max({1}).dtype(), dt);
  EXPECT_EQ(t.min({1}).dtype(), dt);
  EXPECT_TRUE(kt::matches(t.max({1}), ref::max(x, {1}), kt::Tol{0, 0}));
  EXPECT_TRUE(kt::matches(t.min({1}), ref::min(x, {1}), kt::Tol{0, 0}));
  EXPECT_TRUE(kt::matches(t.max({0}, true), ref::max(x, {0}, true), kt::Tol{0, 0}));
  Tensor s = t.sum({1});
  EXPECT_TRUE(kt::matches(s, ref::sum(x, {1}), kt::tol_for(s.dtype())));
}

TEST_P(ReducePerDtype, MeanIsFloat) {
  DType dt = GetParam();
  if (dt.is_bool()) GTEST_SKIP() << "mean of bool is not meaningful";
  NdArray x = dt.is_unsigned() ? ref::random_int({5, 7}, 1301, 0, 100)
              : dt.is_int()    ? ref::random_int({5, 7}, 1301, -100, 100)
                               : ref::random_grid({5, 7}, 1301, -8, 8, 0.25);
  Tensor m = kt::make(x, dt).mean({1});
  DType want = dt.is_float() ? dt : dtypes::float32;
  EXPECT_EQ(m.dtype(), want);
  EXPECT_TRUE(kt::matches(m, ref::mean(x, {1}), kt::tol_for(want)));
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, ReducePerDtype, ::testing::ValuesIn(dtypes::all()), kt::dtype_param_name);

TEST(ReduceDtypes, ProdOfIntegers) {
  Tensor i = Tensor::from_vector<int32_t>({1, -2, 3, 4, 5, -6}, {2, 3});
  EXPECT_TRUE(kt::matches(i.prod({1}), NdArray({2}, {-6, -120})));
  EXPECT_TRUE(kt::matches(i.prod(), NdArray(Shape{}, std::vector<double>{720})));
}

// ============================================================================ argmax / argmin

TEST(Argmax, TiesGiveTheFirstIndex) {
  Tensor t = Tensor::from_vector<float>({1, 3, 3, 2, 5, 5, 5, 5, -1, -2, -3, -4}, {3, 4});
  Tensor a = t.argmax(1);
  EXPECT_EQ(a.dtype(), dtypes::int32);
  EXPECT_EQ(a.shape(), (Shape{3}));
  EXPECT_EQ(a.to_vector<int32_t>(), (std::vector<int32_t>{1, 0, 0}));
  EXPECT_EQ(t.argmax(0).to_vector<int32_t>(), (std::vector<int32_t>{1, 1, 1, 1}));
  EXPECT_EQ(t.argmax(-1).to_vector<int32_t>(), (std::vector<int32_t>{1, 0, 0}));
  Tensor k = t.argmax(1, true);
  EXPECT_EQ(k.shape(), (Shape{3, 1}));
  EXPECT_EQ(k.to_vector<int32_t>(), (std::vector<int32_t>{1, 0, 0}));
  EXPECT_EQ(t.argmin(1).to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 3}));
  EXPECT_EQ(t.argmin(0).to_vector<int32_t>(), (std::vector<int32_t>{2, 2, 2, 2}));
}

TEST(Argmax, MatchesReferenceOnRandomData) {
  NdArray x = kt::wrap(ref::random({13, 31}, 1400), dtypes::float32);
  Tensor t = kt::make(x);
  for (int axis : {0, 1, -1, -2}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    EXPECT_TRUE(kt::matches(t.argmax(axis), ref::argmax(x, axis)));
    EXPECT_TRUE(kt::matches(t.argmin(axis), ref::argmin(x, axis)));
  }
  NdArray y = kt::wrap(ref::random({3, 7, 13}, 1401), dtypes::float32);
  EXPECT_TRUE(kt::matches(kt::make(y).argmax(1, true), ref::argmax(y, 1, true)));
}

TEST(Argmax, IntegersNegativesAndScalarResults) {
  NdArray x = ref::random_int({97}, 1402, -50, -10);  // all negative, with ties
  Tensor t = kt::make(x, dtypes::int32);
  Tensor a = t.argmax(0);
  EXPECT_EQ(a.shape(), Shape{});
  EXPECT_EQ(a.dtype(), dtypes::int32);
  EXPECT_EQ(a.item<int32_t>(), static_cast<int32_t>(ref::argmax(x, 0).data[0]));
  EXPECT_EQ(t.argmin(0).item<int32_t>(), static_cast<int32_t>(ref::argmin(x, 0).data[0]));
  Tensor u = Tensor::from_vector<uint8_t>({0, 255, 7, 255}, {4});
  EXPECT_EQ(u.argmax(0).item<int32_t>(), 1);
  Tensor one = Tensor::from_vector<float>({4.5f}, {1, 1});
  EXPECT_EQ(one.argmax(1).to_vector<int32_t>(), (std::vector<int32_t>{0}));
}

// ============================================================================ softmax family

struct SoftmaxConfig {
  Shape shape;
  int axis;
};

const std::vector<SoftmaxConfig> kSoftmaxConfigs = {
    {{7, 13}, 0}, {{7, 13}, 1}, {{7, 13}, -1}, {{3, 5, 4}, 0}, {{3, 5, 4}, 1}, {{3, 5, 4}, -1}, {{1, 9}, 0}, {{97}, 0},
};

TEST(Softmax, MatchesReferenceOnEveryAxis) {
  uint64_t seed = 1500;
  for (const SoftmaxConfig& c : kSoftmaxConfigs) {
    SCOPED_TRACE("softmax of " + ref::shape_str(c.shape) + " axis " + std::to_string(c.axis));
    NdArray x = kt::wrap(ref::random(c.shape, seed++, -4, 4), dtypes::float32);
    Tensor t = kt::make(x);
    Tensor s = t.softmax(c.axis);
    EXPECT_EQ(s.shape(), c.shape);
    EXPECT_TRUE(kt::matches(s, ref::softmax(x, c.axis)));
    EXPECT_TRUE(kt::matches(s.sum({c.axis}), ref::NdArray(ref::reduced_shape(c.shape, {c.axis}, false), 1.0)));
  }
}

TEST(Softmax, LogSoftmaxMatchesReferenceOnEveryAxis) {
  uint64_t seed = 1600;
  for (const SoftmaxConfig& c : kSoftmaxConfigs) {
    SCOPED_TRACE("log_softmax of " + ref::shape_str(c.shape) + " axis " + std::to_string(c.axis));
    NdArray x = kt::wrap(ref::random(c.shape, seed++, -4, 4), dtypes::float32);
    EXPECT_TRUE(kt::matches(kt::make(x).log_softmax(c.axis), ref::log_softmax(x, c.axis)));
  }
}

TEST(Softmax, DefaultAxisIsLast) {
  NdArray x = kt::wrap(ref::random({4, 6}, 1700), dtypes::float32);
  EXPECT_TRUE(kt::matches(kt::make(x).softmax(), ref::softmax(x, -1)));
  EXPECT_TRUE(kt::matches(kt::make(x).log_softmax(), ref::log_softmax(x, -1)));
}

TEST(Softmax, StableForLargeInputs) {
  NdArray x({2, 3}, {1000, 1001, 1002, -1000, -1001, -1002});
  Tensor t = kt::make(x);
  EXPECT_TRUE(kt::matches(t.softmax(1), ref::softmax(x, 1)));
  EXPECT_TRUE(kt::matches(t.log_softmax(1), ref::log_softmax(x, 1)));
  EXPECT_TRUE(kt::matches(t.logsumexp(1), ref::logsumexp(x, 1)));
}

TEST(Softmax, NegativeInfinityEntriesGetZeroProbability) {
  Tensor t(std::vector<float>{-INFINITY, 0, 0, -INFINITY, 1, 2});
  Tensor s = t.reshape({2, 3}).softmax(1);
  NdArray want({2, 3}, {0, 0.5, 0.5, 0, 1 / (1 + std::exp(1.0)), 1 / (1 + std::exp(-1.0))});
  EXPECT_TRUE(kt::matches(s, want));
}

TEST(Softmax, Logsumexp) {
  NdArray x = kt::wrap(ref::random({7, 13}, 1701, -4, 4), dtypes::float32);
  Tensor t = kt::make(x);
  EXPECT_TRUE(kt::matches(t.logsumexp(0), ref::logsumexp(x, 0)));
  EXPECT_TRUE(kt::matches(t.logsumexp(-1, true), ref::logsumexp(x, -1, true)));
}

TEST(Softmax, Float64) {
  NdArray x = ref::random({5, 11}, 1702, -4, 4);
  Tensor s = kt::make(x, dtypes::float64).softmax(1);
  EXPECT_EQ(s.dtype(), dtypes::float64);
  EXPECT_TRUE(kt::matches(s, ref::softmax(x, 1), kt::Tol{1e-9, 1e-12}));
}

// ============================================================================ empty tensors

TEST(ReduceEmpty, SumOverAnEmptyAxisIsZero) {
  Tensor z = Tensor::ones({4, 0, 3});
  Tensor s = z.sum({1});
  EXPECT_EQ(s.shape(), (Shape{4, 3}));
  EXPECT_TRUE(kt::matches(s, NdArray({4, 3}, 0.0)));
  EXPECT_TRUE(kt::matches(z.sum({1}, true), NdArray({4, 1, 3}, 0.0)));
  EXPECT_TRUE(kt::matches(Tensor::ones({0}).sum(), NdArray(Shape{}, 0.0)));
  EXPECT_TRUE(kt::matches(Tensor::ones({0, 5}).sum({0}), NdArray({5}, 0.0)));
  Tensor zi = Tensor::ones({0, 2}, dtypes::int32);
  EXPECT_TRUE(kt::matches(zi.sum({0}), NdArray({2}, 0.0)));
}

TEST(ReduceEmpty, SumOverANonEmptyAxisOfAnEmptyTensorIsEmpty) {
  Tensor z = Tensor::ones({4, 0, 3});
  Tensor s = z.sum({2});
  EXPECT_EQ(s.shape(), (Shape{4, 0}));
  EXPECT_TRUE(s.to_vector<float>().empty());
  EXPECT_TRUE(z.max({0}).to_vector<float>().empty());
  EXPECT_EQ(z.max({0}).shape(), (Shape{0, 3}));
}

}  // namespace
