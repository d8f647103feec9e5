// fp8 dtypes: decoding and encoding (host and kernels) against a float64 reference written from the
// formats' definitions, and arithmetic that computes in float32 and rounds once to fp8.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/tensor.h"

namespace {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;
namespace dtypes = kiln::dtypes;

// ---- the reference, from the format definitions (OCP 8-bit floating point; fnuz as in PyTorch)
struct Format {
  int man, bias;
  bool ocp_e4m3, ieee, fnuz;  // e4m3fn: S.1111.111 is NaN, no inf; e5m2: IEEE specials; fnuz: 0x80 is NaN
};

Format format(DType d) {
  if (d == dtypes::fp8e4m3) return {3, 7, true, false, false};
  if (d == dtypes::fp8e5m2) return {2, 15, false, true, false};
  if (d == dtypes::fp8e4m3fnuz) return {3, 8, false, false, true};
  return {2, 16, false, false, true};
}

// The value of a bit pattern: (-1)^s * 2^(e - bias) * 1.m, or 2^(1 - bias) * 0.m for e == 0.
double ref_decode(uint8_t b, DType d) {
  const Format f = format(d);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const int e = (b & 0x7f) >> f.man, m = b & ((1 << f.man) - 1), e_max = (1 << (7 - f.man)) - 1;
  const double sign = (b & 0x80) ? -1.0 : 1.0;
  if (f.fnuz && b == 0x80) return nan;
  if (f.ocp_e4m3 && e == e_max && m == (1 << f.man) - 1) return nan;
  if (f.ieee && e == e_max) return m ? nan : sign * std::numeric_limits<double>::infinity();
  const double frac = static_cast<double>(m) / (1 << f.man);
  return sign * (e == 0 ? std::ldexp(frac, 1 - f.bias) : std::ldexp(1 + frac, e - f.bias));
}

// float32 -> fp8 by search: the nearest of the format's finite magnitudes, ties to the even pattern.
// Past the largest finite value sits the value one step above it (the pattern after it): rounding
// to that overflows, to inf for e5m2 and to NaN for the others, as PyTorch's conversions do.
uint8_t ref_encode(float x, DType d) {
  const Format f = format(d);
  const uint8_t nan = f.fnuz ? 0x80 : (std::signbit(x) ? 0xff : 0x7f);
  if (std::isnan(x)) return nan;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  if (std::isinf(x)) return f.ieee ? sign | 0x7c : nan;
  int max_code = 0;
  for (int c = 0; c < 0x80; c++)
    if (std::isfinite(ref_decode(static_cast<uint8_t>(c), d))) max_code = c;
  const double top = ref_decode(static_cast<uint8_t>(max_code), d);
  const double ulp = top - ref_decode(static_cast<uint8_t>(max_code - 1), d);
  const double a = std::fabs(static_cast<double>(x));
  // at and past the step above the largest value it overflows (far past it, doubles cannot tell the
  // candidates' distances apart)
  int best = a >= top + ulp ? max_code + 1 : 0;
  double best_err = a;
  for (int c = 1; c <= max_code + 1 && best <= max_code; c++) {
    const double v = c <= max_code ? ref_decode(static_cast<uint8_t>(c), d) : top + ulp;
    const double err = std::fabs(a - v);
    if (err < best_err || (err == best_err && c % 2 == 0)) best = c, best_err = err;
  }
  if (best > max_code) return f.ieee ? sign | 0x7c : nan;
  if (f.fnuz && best == 0) return 0;
  return static_cast<uint8_t>(sign | best);
}

float bits_to_float(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// Same value, NaN matching any NaN, and -0 apart from +0.
bool same(double got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  return got == want && std::signbit(got) == std::signbit(want);
}

const DType kFp8s[] = {dtypes::fp8e4m3, dtypes::fp8e5m2, dtypes::fp8e4m3fnuz, dtypes::fp8e5m2fnuz};

class Fp8 : public ::testing::TestWithParam<DType> {};

TEST_P(Fp8, DecodesEveryBitPattern) {
  const DType d = GetParam();
  std::vector<uint8_t> all(256);
  for (int i = 0; i < 256; i++) all[i] = static_cast<uint8_t>(i);
  const std::vector<float> kernel = Tensor::from_vector<uint8_t>(all, {256}).bitcast(d).cast(dtypes::float32).to_vector<float>();
  for (int i = 0; i < 256; i++) {
    const double want = ref_decode(static_cast<uint8_t>(i), d);
    EXPECT_TRUE(same(kiln::fp8_to_float(static_cast<uint8_t>(i), d), want)) << "host, pattern " << i;
    EXPECT_TRUE(same(kernel[i], want)) << "kernel, pattern " << i << ": got " << kernel[i] << ", want " << want;
  }
}

// Every fp8 value, the midpoints between neighbours and the float32 values on either side of each
// midpoint (ties and the rounding boundaries), specials, overflow, and random float32s across the
// format's range and beyond.
std::vector<float> encode_inputs(DType d) {
  std::vector<float> xs = {0.0f, -0.0f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                           std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max(), 1e-30f};
  std::vector<double> values;
  for (int c = 0; c < 0x80; c++)
    if (double v = ref_decode(static_cast<uint8_t>(c), d); std::isfinite(v)) values.push_back(v);
  values.push_back(2 * values.back() - values[values.size() - 2]);  // one step past the largest
  for (size_t i = 0; i < values.size(); i++) {
    const float v = static_cast<float>(values[i]);
    for (float s : {1.0f, -1.0f}) xs.push_back(s * v);
    if (i + 1 == values.size()) continue;
    const float mid = static_cast<float>((values[i] + values[i + 1]) / 2);  // exact in float32
    for (float m : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)})
      for (float s : {1.0f, -1.0f}) xs.push_back(s * m);
  }
  xs.push_back(static_cast<float>(values.back() * 1.01));
  std::mt19937 rng(1234);
  std::uniform_int_distribution<uint32_t> mantissa(0, (1u << 23) - 1), sign(0, 1);
  std::uniform_int_distribution<int> exponent(127 - 24, 127 + 17);  // below the subnormals to past the range
  for (int i = 0; i < 4000; i++)
    xs.push_back(bits_to_float(sign(rng) << 31 | static_cast<uint32_t>(exponent(rng)) << 23 | mantissa(rng)));
  return xs;
}

TEST_P(Fp8, EncodesFloat32RoundingToNearestEven) {
  const DType d = GetParam();
  const std::vector<float> xs = encode_inputs(d);
  const std::vector<uint8_t> kernel =
      Tensor::from_vector<float>(xs, {static_cast<int64_t>(xs.size())}).cast(d).bitcast(dtypes::uint8).to_vector<uint8_t>();
  int failures = 0;
  for (size_t i = 0; i < xs.size() && failures < 10; i++) {
    const int want = ref_encode(xs[i], d), host = kiln::float_to_fp8(xs[i], d);
    failures += host != want || kernel[i] != want;
    EXPECT_EQ(host, want) << "host, x = " << xs[i];
    EXPECT_EQ(static_cast<int>(kernel[i]), want) << "kernel, x = " << xs[i];
  }
}

// a op b on fp8 tensors: the exact result of the float32 operation, rounded once to fp8.
TEST_P(Fp8, ArithmeticRoundsTheFloat32ResultOnce) {
  const DType d = GetParam();
  std::mt19937 rng(99);
  std::vector<uint8_t> a, b;
  for (int i = 0; i < 512; i++) {
    uint8_t x = static_cast<uint8_t>(rng()), y = static_cast<uint8_t>(rng());
    if (!std::isfinite(ref_decode(x, d)) || !std::isfinite(ref_decode(y, d))) continue;
    a.push_back(x), b.push_back(y);
  }
  const Shape shape{static_cast<int64_t>(a.size())};
  const Tensor ta = Tensor::from_vector<uint8_t>(a, shape).bitcast(d), tb = Tensor::from_vector<uint8_t>(b, shape).bitcast(d);
  struct Case {
    const char* name;
    Tensor got;
    float (*f)(float, float);
  };
  const Case cases[] = {{"add", ta + tb, [](float x, float y) { return x + y; }},
                        {"sub", ta - tb, [](float x, float y) { return x - y; }},
                        {"mul", ta * tb, [](float x, float y) { return x * y; }},
                        {"div", ta / tb, [](float x, float y) { return x / y; }},
                        {"max", ta.maximum(tb), [](float x, float y) { return std::fmax(x, y); }}};
  for (const Case& c : cases) {
    ASSERT_EQ(c.got.dtype(), d) << c.name;
    const std::vector<uint8_t> got = c.got.bitcast(dtypes::uint8).to_vector<uint8_t>();
    int failures = 0;
    for (size_t i = 0; i < a.size() && failures < 5; i++) {
      const float x = static_cast<float>(ref_decode(a[i], d)), y = static_cast<float>(ref_decode(b[i], d));
      const uint8_t want = ref_encode(c.f(x, y), d);
      // zeros compare by value: maximum may pick either of -0 and +0
      const double g = ref_decode(got[i], d), w = ref_decode(want, d);
      const bool ok = got[i] == want || g == w || (std::isnan(g) && std::isnan(w));
      failures += !ok;
      EXPECT_TRUE(ok) << c.name << "(" << x << ", " << y << "): got pattern " << int(got[i]) << ", want " << int(want);
    }
  }
}

// A sum of fp8 values accumulates in float32 and rounds once: 64 quarters and a half sum to 16.5
// (16 in every format), where rounding each partial sum to e5m2 would stall at 4 (4 + 1/4 rounds to 4).
TEST_P(Fp8, SumAccumulatesInFloat32) {
  const DType d = GetParam();
  std::vector<float> v(64, 0.25f);
  v.push_back(0.5f);
  Tensor s = Tensor::from_vector<float>(v, {static_cast<int64_t>(v.size())}).cast(d).sum();
  EXPECT_EQ(s.dtype(), d);
  EXPECT_EQ(s.cast(dtypes::float32).to_vector<float>()[0], static_cast<float>(ref_decode(ref_encode(16.5f, d), d)));
}

// A cast between fp8s goes through the target's range: no fp8 holds another, so a chain of casts through
// one must not fold away (e5m2's 1024 is past e4m3's range: NaN; its 2^-16 is below e4m3's: 0).
TEST(Fp8Casts, BetweenFormatsKeepTheNarrowerRange) {
  const std::vector<uint8_t> e5m2_bits = {0x64, 0x01, 0x3c};  // 1024, 2^-16, 1
  const Tensor e5m2 = Tensor::from_vector<uint8_t>(e5m2_bits, {3}).bitcast(dtypes::fp8e5m2);
  const std::vector<float> via_e4m3 = e5m2.cast(dtypes::fp8e4m3).cast(dtypes::float32).to_vector<float>();
  ASSERT_EQ(via_e4m3.size(), 3u);
  EXPECT_TRUE(std::isnan(via_e4m3[0])) << via_e4m3[0];
  EXPECT_EQ(via_e4m3[1], 0.0f);
  EXPECT_EQ(via_e4m3[2], 1.0f);
  // e4m3's 448 is past e4m3fnuz's 240: NaN
  const Tensor e4m3 = Tensor::from_vector<uint8_t>({0x7e}, {1}).bitcast(dtypes::fp8e4m3);
  EXPECT_TRUE(std::isnan(e4m3.cast(dtypes::fp8e4m3fnuz).cast(dtypes::float32).to_vector<float>()[0]));
  // every fp8 value is exact in float16: the chain may fold
  EXPECT_EQ(e5m2.cast(dtypes::float16).cast(dtypes::float32).to_vector<float>()[0], 1024.0f);
}

TEST(Fp8Dtype, PropertiesAndPromotion) {
  for (DType d : kFp8s) {
    EXPECT_EQ(d.itemsize(), 1) << d.name();
    EXPECT_TRUE(d.is_float() && d.is_fp8()) << d.name();
    EXPECT_FALSE(d.is_int()) << d.name();
    EXPECT_EQ(dtypes::from_name(d.name()), d);
    EXPECT_EQ(dtypes::least_upper(d, dtypes::int64), d);  // tinygrad: int + fp8 stays fp8
    EXPECT_EQ(dtypes::least_upper(d, dtypes::float16), dtypes::float16);
    EXPECT_EQ(dtypes::least_upper(d, dtypes::bfloat16), dtypes::bfloat16);
  }
  EXPECT_EQ(dtypes::least_upper(dtypes::fp8e4m3, dtypes::fp8e5m2), dtypes::float16);
  EXPECT_EQ(dtypes::least_upper(dtypes::int64, dtypes::uint64), dtypes::float16);
  EXPECT_EQ(dtypes::finfo(dtypes::fp8e4m3), (std::pair<int, int>{4, 3}));
  EXPECT_EQ(dtypes::finfo(dtypes::fp8e5m2fnuz), (std::pair<int, int>{5, 2}));
  EXPECT_EQ(dtypes::finfo(dtypes::float32), (std::pair<int, int>{8, 23}));
  EXPECT_THROW(dtypes::finfo(dtypes::int32), kiln::Error);
  EXPECT_THROW(kiln::float_to_fp8(1.0f, dtypes::float32), kiln::Error);
}

std::string fp8_name(const ::testing::TestParamInfo<DType>& info) { return info.param.name(); }
INSTANTIATE_TEST_SUITE_P(AllFp8, Fp8, ::testing::ValuesIn(kFp8s), fp8_name);

}  // namespace
