// Operator tests, part 4: dtypes — arithmetic on every numeric dtype (wraparound like the C++ type,
// large integers, floor division and modulo), the promotion lattice, and casts between every pair of
// dtypes — compared with the double-precision reference in reference.h or with values spelled out.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/tensor.h"
#include "reference.h"

namespace {

using kiln::DType;
using kiln::Tensor;
using ref::NdArray;
using ref::Shape;
namespace dtypes = kiln::dtypes;

// ============================================================================ every dtype

// Inputs exactly representable in `dt`: small ints (non-negative for unsigned) or quarters in [-8, 8]
// ([-2, 2] for fp8s: two mantissa bits).
NdArray dtype_input(DType dt, const Shape& s, uint64_t seed, bool avoid_zero = false) {
  NdArray a = dt.is_unsigned() ? ref::random_int(s, seed, 0, 20)
              : dt.is_int()    ? ref::random_int(s, seed, -10, 10)
                               : ref::random_grid(s, seed, dt.is_fp8() ? -2 : -8, dt.is_fp8() ? 2 : 8, 0.25);
  if (avoid_zero)
    for (double& v : a.data)
      if (v == 0) v = 1;
  return a;
}

class DtypeArith : public ::testing::TestWithParam<DType> {};

TEST_P(DtypeArith, AddSubMulWrapLikeTheType) {
  DType dt = GetParam();
  NdArray a = dtype_input(dt, {7, 1}, 600), b = dtype_input(dt, {1, 13}, 601);
  Tensor ta = kt::make(a, dt), tb = kt::make(b, dt);
  struct Op {
    const char* name;
    Tensor out;
    NdArray want;
  };
  std::vector<Op> ops = {
      {"+", ta + tb, ref::zip(a, b, [](double x, double y) { return x + y; })},
      {"-", ta - tb, ref::zip(a, b, [](double x, double y) { return x - y; })},
      {"*", ta * tb, ref::zip(a, b, [](double x, double y) { return x * y; })},
      {"maximum", ta.maximum(tb), ref::zip(a, b, [](double x, double y) { return std::max(x, y); })},
      {"minimum", ta.minimum(tb), ref::zip(a, b, [](double x, double y) { return std::min(x, y); })},
      {"neg", -ta, ref::map(a, [](double x) { return -x; })},
      {"a*3+1", ta * 3 + 1, ref::map(a, [](double x) { return x * 3 + 1; })},
  };
  for (Op& op : ops) {
    SCOPED_TRACE(std::string(op.name) + " on " + dt.name());
    EXPECT_EQ(op.out.dtype(), dt);
    EXPECT_TRUE(kt::matches(op.out, kt::wrap(op.want, dt)));
  }
}

TEST_P(DtypeArith, TrueDivision) {
  DType dt = GetParam();
  NdArray a = dtype_input(dt, {7, 13}, 602), b = dtype_input(dt, {7, 13}, 603, true);
  Tensor out = kt::make(a, dt) / kt::make(b, dt);
  DType want_dt = dt.is_float() ? dt : dtypes::float32;
  EXPECT_EQ(out.dtype(), want_dt);
  EXPECT_TRUE(kt::matches(out, ref::zip(a, b, [](double x, double y) { return x / y; }), kt::tol_for(want_dt)));
}

TEST_P(DtypeArith, UnaryFloatOps) {
  DType dt = GetParam();
  if (!dt.is_float()) GTEST_SKIP() << "float dtypes only";
  NdArray x = ref::random_grid({31}, 604, 0.25, dt.is_fp8() ? 2 : 4, 0.25);  // exact in every float dtype
  Tensor t = kt::make(x, dt);
  kt::Tol tol = kt::tol_for(dt);
  EXPECT_EQ(t.exp().dtype(), dt);
  EXPECT_TRUE(kt::matches(t.exp(), ref::map(x, [](double v) { return std::exp(v); }), tol));
  EXPECT_TRUE(kt::matches(t.log(), ref::map(x, [](double v) { return std::log(v); }), tol));
  EXPECT_TRUE(kt::matches(t.sqrt(), ref::map(x, [](double v) { return std::sqrt(v); }), tol));
  EXPECT_TRUE(kt::matches(t.sin(), ref::map(x, [](double v) { return std::sin(v); }), tol));
  EXPECT_TRUE(kt::matches(t.reciprocal(), ref::map(x, [](double v) { return 1 / v; }), tol));
  EXPECT_TRUE(kt::matches(t.sigmoid(), ref::map(x, [](double v) { return 1 / (1 + std::exp(-v)); }), tol));
}

INSTANTIATE_TEST_SUITE_P(NumericDtypes, DtypeArith, ::testing::ValuesIn(kt::numeric_dtypes()), kt::dtype_param_name);

// Integer overflow wraps modulo 2^bits, as C++ conversions do.
TEST(Wraparound, SmallIntegerOverflow) {
  auto i8 = [](std::vector<int8_t> v) { return Tensor::from_vector<int8_t>(v, {static_cast<int64_t>(v.size())}); };
  auto u8 = [](std::vector<uint8_t> v) { return Tensor::from_vector<uint8_t>(v, {static_cast<int64_t>(v.size())}); };
  EXPECT_EQ((i8({100, -100, 127}) + i8({100, -100, 1})).to_vector<int8_t>(), (std::vector<int8_t>{-56, 56, -128}));
  EXPECT_EQ((i8({16, -128}) * i8({16, -1})).to_vector<int8_t>(), (std::vector<int8_t>{0, -128}));
  EXPECT_EQ((u8({200, 3, 255}) + u8({100, 0, 1})).to_vector<uint8_t>(), (std::vector<uint8_t>{44, 3, 0}));
  EXPECT_EQ((u8({3}) - u8({5})).to_vector<uint8_t>(), (std::vector<uint8_t>{254}));
  EXPECT_EQ((u8({16}) * u8({17})).to_vector<uint8_t>(), (std::vector<uint8_t>{16}));
  Tensor i16 = Tensor::from_vector<int16_t>({30000, -32768}, {2});
  EXPECT_EQ((i16 + i16).to_vector<int16_t>(), (std::vector<int16_t>{-5536, 0}));
  Tensor u16 = Tensor::from_vector<uint16_t>({65535}, {1});
  EXPECT_EQ((u16 + u16.ones_like()).to_vector<uint16_t>(), (std::vector<uint16_t>{0}));
  Tensor u32 = Tensor::from_vector<uint32_t>({0}, {1});
  EXPECT_EQ((u32 - 1).to_vector<uint32_t>(), (std::vector<uint32_t>{4294967295u}));
  // scalar operands keep the tensor's dtype, so they wrap too
  EXPECT_EQ((i8({100}) + 100).to_vector<int8_t>(), (std::vector<int8_t>{-56}));
  EXPECT_EQ((u8({250}) + 10).to_vector<uint8_t>(), (std::vector<uint8_t>{4}));
}

TEST(Wraparound, Int32AndInt64Overflow) {
  Tensor i32 = Tensor::from_vector<int32_t>({2147483647, -2147483647 - 1}, {2});
  EXPECT_EQ((i32 + 1).to_vector<int32_t>(), (std::vector<int32_t>{-2147483647 - 1, -2147483647}));
  Tensor i64 = Tensor::from_vector<int64_t>({int64_t{1} << 40, -(int64_t{1} << 40)}, {2});
  EXPECT_EQ((i64 * 1024).to_vector<int64_t>(), (std::vector<int64_t>{int64_t{1} << 50, -(int64_t{1} << 50)}));
}

// Integer kernels must stay in integer arithmetic: values beyond 2^31 (unsigned) and 2^53 (64-bit)
// survive elementwise ops, comparisons and max/min exactly.
TEST(LargeIntegers, StayExact) {
  Tensor u32 = Tensor::from_vector<uint32_t>({4000000000u, 1, 2147483648u}, {3});
  EXPECT_EQ(u32.max().item<uint32_t>(), 4000000000u);
  EXPECT_EQ(u32.min().item<uint32_t>(), 1u);
  EXPECT_EQ(u32.gt(u32.ones_like()).to_vector<bool>(), (std::vector<bool>{true, false, true}));
  EXPECT_EQ((u32 + u32.ones_like()).to_vector<uint32_t>(), (std::vector<uint32_t>{4000000001u, 2, 2147483649u}));
  const uint64_t big = (uint64_t{1} << 63) + 5;
  Tensor u64 = Tensor::from_vector<uint64_t>({big, 3, 7}, {3});
  EXPECT_EQ(u64.max().item<uint64_t>(), big);
  EXPECT_EQ(u64.min().item<uint64_t>(), 3u);
  EXPECT_EQ(u64.argmax(0).item<int32_t>(), 0);
  EXPECT_EQ((u64 + u64).to_vector<uint64_t>(), (std::vector<uint64_t>{10, 6, 14}));  // 2^64 + 10 wraps
  const int64_t odd = (int64_t{1} << 60) + 1;                                        // not representable in a double
  Tensor i64 = Tensor::from_vector<int64_t>({odd, -odd}, {2});
  Tensor one = Tensor::from_vector<int64_t>({1, 1}, {2});
  EXPECT_EQ((i64 + one).to_vector<int64_t>(), (std::vector<int64_t>{odd + 1, -odd + 1}));
  EXPECT_EQ(i64.max().item<int64_t>(), odd);
  EXPECT_EQ(i64.min().item<int64_t>(), -odd);
  EXPECT_EQ(i64.sum().item<int64_t>(), 0);
  EXPECT_EQ(i64.eq(i64 + one - one).to_vector<bool>(), (std::vector<bool>{true, true}));
}

// ============================================================================ floor division and modulo

// Python's // and % (PyTorch's floor division and remainder) by their definition in double:
// a // b = floor(a / b), a % b = a - b * floor(a / b). Exact for the small inputs used here.
double floor_div(double a, double b) { return std::floor(a / b); }
double floor_mod(double a, double b) { return a - b * std::floor(a / b); }

TEST_P(DtypeArith, FloorDivisionAndModulo) {
  DType dt = GetParam();
  if (dt.is_fp8()) GTEST_SKIP() << "fp8 rounds the quotient times the divisor to 2-3 mantissa bits before subtracting";
  NdArray a = dtype_input(dt, {7, 1}, 605), b = dtype_input(dt, {1, 13}, 606, true);
  Tensor ta = kt::make(a, dt), tb = kt::make(b, dt);
  EXPECT_EQ(ta.idiv(tb).dtype(), dt);
  EXPECT_TRUE(kt::matches(ta.idiv(tb), ref::zip(a, b, floor_div)));
  for (const Tensor& r : {ta.mod(tb), ta % tb}) {
    EXPECT_EQ(r.dtype(), dt);
    EXPECT_TRUE(kt::matches(r, ref::zip(a, b, floor_mod)));
  }
}

// Every sign combination, with and without a remainder, spelled out as Python gives them.
TEST(FloorDivMod, SignsFollowTheDivisor) {
  Tensor a = Tensor::from_vector<int32_t>({7, -7, 7, -7, 6, -6, 0, 1, -1}, {9});
  Tensor b = Tensor::from_vector<int32_t>({2, 2, -2, -2, 3, -3, 5, 7, 7}, {9});
  EXPECT_EQ(a.idiv(b).to_vector<int32_t>(), (std::vector<int32_t>{3, -4, -4, 3, 2, 2, 0, 0, -1}));
  EXPECT_EQ((a % b).to_vector<int32_t>(), (std::vector<int32_t>{1, 1, -1, -1, 0, 0, 0, 1, 6}));
  Tensor f = Tensor::from_vector<float>({7.5f, -7.5f, 7.5f, -7.5f, 6, -0.5f}, {6});
  Tensor g = Tensor::from_vector<float>({2, 2, -2, -2, 3, 4}, {6});
  EXPECT_EQ(f.idiv(g).to_vector<float>(), (std::vector<float>{3, -4, -4, 3, 2, -1}));
  EXPECT_EQ(f.mod(g).to_vector<float>(), (std::vector<float>{1.5f, 0.5f, -0.5f, -1.5f, 0, 3.5f}));
  Tensor u = Tensor::from_vector<uint32_t>({4000000000u, 7, 0}, {3});
  EXPECT_EQ(u.idiv(3).to_vector<uint32_t>(), (std::vector<uint32_t>{1333333333u, 2, 0}));
  EXPECT_EQ((u % 3).to_vector<uint32_t>(), (std::vector<uint32_t>{1, 1, 0}));
}

// C's integer / and % by 0, and INT_MIN / -1, are undefined (SIGFPE on x86). kiln defines them:
// x // 0 = x % 0 = 0 (NumPy's values), INT_MIN // -1 wraps to INT_MIN. Floats follow IEEE.
TEST(FloorDivMod, IntegerDivisionByZeroIsZero) {
  const int32_t min32 = std::numeric_limits<int32_t>::min();
  Tensor a = Tensor::from_vector<int32_t>({5, -5, 0, min32, min32, 7}, {6});
  Tensor b = Tensor::from_vector<int32_t>({0, 0, 0, -1, 1, -1}, {6});
  EXPECT_EQ(a.idiv(b).to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 0, min32, min32, -7}));
  EXPECT_EQ(a.mod(b).to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(a.idiv(0).to_vector<int32_t>(), (std::vector<int32_t>(6, 0)));  // a constant divisor too
  EXPECT_EQ((a % 0).to_vector<int32_t>(), (std::vector<int32_t>(6, 0)));
  const int64_t min64 = std::numeric_limits<int64_t>::min();
  Tensor l = Tensor::from_vector<int64_t>({min64, 9}, {2});
  EXPECT_EQ(l.idiv(Tensor::from_vector<int64_t>({-1, 0}, {2})).to_vector<int64_t>(), (std::vector<int64_t>{min64, 0}));
  Tensor i8 = Tensor::from_vector<int8_t>({-128, 9}, {2});
  EXPECT_EQ(i8.idiv(-1).to_vector<int8_t>(), (std::vector<int8_t>{-128, -9}));
  EXPECT_EQ(Tensor::from_vector<uint8_t>({200}, {1}).idiv(0).to_vector<uint8_t>(), (std::vector<uint8_t>{0}));
  std::vector<float> q = Tensor::from_vector<float>({1, -1, 0}, {3}).idiv(0.0f).to_vector<float>();
  EXPECT_EQ(q[0], INFINITY);
  EXPECT_EQ(q[1], -INFINITY);
  EXPECT_TRUE(std::isnan(q[2]));
  EXPECT_TRUE(std::isnan(Tensor::from_vector<float>({1}, {1}).mod(0.0f).item<float>()));
}

TEST(FloorDivMod, ScalarsOnEitherSideAndPromotion) {
  Tensor i = Tensor::from_vector<int32_t>({7, -7, 3}, {3});
  EXPECT_EQ(i.idiv(2).dtype(), dtypes::int32);
  EXPECT_EQ(i.idiv(2).to_vector<int32_t>(), (std::vector<int32_t>{3, -4, 1}));
  EXPECT_EQ((i % 2).to_vector<int32_t>(), (std::vector<int32_t>{1, 1, 1}));
  EXPECT_EQ((10 % i).to_vector<int32_t>(), (std::vector<int32_t>{3, -4, 1}));
  Tensor half = i.idiv(2.5);  // a floating scalar makes the result float32, as with the other operators
  EXPECT_EQ(half.dtype(), dtypes::float32);
  EXPECT_TRUE(kt::matches(half, NdArray({3}, {2, -3, 1})));
  EXPECT_TRUE(kt::matches(i.mod(2.5), NdArray({3}, {2, 0.5, 0.5})));
  Tensor mixed = i.mod(Tensor::from_vector<float>({-2}, {1}));  // int32 and float32 promote to float32
  EXPECT_EQ(mixed.dtype(), dtypes::float32);
  EXPECT_TRUE(kt::matches(mixed, NdArray({3}, {-1, -1, -1})));
}

// ============================================================================ dtype promotion

// For every pair of dtypes, a + b has the least upper dtype (tinygrad's lattice). No kernels run.
TEST(Promotion, BinaryOpsFollowTheLattice) {
  for (DType a : dtypes::all())
    for (DType b : dtypes::all()) {
      SCOPED_TRACE(a.name() + " + " + b.name());
      Tensor ta = Tensor::zeros({2, 1}, a), tb = Tensor::zeros({3}, b);
      DType want = dtypes::least_upper(a, b);
      Tensor sum = ta + tb;
      EXPECT_EQ(sum.dtype(), want) << "got " << sum.dtype().name();
      EXPECT_EQ(sum.shape(), (Shape{2, 3}));
      EXPECT_EQ(ta.maximum(tb).dtype(), want);
      EXPECT_EQ(ta.lt(tb).dtype(), dtypes::bool_);
    }
}

// A few lattice results spelled out (independent of least_upper), with values.
TEST(Promotion, KnownPairsWithValues) {
  Tensor i8 = Tensor::from_vector<int8_t>({-100, 100}, {2});
  Tensor i16 = Tensor::from_vector<int16_t>({-100, 100}, {2});
  Tensor u8 = Tensor::from_vector<uint8_t>({200, 255}, {2});
  Tensor i32 = Tensor::from_vector<int32_t>({7, -7}, {2});
  Tensor u32 = Tensor::from_vector<uint32_t>({4000000000u, 1}, {2});
  Tensor f32(std::vector<float>{0.5f, -0.25f});
  Tensor b = Tensor::from_vector<bool>({true, false}, {2});
  EXPECT_EQ((i8 + i16).dtype(), dtypes::int16);
  EXPECT_TRUE(kt::matches(i8 + i16, NdArray({2}, {-200, 200})));
  EXPECT_EQ((u8 + i8).dtype(), dtypes::int16);
  EXPECT_TRUE(kt::matches(u8 + i8, NdArray({2}, {100, 355})));
  EXPECT_EQ((i32 + f32).dtype(), dtypes::float32);
  EXPECT_TRUE(kt::matches(i32 + f32, NdArray({2}, {7.5, -7.25})));
  EXPECT_EQ((u32 + i32).dtype(), dtypes::int64);
  EXPECT_TRUE(kt::matches(u32 + i32, NdArray({2}, {4000000007.0, -6})));
  EXPECT_EQ((b + i8).dtype(), dtypes::int8);
  EXPECT_TRUE(kt::matches(b + i8, NdArray({2}, {-99, 100})));
  EXPECT_EQ((Tensor::zeros({1}, dtypes::float16) + Tensor::zeros({1}, dtypes::bfloat16)).dtype(), dtypes::float32);
  EXPECT_EQ((Tensor::zeros({1}, dtypes::int64) + Tensor::zeros({1}, dtypes::float16)).dtype(), dtypes::float16);
  // fp8s (tinygrad's lattice): ints promote into them, two different fp8s meet at float16
  Tensor e4m3 = Tensor::from_vector<float>({1, -3}, {2}).cast(dtypes::fp8e4m3);
  EXPECT_EQ((e4m3 + i32).dtype(), dtypes::fp8e4m3);
  EXPECT_TRUE(kt::matches(e4m3 + i32, NdArray({2}, {8, -10}), kt::Tol{0, 0}));
  EXPECT_EQ((e4m3 + e4m3.cast(dtypes::fp8e5m2)).dtype(), dtypes::float16);
  EXPECT_EQ((e4m3 + Tensor::zeros({1}, dtypes::bfloat16)).dtype(), dtypes::bfloat16);
  EXPECT_EQ((Tensor::zeros({1}, dtypes::int64) + Tensor::zeros({1}, dtypes::uint64)).dtype(), dtypes::float16);
  EXPECT_EQ((f32 + Tensor::zeros({1}, dtypes::float64)).dtype(), dtypes::float64);
}

TEST(Promotion, CxxScalars) {
  Tensor i = Tensor::from_vector<int32_t>({7, -3, 0}, {3});
  EXPECT_EQ((i * 3).dtype(), dtypes::int32);
  EXPECT_TRUE(kt::matches(i * 3, NdArray({3}, {21, -9, 0})));
  EXPECT_EQ((3 * i).dtype(), dtypes::int32);
  EXPECT_EQ((i + int64_t{2}).dtype(), dtypes::int32);
  EXPECT_EQ((i * 0.5).dtype(), dtypes::float32);
  EXPECT_TRUE(kt::matches(i * 0.5, NdArray({3}, {3.5, -1.5, 0})));
  EXPECT_EQ((0.5f + i).dtype(), dtypes::float32);
  EXPECT_EQ((i / 2).dtype(), dtypes::float32);  // true division
  EXPECT_TRUE(kt::matches(i / 2, NdArray({3}, {3.5, -1.5, 0})));
  EXPECT_TRUE(kt::matches(1 / (i + 8), NdArray({3}, {1.0 / 15, 1.0 / 5, 1.0 / 8})));
  Tensor i8 = Tensor::from_vector<int8_t>({1, 2}, {2});
  EXPECT_EQ((i8 * 3).dtype(), dtypes::int8);
  EXPECT_EQ((Tensor::zeros({1}, dtypes::uint8) + 1).dtype(), dtypes::uint8);
  EXPECT_EQ((Tensor::zeros({1}, dtypes::float16) * 2.0).dtype(), dtypes::float16);
  EXPECT_EQ((Tensor::zeros({1}, dtypes::float64) * 2.0f).dtype(), dtypes::float64);
  EXPECT_EQ((Tensor::zeros({1}) * 2.0).dtype(), dtypes::float32);
  EXPECT_EQ((Tensor::zeros({1}, dtypes::bool_) * 2.5).dtype(), dtypes::float32);
  EXPECT_EQ((Tensor::zeros({1}, dtypes::uint64) * 1.5).dtype(), dtypes::float32);
}

// ============================================================================ casts

// Values exactly representable in both dtypes: {0, 1} with bool; small non-negative integers; plus
// negatives when both are signed; plus fractions when both are floats. With an fp8, only values with
// two significant bits (e5m2's mantissa) and below 240 (e4m3fnuz's largest).
NdArray representable_in_both(DType a, DType b) {
  if (a.is_bool() || b.is_bool()) return NdArray({6}, {0, 1, 1, 0, 0, 1});
  const bool fp8 = a.is_fp8() || b.is_fp8();
  std::vector<double> v = fp8 ? std::vector<double>{0, 1, 2, 3, 7, 12, 96, 112} : std::vector<double>{0, 1, 2, 3, 7, 13, 100, 127};
  auto is_signed = [](DType d) { return d.is_float() || (d.is_int() && !d.is_unsigned()); };
  if (is_signed(a) && is_signed(b)) v.insert(v.end(), {-1, -7, fp8 ? -96.0 : -100.0, fp8 ? -112.0 : -128.0});
  if (a.is_float() && b.is_float()) v.insert(v.end(), {0.5, fp8 ? -2.5 : -2.25, 1.75, 0.125});
  return NdArray({static_cast<int64_t>(v.size())}, v);
}

class CastRoundTrip : public ::testing::TestWithParam<DType> {};

TEST_P(CastRoundTrip, ToEveryDtypeAndBack) {
  DType from = GetParam();
  for (DType to : dtypes::all()) {
    SCOPED_TRACE(from.name() + " -> " + to.name() + " -> " + from.name());
    NdArray v = representable_in_both(from, to);
    Tensor src = kt::make(v, from);
    Tensor there = src.cast(to);
    EXPECT_EQ(there.dtype(), to);
    EXPECT_EQ(there.shape(), v.shape);
    EXPECT_TRUE(kt::matches(there, v, kt::Tol{0, 0}));
    Tensor back = there.cast(from);
    EXPECT_EQ(back.dtype(), from);
    EXPECT_TRUE(kt::matches(back, v, kt::Tol{0, 0}));
  }
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, CastRoundTrip, ::testing::ValuesIn(dtypes::all()), kt::dtype_param_name);

TEST(Cast, FloatToIntTruncatesTowardZero) {
  Tensor f(std::vector<float>{2.75f, -2.75f, 0.5f, -0.5f, 100.9f});
  EXPECT_EQ(f.cast(dtypes::int32).to_vector<int32_t>(), (std::vector<int32_t>{2, -2, 0, 0, 100}));
  EXPECT_EQ(f.cast(dtypes::int8).to_vector<int8_t>(), (std::vector<int8_t>{2, -2, 0, 0, 100}));
  EXPECT_EQ(f.cast(dtypes::int64).to_vector<int64_t>(), (std::vector<int64_t>{2, -2, 0, 0, 100}));
}

TEST(Cast, ToBoolIsNonzero) {
  Tensor f(std::vector<float>{0.0f, 0.5f, -3.0f, -0.0f});
  EXPECT_EQ(f.cast(dtypes::bool_).to_vector<bool>(), (std::vector<bool>{false, true, true, false}));
  Tensor i = Tensor::from_vector<int32_t>({0, 2, -1, 256}, {4});
  EXPECT_EQ(i.cast(dtypes::bool_).to_vector<bool>(), (std::vector<bool>{false, true, true, true}));
  Tensor b = Tensor::from_vector<bool>({true, false}, {2});
  EXPECT_EQ(b.cast(dtypes::float32).to_vector<float>(), (std::vector<float>{1.0f, 0.0f}));
  EXPECT_EQ(b.cast(dtypes::int64).to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
}

TEST(Cast, IntegerNarrowingWraps) {
  Tensor i = Tensor::from_vector<int32_t>({-1, 300, 128, -129}, {4});
  EXPECT_EQ(i.cast(dtypes::uint8).to_vector<uint8_t>(), (std::vector<uint8_t>{255, 44, 128, 127}));
  EXPECT_EQ(i.cast(dtypes::int8).to_vector<int8_t>(), (std::vector<int8_t>{-1, 44, -128, 127}));
  EXPECT_EQ(i.cast(dtypes::uint32).to_vector<uint32_t>(),
            (std::vector<uint32_t>{4294967295u, 300, 128, static_cast<uint32_t>(-129)}));
}

TEST(Cast, HalfPrecisionRounds) {
  // 1 + 2^-11 is not representable in float16 (rounds to 1); 1 + 2^-8 not in bfloat16.
  Tensor f(std::vector<float>{1.0f + 1.0f / 2048, 1.0f + 1.0f / 256, 65504.0f, 3.0e38f});
  std::vector<float> h = f.cast(dtypes::float16).cast(dtypes::float32).to_vector<float>();
  EXPECT_EQ(h[0], 1.0f);
  EXPECT_EQ(h[1], 1.0f + 1.0f / 256);
  EXPECT_EQ(h[2], 65504.0f);
  EXPECT_EQ(h[3], INFINITY);
  std::vector<float> bf = f.cast(dtypes::bfloat16).cast(dtypes::float32).to_vector<float>();
  EXPECT_EQ(bf[1], 1.0f);
  EXPECT_NEAR(bf[3], 3.0e38f, 3.0e38f * 1e-2);  // bfloat16 keeps float32's range
}

// Every float16 bit pattern widens to the value IEEE 754 gives it (computed here from sign, exponent and
// mantissa in double), whichever conversion the C compiler's target allows.
TEST(Cast, EveryHalfWidensExactly) {
  std::vector<uint16_t> bits(1 << 16);
  for (size_t i = 0; i < bits.size(); i++) bits[i] = static_cast<uint16_t>(i);
  const std::vector<float> got =
      Tensor::from_vector<uint16_t>(bits, {1 << 16}).bitcast(dtypes::float16).cast(dtypes::float32).to_vector<float>();
  for (size_t i = 0; i < bits.size(); i++) {
    const int exp = (bits[i] >> 10) & 0x1f, man = bits[i] & 0x3ff;
    const double sign = (bits[i] & 0x8000) ? -1.0 : 1.0;
    if (exp == 0x1f && man != 0) {
      EXPECT_TRUE(std::isnan(got[i])) << "bits 0x" << std::hex << bits[i];
      continue;
    }
    const double want = exp == 0x1f ? sign * std::numeric_limits<double>::infinity()
                        : exp == 0  ? sign * std::ldexp(man, -24)
                                    : sign * std::ldexp(1024 + man, exp - 25);
    ASSERT_EQ(static_cast<double>(got[i]), want) << "bits 0x" << std::hex << bits[i];
    ASSERT_EQ(std::signbit(got[i]), sign < 0) << "bits 0x" << std::hex << bits[i];
  }
}

TEST(Cast, SameDtypeIsIdentity) {
  NdArray x = ref::random({5, 3}, 700);
  Tensor t = kt::make(x);
  EXPECT_EQ(t.cast(dtypes::float32).dtype(), dtypes::float32);
  EXPECT_TRUE(kt::matches(t.cast(dtypes::float32), x));
}

TEST(Cast, BitcastReinterprets) {
  Tensor f(std::vector<float>{1.0f, -2.0f});
  EXPECT_EQ(f.bitcast(dtypes::uint32).to_vector<uint32_t>(), (std::vector<uint32_t>{0x3f800000u, 0xc0000000u}));
  EXPECT_EQ(f.bitcast(dtypes::int32).bitcast(dtypes::float32).to_vector<float>(), (std::vector<float>{1.0f, -2.0f}));
}

// Between sizes the last axis holds the bytes: the reference is the same memory read with memcpy.
template <class From, class To>
void expect_bitcast_like_memcpy(kiln::DType from, kiln::DType to) {
  std::vector<From> src(24);
  for (size_t i = 0; i < src.size(); i++) src[i] = static_cast<From>(0x9E3779B97F4A7C15ull * (i + 1) >> 17);
  std::vector<To> want(src.size() * sizeof(From) / sizeof(To));
  std::memcpy(want.data(), src.data(), src.size() * sizeof(From));
  Tensor got = Tensor::from_vector<From>(src, {2, 3, 4}).bitcast(to);
  EXPECT_EQ(got.shape(), (Shape{2, 3, static_cast<int64_t>(4 * sizeof(From) / sizeof(To))})) << from.name() << to.name();
  EXPECT_EQ(got.to_vector<To>(), want) << from.name() << " -> " << to.name();
}

TEST(Cast, BitcastBetweenSizesMovesTheLastAxis) {
  expect_bitcast_like_memcpy<uint32_t, uint8_t>(dtypes::uint32, dtypes::uint8);
  expect_bitcast_like_memcpy<uint8_t, int32_t>(dtypes::uint8, dtypes::int32);
  expect_bitcast_like_memcpy<int64_t, int16_t>(dtypes::int64, dtypes::int16);
  expect_bitcast_like_memcpy<int16_t, uint64_t>(dtypes::int16, dtypes::uint64);
  expect_bitcast_like_memcpy<int32_t, int64_t>(dtypes::int32, dtypes::int64);
  expect_bitcast_like_memcpy<uint16_t, int8_t>(dtypes::uint16, dtypes::int8);
  Tensor f(std::vector<float>{1.0f, -2.0f});
  EXPECT_EQ(f.bitcast(dtypes::uint16).to_vector<uint16_t>(), (std::vector<uint16_t>{0x0000, 0x3f80, 0x0000, 0xc000}));
  EXPECT_EQ(f.bitcast(dtypes::uint8).bitcast(dtypes::float32).to_vector<float>(), (std::vector<float>{1.0f, -2.0f}));
  EXPECT_THROW(Tensor::zeros({3}, dtypes::int8).bitcast(dtypes::float16), kiln::Error);  // 3 bytes, not whole halves
  EXPECT_THROW(Tensor::full({}, 1.0).bitcast(dtypes::int8), kiln::Error);                 // no last axis
}

}  // namespace
