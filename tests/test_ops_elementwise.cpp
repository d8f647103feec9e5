// Operator tests, part 1: creation, elementwise ops, broadcasting, scalars, comparisons, where
// and random numbers — each compared with the double-precision reference in reference.h over odd
// shapes (primes, 1s, 0s, scalars). The dtypes (arithmetic per dtype, wraparound, promotion, casts)
// are part 4, test_ops_dtypes.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
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

// Odd shapes: a scalar, size-1 dims, primes, and empty tensors. Every op runs on kOpShapes; a few
// representative ops run on all of kAllShapes (each distinct shape is a compiled kernel, so the full
// cross product would make the suite slow on a cold kernel cache).
const std::vector<Shape> kAllShapes = {{}, {1}, {7}, {13, 1}, {1, 31}, {3, 7, 13}, {97}, {0}, {4, 0, 3}};
const std::vector<Shape> kOpShapes = {{3, 7, 13}, {0}, {4, 0, 3}};

// Pairs of shapes that broadcast (NumPy rules), including scalars on either side and empty results.
const std::vector<std::pair<Shape, Shape>> kAllPairs = {
    {{3, 1, 5}, {4, 1}}, {{4, 1}, {3, 1, 5}}, {{}, {7}},         {{7}, {}},        {{}, {}},         {{13, 1}, {1, 31}},
    {{1}, {1}},          {{2, 3}, {2, 3}},    {{1, 1, 1}, {97}}, {{0, 3}, {1, 3}}, {{4, 1}, {4, 0}},
};
const std::vector<std::pair<Shape, Shape>> kOpPairs = {{{3, 1, 5}, {4, 1}}, {{0, 3}, {1, 3}}};

// Values away from zero (|v| in [0.5, 3.5)), for divisors and reciprocals.
NdArray nonzero(const Shape& s, uint64_t seed) {
  return ref::map(ref::random(s, seed, -3, 3), [](double v) { return v >= 0 ? v + 0.5 : v - 0.5; });
}

// ============================================================================ creation

TEST(Creation, FromValuesIsOneDimensionalFloat32) {
  Tensor t(std::vector<float>{1.5f, -2.0f, 3.25f});
  EXPECT_EQ(t.shape(), (Shape{3}));
  EXPECT_EQ(t.dtype(), dtypes::float32);
  EXPECT_EQ(t.numel(), 3);
  EXPECT_EQ(t.ndim(), 1);
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1.5f, -2.0f, 3.25f}));
}

TEST(Creation, DtypeOfMapsCxxTypes) {
  EXPECT_EQ(kiln::dtype_of<bool>(), dtypes::bool_);
  EXPECT_EQ(kiln::dtype_of<int8_t>(), dtypes::int8);
  EXPECT_EQ(kiln::dtype_of<int16_t>(), dtypes::int16);
  EXPECT_EQ(kiln::dtype_of<int32_t>(), dtypes::int32);
  EXPECT_EQ(kiln::dtype_of<int64_t>(), dtypes::int64);
  EXPECT_EQ(kiln::dtype_of<uint8_t>(), dtypes::uint8);
  EXPECT_EQ(kiln::dtype_of<uint16_t>(), dtypes::uint16);
  EXPECT_EQ(kiln::dtype_of<uint32_t>(), dtypes::uint32);
  EXPECT_EQ(kiln::dtype_of<uint64_t>(), dtypes::uint64);
  EXPECT_EQ(kiln::dtype_of<float>(), dtypes::float32);
  EXPECT_EQ(kiln::dtype_of<double>(), dtypes::float64);
}

class CreationPerDtype : public ::testing::TestWithParam<DType> {};

TEST_P(CreationPerDtype, FromVectorRoundTrips) {
  DType dt = GetParam();
  NdArray a = kt::random_for(dt, {2, 3}, 1);
  Tensor t = kt::make(a, dt);
  EXPECT_EQ(t.dtype(), dt);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.ndim(), 2);
  EXPECT_EQ(t.nbytes(), 6 * dt.itemsize());
  EXPECT_TRUE(kt::matches(t, a, kt::Tol{0, 0}));  // exactly representable values
}

TEST_P(CreationPerDtype, ScalarShape) {
  DType dt = GetParam();
  NdArray a(Shape{}, std::vector<double>{1});
  Tensor t = kt::make(a, dt);
  EXPECT_EQ(t.shape(), Shape{});
  EXPECT_EQ(t.numel(), 1);
  EXPECT_EQ(t.ndim(), 0);
  EXPECT_TRUE(kt::matches(t, a, kt::Tol{0, 0}));
}

TEST_P(CreationPerDtype, ZerosOnesFull) {
  DType dt = GetParam();
  Shape s{3, 1, 5};
  EXPECT_TRUE(kt::matches(Tensor::zeros(s, dt), NdArray(s, 0), kt::Tol{0, 0}));
  EXPECT_TRUE(kt::matches(Tensor::ones(s, dt), NdArray(s, 1), kt::Tol{0, 0}));
  double v = dt.is_bool() ? 1 : 7;
  Tensor f = Tensor::full(s, v, dt);
  EXPECT_EQ(f.dtype(), dt);
  EXPECT_TRUE(kt::matches(f, NdArray(s, v), kt::Tol{0, 0}));
  EXPECT_EQ(Tensor::zeros(s, dt).dtype(), dt);
  EXPECT_EQ(Tensor::ones(s, dt).dtype(), dt);
}

TEST_P(CreationPerDtype, EmptyHasShapeAndDtype) {
  DType dt = GetParam();
  Tensor e = Tensor::empty({4, 7}, dt);
  EXPECT_EQ(e.shape(), (Shape{4, 7}));
  EXPECT_EQ(e.dtype(), dt);
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, CreationPerDtype, ::testing::ValuesIn(dtypes::all()), kt::dtype_param_name);

TEST(Creation, DefaultsAreFloat32) {
  EXPECT_EQ(Tensor::zeros({2}).dtype(), dtypes::float32);
  EXPECT_EQ(Tensor::ones({2}).dtype(), dtypes::float32);
  EXPECT_EQ(Tensor::full({2}, 1.5).dtype(), dtypes::float32);
  EXPECT_EQ(Tensor::empty({2}).dtype(), dtypes::float32);
  EXPECT_EQ(Tensor::eye(2).dtype(), dtypes::float32);
  EXPECT_EQ(Tensor::rand({2}).dtype(), dtypes::float32);
  EXPECT_EQ(Tensor::randn({2}).dtype(), dtypes::float32);
  EXPECT_EQ(Tensor::arange(0, 3).dtype(), dtypes::int32);
}

TEST(Creation, FullWithFraction) {
  EXPECT_TRUE(kt::matches(Tensor::full({2, 3}, -1.25), NdArray({2, 3}, -1.25)));
  EXPECT_TRUE(kt::matches(Tensor::full({}, 3.5), NdArray(Shape{}, 3.5)));
  EXPECT_TRUE(kt::matches(Tensor::full({0, 4}, 3.5), NdArray({0, 4})));
}

TEST(Creation, LikeConstructors) {
  Tensor a = kt::make(ref::random({3, 5}, 2), dtypes::float32);
  Tensor i = kt::make(ref::random_int({3, 5}, 3, -5, 5), dtypes::int32);
  EXPECT_TRUE(kt::matches(a.zeros_like(), NdArray({3, 5}, 0)));
  EXPECT_TRUE(kt::matches(a.ones_like(), NdArray({3, 5}, 1)));
  EXPECT_TRUE(kt::matches(a.full_like(2.5), NdArray({3, 5}, 2.5)));
  EXPECT_EQ(i.zeros_like().dtype(), dtypes::int32);
  EXPECT_TRUE(kt::matches(i.full_like(4), NdArray({3, 5}, 4)));
}

TEST(Creation, Arange) {
  EXPECT_TRUE(kt::matches(Tensor::arange(0, 10), NdArray({10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9})));
  EXPECT_TRUE(kt::matches(Tensor::arange(2, 11, 3), NdArray({3}, {2, 5, 8})));
  EXPECT_TRUE(kt::matches(Tensor::arange(10, 0, -3), NdArray({4}, {10, 7, 4, 1})));
  EXPECT_TRUE(kt::matches(Tensor::arange(-3, 2), NdArray({5}, {-3, -2, -1, 0, 1})));
  Tensor f = Tensor::arange(0, 1, 0.25, dtypes::float32);
  EXPECT_EQ(f.dtype(), dtypes::float32);
  EXPECT_TRUE(kt::matches(f, NdArray({4}, {0, 0.25, 0.5, 0.75})));
  EXPECT_TRUE(kt::matches(Tensor::arange(0.5, 3, 1, dtypes::float32), NdArray({3}, {0.5, 1.5, 2.5})));
  Tensor big = Tensor::arange(0, 97, 1, dtypes::int64);
  EXPECT_EQ(big.dtype(), dtypes::int64);
  NdArray want({97});
  for (int i = 0; i < 97; i++) want.data[i] = i;
  EXPECT_TRUE(kt::matches(big, want));
  Tensor none = Tensor::arange(0, 0);
  EXPECT_EQ(none.shape(), (Shape{0}));
  EXPECT_TRUE(none.to_vector<int32_t>().empty());
}

// Without a dtype, a fractional start, stop or step gives float32 (tinygrad), not int32 zeros; the
// length is ceil((stop - start) / step), as NumPy's.
TEST(Creation, ArangeInfersFloatFromFractions) {
  Tensor quarters = Tensor::arange(0, 1, 0.25);
  EXPECT_EQ(quarters.dtype(), dtypes::float32);
  EXPECT_TRUE(kt::matches(quarters, NdArray({4}, {0, 0.25, 0.5, 0.75})));
  EXPECT_TRUE(kt::matches(Tensor::arange(0, 1, 0.3), NdArray({4}, {0, 0.3, 0.6, 0.9})));
  EXPECT_TRUE(kt::matches(Tensor::arange(0.5, 3), NdArray({3}, {0.5, 1.5, 2.5})));
  EXPECT_TRUE(kt::matches(Tensor::arange(1, 2.5), NdArray({2}, {1, 2})));
  EXPECT_EQ(Tensor::arange(1, 2.5).dtype(), dtypes::float32);
  EXPECT_TRUE(kt::matches(Tensor::arange(2, -1, -1.5), NdArray({2}, {2, 0.5})));
  EXPECT_EQ(Tensor::arange(0, 6, 2).dtype(), dtypes::int32);
  // an explicit dtype wins, even when it truncates
  Tensor truncated = Tensor::arange(0, 1, 0.25, dtypes::int32);
  EXPECT_EQ(truncated.dtype(), dtypes::int32);
  EXPECT_TRUE(kt::matches(truncated, NdArray({4}, {0, 0, 0, 0})));
  EXPECT_EQ(Tensor::arange(0, 3, 1, dtypes::float64).dtype(), dtypes::float64);
}

TEST(Creation, ArangeWithOnlyStop) {
  Tensor five = Tensor::arange(5);
  EXPECT_EQ(five.dtype(), dtypes::int32);
  EXPECT_TRUE(kt::matches(five, NdArray({5}, {0, 1, 2, 3, 4})));
  EXPECT_EQ(Tensor::arange(2.5).dtype(), dtypes::float32);
  EXPECT_TRUE(kt::matches(Tensor::arange(2.5), NdArray({3}, {0, 1, 2})));
  EXPECT_EQ(Tensor::arange(-2).shape(), (Shape{0}));
}

// A short range of whole numbers (a table of bit shifts) is index math in the kernel that reads it,
// in every dtype: the kernel has no input buffer, and its values are start + i * step (a double loop).
TEST(Creation, ShortArangeIsIndexMathInEveryDtype) {
  struct Range {
    double start, stop, step;
  };
  for (DType dtype : {dtypes::uint8, dtypes::int8, dtypes::int16, dtypes::uint16, dtypes::int32, dtypes::uint32,
                      dtypes::int64, dtypes::uint64, dtypes::float16, dtypes::bfloat16, dtypes::float32,
                      dtypes::float64}) {
    // the nibble shifts; then 13 values from an offset, going down where the dtype has negatives
    const Range ranges[] = {{0, 8, 4}, dtype.is_unsigned() ? Range{3, 64, 5} : Range{9, -7, -3}};
    for (const Range& r : ranges) {
      SCOPED_TRACE(std::string(dtype.name()) + " arange(" + std::to_string(r.start) + ", " + std::to_string(r.stop) +
                   ", " + std::to_string(r.step) + ")");
      const Tensor t = Tensor::arange(r.start, r.stop, r.step, dtype);
      ASSERT_EQ(t.dtype(), dtype);
      const std::vector<kiln::ScheduleItem> items = t.schedule();
      ASSERT_EQ(items.size(), 1u);
      EXPECT_EQ(items[0].buffers.size(), 1u) << items[0].str();  // the output alone
      const std::vector<double> got = t.cast(dtypes::float64).to_vector<double>();
      ASSERT_EQ(got.size(), static_cast<size_t>(std::ceil((r.stop - r.start) / r.step)));
      for (size_t i = 0; i < got.size(); i++) EXPECT_EQ(got[i], r.start + static_cast<double>(i) * r.step) << i;
    }
  }
  // longer ranges stay a buffer, converted on the host into the dtype (no float64 table cast per element)
  const Tensor bytes = Tensor::arange(0, 250, 1, dtypes::uint8);
  const std::vector<kiln::ScheduleItem> items = (bytes + Tensor::full({}, int64_t{1}, dtypes::uint8)).schedule();
  ASSERT_EQ(items.size(), 1u);
  ASSERT_EQ(items[0].buffers.size(), 2u);
  EXPECT_EQ(items[0].buffers[1]->dtype.base(), dtypes::uint8) << items[0].str();
  const std::vector<uint8_t> values = bytes.to_vector<uint8_t>();
  for (size_t i = 0; i < values.size(); i++) EXPECT_EQ(values[i], i) << i;
}

TEST(Creation, Eye) {
  for (int64_t n : {1, 2, 7}) {
    SCOPED_TRACE("eye(" + std::to_string(n) + ")");
    NdArray want({n, n});
    for (int64_t i = 0; i < n; i++) want.at({i, i}) = 1;
    EXPECT_TRUE(kt::matches(Tensor::eye(n), want));
    Tensor ei = Tensor::eye(n, dtypes::int32);
    EXPECT_EQ(ei.dtype(), dtypes::int32);
    EXPECT_TRUE(kt::matches(ei, want));
  }
}

// ============================================================================ random numbers

struct Moments {
  double mean, var, lo, hi;
};

Moments moments(const std::vector<float>& v) {
  double s = 0, lo = 1e300, hi = -1e300;
  for (float x : v) {
    s += x;
    lo = std::min<double>(lo, x);
    hi = std::max<double>(hi, x);
  }
  double m = s / v.size(), q = 0;
  for (float x : v) q += (x - m) * (x - m);
  return {m, q / v.size(), lo, hi};
}

TEST(Random, RandIsUniformOnZeroOne) {
  Tensor::manual_seed(7);
  Tensor r = Tensor::rand({100000});
  EXPECT_EQ(r.shape(), (Shape{100000}));
  EXPECT_EQ(r.dtype(), dtypes::float32);
  std::vector<float> v = r.to_vector<float>();
  Moments m = moments(v);
  EXPECT_GE(m.lo, 0.0);
  EXPECT_LT(m.hi, 1.0);
  // mean 1/2 (sd of the sample mean 0.0009), variance 1/12 (sd of the sample variance ~0.0003)
  EXPECT_NEAR(m.mean, 0.5, 0.005);
  EXPECT_NEAR(m.var, 1.0 / 12, 0.003);
  // ten bins of 10^4 expected each (sd 95): all within 5%
  std::vector<int> bins(10, 0);
  for (float x : v) bins[std::min(9, static_cast<int>(x * 10))]++;
  for (int b = 0; b < 10; b++) EXPECT_NEAR(bins[b], 10000, 500) << "bin " << b;
}

// The device generator computes splitmix64(seed ^ splitmix64(counter + i)) in uint64 kernels: the
// same function on the host gives the same numbers, and consecutive draws continue the counter.
uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

TEST(Random, MatchesTheSplitmixReference) {
  const uint64_t seed = 0x1234abcd5678ULL;
  Tensor::manual_seed(seed);
  std::vector<double> first = Tensor::rand({3000}, dtypes::float64).to_vector<double>();
  std::vector<double> second = Tensor::rand({5}, dtypes::float64).to_vector<double>();
  first.insert(first.end(), second.begin(), second.end());
  for (uint64_t i = 0; i < first.size(); i++) {
    double want = static_cast<double>(splitmix64(seed ^ splitmix64(i)) >> 11) * 0x1.0p-53;
    ASSERT_EQ(first[i], want) << "draw " << i;
  }
}

TEST(Random, RandintIsUniformOverItsRange) {
  Tensor::manual_seed(5);
  Tensor r = Tensor::randint({60000}, -3, 3);
  EXPECT_EQ(r.dtype(), dtypes::int32);
  std::vector<int> counts(6, 0);
  for (int32_t v : r.to_vector<int32_t>()) {
    ASSERT_GE(v, -3);
    ASSERT_LT(v, 3);
    counts[v + 3]++;
  }
  for (int c : counts) EXPECT_NEAR(c, 10000, 500);  // sd ~91
  EXPECT_THROW(Tensor::randint({2}, 3, 3), kiln::Error);
  EXPECT_THROW(Tensor::randint({2}, 0, 3, dtypes::float32), kiln::Error);
}

TEST(Random, RandnIsStandardNormal) {
  Tensor::manual_seed(11);
  Tensor r = Tensor::randn({100000});
  EXPECT_EQ(r.dtype(), dtypes::float32);
  std::vector<float> v = r.to_vector<float>();
  Moments m = moments(v);
  // sd of the sample mean 0.0032, of the sample variance 0.0045
  EXPECT_NEAR(m.mean, 0.0, 0.02);
  EXPECT_NEAR(m.var, 1.0, 0.03);
  int within1 = 0;
  for (float x : v) within1 += std::fabs(x) < 1;
  EXPECT_NEAR(within1 / 100000.0, 0.6827, 0.01);
  for (float x : v) ASSERT_TRUE(std::isfinite(x));
}

TEST(Random, ManualSeedReproduces) {
  Tensor::manual_seed(1234);
  std::vector<float> a = Tensor::rand({3, 333}).to_vector<float>();
  std::vector<float> a2 = Tensor::rand({3, 333}).to_vector<float>();
  Tensor::manual_seed(1234);
  std::vector<float> b = Tensor::rand({3, 333}).to_vector<float>();
  std::vector<float> b2 = Tensor::rand({3, 333}).to_vector<float>();
  EXPECT_EQ(a, b);
  EXPECT_EQ(a2, b2);
  EXPECT_NE(a, a2) << "consecutive rand calls must differ";
  Tensor::manual_seed(4321);
  EXPECT_NE(Tensor::rand({3, 333}).to_vector<float>(), a) << "different seeds must differ";
  Tensor::manual_seed(5);
  std::vector<float> n1 = Tensor::randn({50}).to_vector<float>();
  Tensor::manual_seed(5);
  EXPECT_EQ(Tensor::randn({50}).to_vector<float>(), n1);
}

TEST(Random, ShapesAndDtypes) {
  Tensor r = Tensor::rand({3, 0, 2});
  EXPECT_EQ(r.shape(), (Shape{3, 0, 2}));
  EXPECT_TRUE(r.to_vector<float>().empty());
  Tensor d = Tensor::rand({7, 13}, dtypes::float64);
  EXPECT_EQ(d.dtype(), dtypes::float64);
  for (double x : d.to_vector<double>()) {
    EXPECT_GE(x, 0.0);
    EXPECT_LT(x, 1.0);
  }
  Tensor s = Tensor::randn({});
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_TRUE(std::isfinite(s.item<float>()));
}

// ============================================================================ unary ops

struct UnaryCase {
  std::string name;
  bool all_shapes;  // run over kAllShapes (else kOpShapes)
  std::function<Tensor(const Tensor&)> fn;
  std::function<double(double)> ref;
  std::function<NdArray(const Shape&, uint64_t)> input;
};

std::function<NdArray(const Shape&, uint64_t)> uniform(double lo, double hi) {
  return [lo, hi](const Shape& s, uint64_t seed) { return ref::random(s, seed, lo, hi); };
}

const std::vector<UnaryCase>& unary_cases() {
  static const std::vector<UnaryCase> cases = {
      {"neg", true, [](const Tensor& t) { return -t; }, [](double x) { return -x; }, uniform(-3, 3)},
      {"neg_method", false, [](const Tensor& t) { return t.neg(); }, [](double x) { return -x; }, uniform(-3, 3)},
      {"relu", false, [](const Tensor& t) { return t.relu(); }, [](double x) { return x > 0 ? x : 0; }, uniform(-3, 3)},
      {"exp", true, [](const Tensor& t) { return t.exp(); }, [](double x) { return std::exp(x); }, uniform(-5, 5)},
      {"exp2", false, [](const Tensor& t) { return t.exp2(); }, [](double x) { return std::exp2(x); }, uniform(-5, 5)},
      {"log", false, [](const Tensor& t) { return t.log(); }, [](double x) { return std::log(x); }, uniform(0.01, 10)},
      {"log2", false, [](const Tensor& t) { return t.log2(); }, [](double x) { return std::log2(x); },
       uniform(0.01, 10)},
      {"sqrt", true, [](const Tensor& t) { return t.sqrt(); }, [](double x) { return std::sqrt(x); }, uniform(0, 10)},
      {"rsqrt", false, [](const Tensor& t) { return t.rsqrt(); }, [](double x) { return 1 / std::sqrt(x); },
       uniform(0.1, 10)},
      {"sin", false, [](const Tensor& t) { return t.sin(); }, [](double x) { return std::sin(x); }, uniform(-10, 10)},
      {"cos", false, [](const Tensor& t) { return t.cos(); }, [](double x) { return std::cos(x); }, uniform(-10, 10)},
      {"tanh", false, [](const Tensor& t) { return t.tanh(); }, [](double x) { return std::tanh(x); }, uniform(-5, 5)},
      {"sigmoid", false, [](const Tensor& t) { return t.sigmoid(); }, [](double x) { return 1 / (1 + std::exp(-x)); },
       uniform(-10, 10)},
      {"abs", false, [](const Tensor& t) { return t.abs(); }, [](double x) { return std::fabs(x); }, uniform(-3, 3)},
      {"reciprocal", false, [](const Tensor& t) { return t.reciprocal(); }, [](double x) { return 1 / x; }, nonzero},
      {"square", false, [](const Tensor& t) { return t.square(); }, [](double x) { return x * x; }, uniform(-3, 3)},
      {"sign", false, [](const Tensor& t) { return t.sign(); }, [](double x) { return double((x > 0) - (x < 0)); },
       uniform(-3, 3)},
      {"trunc", false, [](const Tensor& t) { return t.trunc(); }, [](double x) { return std::trunc(x); },
       uniform(-5, 5)},
      {"floor", false, [](const Tensor& t) { return t.floor(); }, [](double x) { return std::floor(x); },
       uniform(-5, 5)},
      {"ceil", false, [](const Tensor& t) { return t.ceil(); }, [](double x) { return std::ceil(x); }, uniform(-5, 5)},
      {"clip", false, [](const Tensor& t) { return t.clip(-0.5, 1.25); },
       [](double x) { return std::min(1.25, std::max(-0.5, x)); }, uniform(-3, 3)},
      {"pow_2", false, [](const Tensor& t) { return t.pow(2.0); }, [](double x) { return x * x; }, uniform(-3, 3)},
      {"pow_3_negative_base", false, [](const Tensor& t) { return t.pow(3.0); }, [](double x) { return x * x * x; },
       uniform(-2, 2)},
      {"pow_half", false, [](const Tensor& t) { return t.pow(0.5); }, [](double x) { return std::sqrt(x); },
       uniform(0, 10)},
      {"pow_neg_1_5", false, [](const Tensor& t) { return t.pow(-1.5); }, [](double x) { return std::pow(x, -1.5); },
       uniform(0.5, 4)},
      {"pow_0", false, [](const Tensor& t) { return t.pow(0.0); }, [](double) { return 1.0; }, uniform(-3, 3)},
  };
  return cases;
}

class Unary : public ::testing::TestWithParam<size_t> {};

TEST_P(Unary, MatchesReferenceOverShapes) {
  const UnaryCase& c = unary_cases()[GetParam()];
  uint64_t seed = 100;
  for (const Shape& s : c.all_shapes ? kAllShapes : kOpShapes) {
    SCOPED_TRACE(c.name + " on shape " + ref::shape_str(s));
    NdArray x = kt::wrap(c.input(s, seed++), dtypes::float32);  // inputs exactly as kiln sees them
    Tensor out = c.fn(kt::make(x));
    EXPECT_EQ(out.dtype(), dtypes::float32);
    EXPECT_TRUE(kt::matches(out, ref::map(x, c.ref)));
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, Unary, ::testing::Range<size_t>(0, unary_cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& i) { return unary_cases()[i.param].name; });

TEST(UnaryValues, SpecialValues) {
  Tensor x(std::vector<float>{0.0f, 1.0f, -1.0f, 4.0f});
  EXPECT_TRUE(kt::matches(x.exp(), NdArray({4}, {1, std::exp(1.0), std::exp(-1.0), std::exp(4.0)})));
  EXPECT_TRUE(kt::matches(x.relu(), NdArray({4}, {0, 1, 0, 4})));
  EXPECT_TRUE(kt::matches(
      x.sigmoid(), NdArray({4}, {0.5, 1 / (1 + std::exp(-1.0)), 1 / (1 + std::exp(1.0)), 1 / (1 + std::exp(-4.0))})));
  // log(0) = -inf, sqrt(4) exact, reciprocal(0) = +inf
  Tensor z(std::vector<float>{0.0f});
  EXPECT_EQ(z.log().item<float>(), -INFINITY);
  EXPECT_EQ(Tensor(std::vector<float>{4.0f}).sqrt().item<float>(), 2.0f);
  EXPECT_EQ(z.reciprocal().item<float>(), INFINITY);
  // sigmoid saturates without NaN
  Tensor big(std::vector<float>{-100.0f, 100.0f});
  EXPECT_TRUE(kt::matches(big.sigmoid(), NdArray({2}, {0, 1})));
  EXPECT_TRUE(kt::matches(big.tanh(), NdArray({2}, {-1, 1})));
}

TEST(UnaryValues, RoundIsHalfToEven) {
  Tensor x(std::vector<float>{-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 2.4f, -2.6f});
  EXPECT_TRUE(kt::matches(x.round(), NdArray({8}, {-2, -2, 0, 0, 2, 2, 2, -3})));
}

TEST(UnaryValues, ChainedUnaryOps) {
  NdArray x = ref::random({7, 13}, 5, -2, 2);
  Tensor t = kt::make(x);
  Tensor out = (t.sin().exp() + t.cos().abs().sqrt()).tanh().sigmoid();
  NdArray want = ref::map(x, [](double v) {
    double r = std::tanh(std::exp(std::sin(v)) + std::sqrt(std::fabs(std::cos(v))));
    return 1 / (1 + std::exp(-r));
  });
  EXPECT_TRUE(kt::matches(out, want));
}

TEST(UnaryValues, Float64Precision) {
  NdArray x = ref::random({31}, 6, 0.1, 4);
  Tensor t = kt::make(x, dtypes::float64);
  EXPECT_EQ(t.exp().dtype(), dtypes::float64);
  EXPECT_TRUE(kt::matches(t.exp(), ref::map(x, [](double v) { return std::exp(v); }), kt::Tol{1e-9, 1e-12}));
  EXPECT_TRUE(kt::matches(t.log(), ref::map(x, [](double v) { return std::log(v); }), kt::Tol{1e-9, 1e-12}));
  EXPECT_TRUE(kt::matches(t.sqrt(), ref::map(x, [](double v) { return std::sqrt(v); }), kt::Tol{1e-12, 1e-14}));
  EXPECT_TRUE(kt::matches(t.sin(), ref::map(x, [](double v) { return std::sin(v); }), kt::Tol{1e-9, 1e-12}));
}

// Unary float ops on integer tensors compute in float (tinygrad): sqrt of int32 is float32.
TEST(UnaryValues, FloatOpsOnIntegersGiveFloat) {
  Tensor i = Tensor::from_vector<int32_t>({1, 4, 9, 16}, {4});
  Tensor r = i.sqrt();
  EXPECT_EQ(r.dtype(), dtypes::float32);
  EXPECT_TRUE(kt::matches(r, NdArray({4}, {1, 2, 3, 4})));
  EXPECT_EQ(i.exp().dtype(), dtypes::float32);
  // abs, neg, relu keep integers
  Tensor n = Tensor::from_vector<int32_t>({-3, 0, 5}, {3});
  EXPECT_EQ(n.abs().dtype(), dtypes::int32);
  EXPECT_TRUE(kt::matches(n.abs(), NdArray({3}, {3, 0, 5})));
  EXPECT_TRUE(kt::matches(-n, NdArray({3}, {3, 0, -5})));
  EXPECT_TRUE(kt::matches(n.relu(), NdArray({3}, {0, 0, 5})));
}

// ============================================================================ binary ops

struct BinaryCase {
  std::string name;
  bool all_pairs;  // run over kAllPairs (else kOpPairs)
  std::function<Tensor(const Tensor&, const Tensor&)> fn;
  std::function<double(double, double)> ref;
  std::function<NdArray(const Shape&, uint64_t)> lhs, rhs;
};

const std::vector<BinaryCase>& binary_cases() {
  static const std::vector<BinaryCase> cases = {
      {"add", true, [](const Tensor& a, const Tensor& b) { return a + b; }, [](double a, double b) { return a + b; },
       uniform(-3, 3), uniform(-3, 3)},
      {"sub", false, [](const Tensor& a, const Tensor& b) { return a - b; }, [](double a, double b) { return a - b; },
       uniform(-3, 3), uniform(-3, 3)},
      {"mul", false, [](const Tensor& a, const Tensor& b) { return a * b; }, [](double a, double b) { return a * b; },
       uniform(-3, 3), uniform(-3, 3)},
      {"div", true, [](const Tensor& a, const Tensor& b) { return a / b; }, [](double a, double b) { return a / b; },
       uniform(-3, 3), nonzero},
      {"add_method", false, [](const Tensor& a, const Tensor& b) { return a.add(b); },
       [](double a, double b) { return a + b; }, uniform(-3, 3), uniform(-3, 3)},
      {"sub_method", false, [](const Tensor& a, const Tensor& b) { return a.sub(b); },
       [](double a, double b) { return a - b; }, uniform(-3, 3), uniform(-3, 3)},
      {"mul_method", false, [](const Tensor& a, const Tensor& b) { return a.mul(b); },
       [](double a, double b) { return a * b; }, uniform(-3, 3), uniform(-3, 3)},
      {"div_method", false, [](const Tensor& a, const Tensor& b) { return a.div(b); },
       [](double a, double b) { return a / b; }, uniform(-3, 3), nonzero},
      {"maximum", false, [](const Tensor& a, const Tensor& b) { return a.maximum(b); },
       [](double a, double b) { return std::max(a, b); }, uniform(-3, 3), uniform(-3, 3)},
      {"minimum", false, [](const Tensor& a, const Tensor& b) { return a.minimum(b); },
       [](double a, double b) { return std::min(a, b); }, uniform(-3, 3), uniform(-3, 3)},
      {"pow", false, [](const Tensor& a, const Tensor& b) { return a.pow(b); },
       [](double a, double b) { return std::pow(a, b); }, uniform(0.5, 3), uniform(-2, 2)},
  };
  return cases;
}

class Binary : public ::testing::TestWithParam<size_t> {};

TEST_P(Binary, BroadcastsLikeNumPy) {
  const BinaryCase& c = binary_cases()[GetParam()];
  uint64_t seed = 200;
  for (const auto& [sa, sb] : c.all_pairs ? kAllPairs : kOpPairs) {
    SCOPED_TRACE(c.name + " on " + ref::shape_str(sa) + " and " + ref::shape_str(sb));
    NdArray a = kt::wrap(c.lhs(sa, seed++), dtypes::float32), b = kt::wrap(c.rhs(sb, seed++), dtypes::float32);
    Tensor out = c.fn(kt::make(a), kt::make(b));
    EXPECT_EQ(out.dtype(), dtypes::float32);
    EXPECT_TRUE(kt::matches(out, ref::zip(a, b, c.ref)));
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, Binary, ::testing::Range<size_t>(0, binary_cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& i) { return binary_cases()[i.param].name; });

TEST(BinaryValues, PowWithNegativeBaseAndIntegerExponent) {
  Tensor base(std::vector<float>{-2, -3, 2, -1.5f, 0});
  Tensor e(std::vector<float>{2, 3, -1, 2, 2});
  EXPECT_TRUE(kt::matches(base.pow(e), NdArray({5}, {4, -27, 0.5, 2.25, 0})));
}

TEST(BinaryValues, SameTensorOnBothSides) {
  NdArray x = ref::random({13, 7}, 9);
  Tensor t = kt::make(x);
  EXPECT_TRUE(kt::matches(t * t + t, ref::map(x, [](double v) { return v * v + v; })));
  EXPECT_TRUE(kt::matches(t - t, NdArray({13, 7}, 0)));
}

// Scalars on both sides of + - * /, with float, double and int C++ scalars.
TEST(Scalars, BothSidesOfEachOperator) {
  for (const Shape& s : {Shape{}, Shape{3, 1, 5}}) {
    SCOPED_TRACE("shape " + ref::shape_str(s));
    NdArray x = kt::wrap(nonzero(s, 300), dtypes::float32);
    Tensor t = kt::make(x);
    auto with = [&](auto f) { return ref::map(x, f); };
    EXPECT_TRUE(kt::matches(t + 2.5f, with([](double v) { return v + 2.5; })));
    EXPECT_TRUE(kt::matches(2.5f + t, with([](double v) { return 2.5 + v; })));
    EXPECT_TRUE(kt::matches(t - 2.5f, with([](double v) { return v - 2.5; })));
    EXPECT_TRUE(kt::matches(2.5f - t, with([](double v) { return 2.5 - v; })));
    EXPECT_TRUE(kt::matches(t * 2.5f, with([](double v) { return v * 2.5; })));
    EXPECT_TRUE(kt::matches(2.5f * t, with([](double v) { return 2.5 * v; })));
    EXPECT_TRUE(kt::matches(t / 2.5f, with([](double v) { return v / 2.5; })));
    EXPECT_TRUE(kt::matches(2.5f / t, with([](double v) { return 2.5 / v; })));
    EXPECT_TRUE(kt::matches(t + 2.5, with([](double v) { return v + 2.5; })));
    EXPECT_TRUE(kt::matches(3 - t, with([](double v) { return 3 - v; })));
    EXPECT_TRUE(kt::matches(t * 3, with([](double v) { return v * 3; })));
    EXPECT_TRUE(kt::matches(1 / t, with([](double v) { return 1 / v; })));
    EXPECT_EQ((t * 3).dtype(), dtypes::float32);
    EXPECT_EQ((t * 2.5).dtype(), dtypes::float32);
    EXPECT_EQ((t + 2.5).shape(), s);
  }
}

TEST(Scalars, ScalarTensorWithScalarTensor) {
  Tensor a = Tensor::full({}, 3.0), b = Tensor::full({}, -1.5);
  Tensor out = (a * b + a) / b;
  EXPECT_EQ(out.shape(), Shape{});
  EXPECT_FLOAT_EQ(out.item<float>(), (3.0f * -1.5f + 3.0f) / -1.5f);
}

// ============================================================================ comparisons and where

struct CompareCase {
  std::string name;
  std::function<Tensor(const Tensor&, const Tensor&)> fn;
  std::function<bool(double, double)> ref;
};

const std::vector<CompareCase> kCompares = {
    {"lt", [](const Tensor& a, const Tensor& b) { return a.lt(b); }, [](double a, double b) { return a < b; }},
    {"gt", [](const Tensor& a, const Tensor& b) { return a.gt(b); }, [](double a, double b) { return a > b; }},
    {"le", [](const Tensor& a, const Tensor& b) { return a.le(b); }, [](double a, double b) { return a <= b; }},
    {"ge", [](const Tensor& a, const Tensor& b) { return a.ge(b); }, [](double a, double b) { return a >= b; }},
    {"eq", [](const Tensor& a, const Tensor& b) { return a.eq(b); }, [](double a, double b) { return a == b; }},
    {"ne", [](const Tensor& a, const Tensor& b) { return a.ne(b); }, [](double a, double b) { return a != b; }},
};

TEST(Compare, EveryComparisonGivesBoolWithBroadcasting) {
  uint64_t seed = 400;
  for (const CompareCase& c : kCompares)
    for (const auto& [sa, sb] : c.name == "lt" ? kAllPairs : kOpPairs) {
      SCOPED_TRACE(c.name + " on " + ref::shape_str(sa) + " and " + ref::shape_str(sb));
      // small integers as floats, so equality is common
      NdArray a = ref::random_int(sa, seed++, -3, 3), b = ref::random_int(sb, seed++, -3, 3);
      Tensor out = c.fn(kt::make(a), kt::make(b));
      EXPECT_EQ(out.dtype(), dtypes::bool_);
      EXPECT_TRUE(kt::matches(out, ref::zip(a, b, [&](double x, double y) { return c.ref(x, y) ? 1.0 : 0.0; })));
    }
}

TEST(Compare, OnEveryNumericDtype) {
  uint64_t seed = 450;
  for (DType dt : kt::numeric_dtypes())
    for (const CompareCase& c : kCompares) {
      if (c.name != "lt" && c.name != "eq") continue;  // the others share their code paths
      SCOPED_TRACE(c.name + " on " + dt.name());
      NdArray a = ref::random_int({5, 7}, seed++, 0, 5), b = ref::random_int({1, 7}, seed++, 0, 5);
      Tensor out = c.fn(kt::make(a, dt), kt::make(b, dt));
      EXPECT_EQ(out.dtype(), dtypes::bool_);
      EXPECT_TRUE(kt::matches(out, ref::zip(a, b, [&](double x, double y) { return c.ref(x, y) ? 1.0 : 0.0; })));
    }
}

TEST(Compare, MixedDtypesPromoteBeforeComparing) {
  Tensor i = Tensor::from_vector<int32_t>({1, 2, 3}, {3});
  Tensor f(std::vector<float>{1.5f, 2.0f, 2.5f});
  EXPECT_TRUE(kt::matches(i.lt(f), NdArray({3}, {1, 0, 0})));
  EXPECT_TRUE(kt::matches(i.eq(f), NdArray({3}, {0, 1, 0})));
  Tensor u = Tensor::from_vector<uint8_t>({0, 200, 255}, {3});
  Tensor s = Tensor::from_vector<int8_t>({-1, 100, -1}, {3});
  EXPECT_TRUE(kt::matches(u.gt(s), NdArray({3}, {1, 1, 1})));  // uint8 vs int8 compare as int16
}

TEST(Compare, LogicalNotAndBoolResults) {
  Tensor a(std::vector<float>{1, 2, 3, 4});
  Tensor b(std::vector<float>{4, 2, 2, 5});
  Tensor m = a.lt(b);
  EXPECT_EQ(m.to_vector<bool>(), (std::vector<bool>{true, false, false, true}));
  EXPECT_EQ(m.logical_not().dtype(), dtypes::bool_);
  EXPECT_EQ(m.logical_not().to_vector<bool>(), (std::vector<bool>{false, true, true, false}));
}

TEST(Where, BroadcastsThreeShapes) {
  NdArray a = ref::random({3, 1, 5}, 500), b = ref::random({3, 1, 5}, 501);
  NdArray t = ref::random({4, 1}, 502), f = ref::random({5}, 503);
  Tensor cond = kt::make(a).lt(kt::make(b));
  Tensor out = cond.where(kt::make(t), kt::make(f));
  NdArray c = ref::zip(a, b, [](double x, double y) { return x < y ? 1.0 : 0.0; });
  EXPECT_EQ(out.shape(), (Shape{3, 4, 5}));
  EXPECT_EQ(out.dtype(), dtypes::float32);
  EXPECT_TRUE(kt::matches(out, ref::where(c, t, f)));
}

TEST(Where, ScalarBranchesAndCondition) {
  NdArray x = ref::random({7, 13}, 504);
  Tensor tx = kt::make(x);
  Tensor out = tx.gt(Tensor::zeros({})).where(tx, Tensor::full({}, -1.0));
  EXPECT_TRUE(kt::matches(out, ref::map(x, [](double v) { return v > 0 ? v : -1; })));
  // a scalar condition selects whole tensors
  Tensor yes = Tensor::full({}, 1, dtypes::bool_);
  EXPECT_TRUE(kt::matches(yes.where(tx, -tx), x));
}

TEST(Where, DtypeOfBranches) {
  Tensor cond = Tensor::from_vector<bool>({true, false, true}, {3});
  Tensor i = Tensor::from_vector<int32_t>({1, 2, 3}, {3});
  Tensor j = Tensor::from_vector<int32_t>({-1, -2, -3}, {3});
  Tensor f(std::vector<float>{0.5f, 1.5f, 2.5f});
  EXPECT_EQ(cond.where(i, j).dtype(), dtypes::int32);
  EXPECT_TRUE(kt::matches(cond.where(i, j), NdArray({3}, {1, -2, 3})));
  EXPECT_EQ(cond.where(i, f).dtype(), dtypes::float32);
  EXPECT_TRUE(kt::matches(cond.where(i, f), NdArray({3}, {1, 1.5, 3})));
}

TEST(Where, NonBoolConditionIsTruthiness) {
  // tinygrad casts a non-bool condition to bool: nonzero selects if_true
  Tensor cond(std::vector<float>{0, 2, -1, 0});
  Tensor out = cond.where(Tensor::ones({4}), Tensor::zeros({4}));
  EXPECT_TRUE(kt::matches(out, NdArray({4}, {0, 1, 1, 0})));
}

// ============================================================================ empty tensors

TEST(Empty, ElementwiseOnZeroSizedShapes) {
  for (const Shape& s : {Shape{0}, Shape{4, 0, 3}, Shape{0, 1}}) {
    SCOPED_TRACE("shape " + ref::shape_str(s));
    Tensor a = Tensor::zeros(s), b = Tensor::ones(s);
    Tensor out = ((a + b) * 2).exp().relu();
    EXPECT_EQ(out.shape(), s);
    EXPECT_EQ(out.numel(), 0);
    EXPECT_TRUE(out.to_vector<float>().empty());
    EXPECT_TRUE(a.lt(b).to_vector<bool>().empty());
    EXPECT_TRUE(a.cast(dtypes::int32).to_vector<int32_t>().empty());
    EXPECT_TRUE(kt::make(NdArray(s), dtypes::int8).to_vector<int8_t>().empty());
  }
}

TEST(Empty, BroadcastToEmpty) {
  Tensor a = Tensor::ones({4, 1}), b = Tensor::zeros({4, 0});
  Tensor out = a * b;
  EXPECT_EQ(out.shape(), (Shape{4, 0}));
  EXPECT_TRUE(out.to_vector<float>().empty());
  Tensor s = Tensor::full({}, 2.0);
  EXPECT_EQ((s + Tensor::zeros({0})).shape(), (Shape{0}));
}

}  // namespace
