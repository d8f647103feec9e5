// float32 math functions against libm evaluated in double, with the error counted in float32 ULPs.
//
// Each function runs once (one realize) over a few hundred thousand inputs: a dense grid over its
// everyday range; floats drawn uniformly from all representable values of its domain, so tiny,
// huge and denormal inputs are as likely as ordinary ones; its hard spots (cos near its zeros,
// exp near overflow, tanh around the switch between its two formulas); and ±0, ±inf, NaN. The
// reference is the double-precision libm result rounded to float32: 0 ULP is correctly rounded,
// 1 ULP faithful. The bounds asserted here are the ones include/kiln/tensor.h documents.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numbers>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "kiln/tensor.h"

namespace {

using kiln::Tensor;
using Inputs = std::vector<float>;
namespace dtypes = kiln::dtypes;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kMax = std::numeric_limits<float>::max();

// A float's position on the line of all floats, so that neighbours differ by 1 (-0 and +0 coincide).
int64_t ordinal(float f) {
  int32_t i = std::bit_cast<int32_t>(f);
  return i < 0 ? -static_cast<int64_t>(i & 0x7fffffff) : i;
}

float from_ordinal(int64_t k) {
  uint32_t magnitude = static_cast<uint32_t>(k < 0 ? -k : k);
  return std::bit_cast<float>(k < 0 ? magnitude | 0x80000000u : magnitude);
}

// How many floats apart a and b are. NaN is 0 from NaN and infinitely far from anything else.
int64_t ulp_distance(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : INT64_MAX;
  return std::abs(ordinal(a) - ordinal(b));
}

// ---- input sets

Inputs grid(double lo, double hi, int n) {
  Inputs out;
  for (int i = 0; i < n; i++) out.push_back(static_cast<float>(lo + (hi - lo) * i / (n - 1)));
  return out;
}

// n floats drawn uniformly from all floats in [lo, hi] (log-uniform in magnitude, in effect).
Inputs every_float(float lo, float hi, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> pick(ordinal(lo), ordinal(hi));
  Inputs out;
  for (int i = 0; i < n; i++) out.push_back(from_ordinal(pick(rng)));
  return out;
}

// The floats within `ulps` of each point (of the float nearest to it).
Inputs around(const std::vector<double>& points, int ulps) {
  Inputs out;
  for (double p : points)
    for (int64_t d = -ulps; d <= ulps; d++) out.push_back(from_ordinal(ordinal(static_cast<float>(p)) + d));
  return out;
}

Inputs specials() {
  const float denorm = std::numeric_limits<float>::denorm_min(), tiny = std::numeric_limits<float>::min();
  return {0.0f, -0.0f, kInf, -kInf, NAN, denorm, -denorm, tiny, -tiny, kMax, -kMax, 1.0f, -1.0f};
}

Inputs cat(std::initializer_list<Inputs> parts) {
  Inputs out;
  for (const Inputs& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// Odd multiples of pi/2 (cos's zeros, tan's poles) and multiples of pi (sin's zeros), up to 1e6.
std::vector<double> trig_zeros() {
  std::vector<double> out;
  for (double k = 1; k < 2e6 / std::numbers::pi; k = std::max(k + 1, std::floor(k * 1.05)))
    for (double z : {k * std::numbers::pi / 2, k * std::numbers::pi}) {
      out.push_back(z);
      out.push_back(-z);
    }
  return out;
}

// ---- comparison

Tensor tensor(const Inputs& x) { return Tensor::from_vector(x, {static_cast<int64_t>(x.size())}); }

// The largest distance between kiln's result and the rounded reference, with where it happened.
struct Report {
  int64_t max_ulp = 0;
  size_t at = 0;
  float got = 0, want = 0;
};

Report compare(const Tensor& out, const std::vector<double>& reference) {
  std::vector<float> got = out.to_vector<float>();
  EXPECT_EQ(got.size(), reference.size());
  Report r;
  for (size_t i = 0; i < got.size(); i++) {
    float want = static_cast<float>(reference[i]);
    int64_t d = ulp_distance(got[i], want);
    if (d > r.max_ulp) r = {d, i, got[i], want};
  }
  return r;
}

std::string show(float v) {
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

// One realize of f over x, compared with ref; the worst case is named on failure, and the
// maximum is recorded as a test property (--gtest_output=json shows it).
using UnaryFn = std::function<Tensor(const Tensor&)>;
void check_unary(const Inputs& x, const UnaryFn& f, const std::function<double(double)>& ref, int64_t bound,
                 const std::string& property = "max_ulp") {
  std::vector<double> want;
  for (float v : x) want.push_back(ref(v));
  Report r = compare(f(tensor(x)), want);
  ::testing::Test::RecordProperty(property, std::to_string(r.max_ulp));
  EXPECT_LE(r.max_ulp, bound) << "at x = " << show(x[r.at]) << ": got " << show(r.got) << ", want " << show(r.want)
                              << " (" << x.size() << " points)";
}

// ---- exponentials and logarithms

Inputs exp_inputs() {
  return cat({grid(-90, 90, 200001), grid(79, 81, 50001), grid(-81, -79, 50001), every_float(-110, 95, 200000, 1),
              around({88.72283935546875, -87.33654475, -103.972077}, 200), every_float(-kMax, kMax, 20000, 2),
              specials()});
}

Inputs exp2_inputs() {
  return cat({grid(-152, 130, 200001), every_float(-160, 130, 200000, 3), every_float(-kMax, kMax, 20000, 4),
              around({128, -126, -149, -150}, 200), specials()});
}

// f of each value computed in SIMD vector registers: the maximum of (f(x), f(x)) over a pair is a
// reduction, whose kernel holds a register tile of outputs as vectors (float_x8, float_x16)
// when their count divides into tiles.
Inputs padded_to_tiles(Inputs x) {
  x.resize((x.size() + 255) / 256 * 256, 0.5f);
  return x;
}

UnaryFn in_vectors(const UnaryFn& f) {
  return [f](const Tensor& t) { return f(t.reshape({t.numel(), 1}).expand({t.numel(), 2})).max({1}); };
}

TEST(Transcendentals, Exp) {  // all x; 1 ULP
  check_unary(exp_inputs(), [](const Tensor& t) { return t.exp(); }, [](double v) { return std::exp(v); }, 1);
}

TEST(Transcendentals, ExpInVectorRegisters) {  // the same function on vectors; 1 ULP
  const Inputs x = padded_to_tiles(exp_inputs());
  const std::string source = kiln::codegen::to_program(
      in_vectors([](const Tensor& t) { return t.exp(); })(tensor(x)).schedule().at(0).ast,
      {&kiln::renderer::c_renderer(), 1, true, 64}).source;
  EXPECT_NE(source.find("kiln_exp_float_x"), std::string::npos) << source;
  check_unary(x, in_vectors([](const Tensor& t) { return t.exp(); }), [](double v) { return std::exp(v); }, 1);
}

TEST(Transcendentals, Exp2) {  // all x; 1 ULP
  check_unary(exp2_inputs(), [](const Tensor& t) { return t.exp2(); }, [](double v) { return std::exp2(v); }, 1);
}

TEST(Transcendentals, Exp2InVectorRegisters) {  // 1 ULP
  check_unary(padded_to_tiles(exp2_inputs()), in_vectors([](const Tensor& t) { return t.exp2(); }), [](double v) { return std::exp2(v); },
              1);
}

TEST(Transcendentals, Log) {  // all x; 1 ULP
  Inputs x = cat({grid(0, 10, 200001), grid(0.9, 1.1, 100001), every_float(0, kMax, 200000, 5),
                  every_float(-kMax, -0.0f, 1000, 6), specials()});
  check_unary(x, [](const Tensor& t) { return t.log(); }, [](double v) { return std::log(v); }, 1);
}

TEST(Transcendentals, Log2) {  // all x; 1 ULP
  Inputs x = cat({grid(0, 10, 200001), grid(0.9, 1.1, 100001), every_float(0, kMax, 200000, 7),
                  every_float(-kMax, -0.0f, 1000, 8), specials()});
  check_unary(x, [](const Tensor& t) { return t.log2(); }, [](double v) { return std::log2(v); }, 1);
}

// ---- trigonometry: libm reduces any float exactly, so the range is every float

Inputs trig_inputs(uint64_t seed) {
  return cat({grid(-10, 10, 200001), grid(-1e4, 1e4, 100001), every_float(-kMax, kMax, 200000, seed),
              around(trig_zeros(), 20), specials()});
}

TEST(Transcendentals, Sin) {  // all x; 2 ULP (libmvec with clang)
  check_unary(trig_inputs(9), [](const Tensor& t) { return t.sin(); }, [](double v) { return std::sin(v); }, 2);
}

TEST(Transcendentals, Cos) {  // all x; 2 ULP (libmvec with clang)
  check_unary(trig_inputs(10), [](const Tensor& t) { return t.cos(); }, [](double v) { return std::cos(v); }, 2);
}

TEST(Transcendentals, CosOfAMillion) {  // the case that was 0.93962 when cos was sin(pi/2 - x)
  EXPECT_EQ(Tensor(std::vector<float>{1e6f}).cos().item<float>(), static_cast<float>(std::cos(1e6)));
}

TEST(Transcendentals, Tan) {  // all x; 3 ULP (sin / cos)
  check_unary(trig_inputs(11), [](const Tensor& t) { return t.tan(); }, [](double v) { return std::tan(v); }, 3);
}

// ---- hyperbolic and logistic

TEST(Transcendentals, Tanh) {  // all x; 2 ULP
  Inputs x = cat({grid(-10, 10, 200001), grid(0.5, 0.6, 100001), grid(-1e-3, 1e-3, 20001),
                  every_float(-kMax, kMax, 200000, 12), every_float(-12, 12, 100000, 13), specials()});
  check_unary(x, [](const Tensor& t) { return t.tanh(); }, [](double v) { return std::tanh(v); }, 2);
}

TEST(Transcendentals, TanhLimits) {
  std::vector<float> y = Tensor(std::vector<float>{-1e30f, -20, 20, 1e30f, -kInf, kInf, NAN}).tanh().to_vector<float>();
  EXPECT_EQ(y[0], -1.0f);
  EXPECT_EQ(y[1], -1.0f);
  EXPECT_EQ(y[2], 1.0f);
  EXPECT_EQ(y[3], 1.0f);
  EXPECT_EQ(y[4], -1.0f);
  EXPECT_EQ(y[5], 1.0f);
  EXPECT_TRUE(std::isnan(y[6]));
}

TEST(Transcendentals, Sigmoid) {  // all x; 3 ULP
  Inputs x = cat({grid(-110, 40, 200001), grid(-10, 10, 100001), every_float(-kMax, kMax, 200000, 14), specials()});
  check_unary(x, [](const Tensor& t) { return t.sigmoid(); }, [](double v) { return 1 / (1 + std::exp(-v)); }, 3);
}

// ---- roots and reciprocals

TEST(Transcendentals, Sqrt) {  // all x; correctly rounded
  Inputs x = cat({grid(0, 100, 200001), every_float(0, kMax, 200000, 15), every_float(-kMax, -0.0f, 1000, 16),
                  specials()});
  check_unary(x, [](const Tensor& t) { return t.sqrt(); }, [](double v) { return std::sqrt(v); }, 0);
}

TEST(Transcendentals, Rsqrt) {  // all x; 1 ULP (two roundings)
  Inputs x = cat({grid(0, 100, 200001), every_float(0, kMax, 200000, 17), specials()});
  check_unary(x, [](const Tensor& t) { return t.rsqrt(); }, [](double v) { return 1 / std::sqrt(v); }, 1);
}

TEST(Transcendentals, Reciprocal) {  // all x; correctly rounded
  Inputs x = cat({grid(-100, 100, 200001), every_float(-kMax, kMax, 200000, 18), specials()});
  check_unary(x, [](const Tensor& t) { return t.reciprocal(); }, [](double v) { return 1 / v; }, 0);
}

// ---- powers

// C's pow, as PyTorch's: a finite negative base gives NaN with a non-integer exponent, -inf gives
// inf or 0 (pow(-inf, 0.3) is inf).
double c_pow(double b, double e) { return std::pow(b, e); }

// Integer powers are exact whenever the result is a float, as in PyTorch, and negative ones are the
// correctly rounded reciprocal. The reference multiplies in double, which is exact while the
// power stays below 2^53 for these bases (integers, 0.5, -1.5); beyond that, 1 ULP.
TEST(Transcendentals, PowIntegerExponentsAreExact) {
  EXPECT_EQ(Tensor(std::vector<float>{3}).pow(10.0).item<float>(), 59049.0f);
  Inputs bases = cat({grid(-20, 20, 41), {0.5f, -1.5f}});
  const std::vector<int> exponents = {2, 3, 4, 5, 7, 10, 13, 16, 31, -1, -2, -3, -5, -10};
  Tensor x = tensor(bases);
  std::vector<Tensor> outs;
  for (int n : exponents) outs.push_back(x.pow(static_cast<double>(n)));
  Tensor::realize(outs);
  for (size_t k = 0; k < exponents.size(); k++) {
    std::vector<float> got = outs[k].to_vector<float>();
    for (size_t i = 0; i < bases.size(); i++) {
      double power = 1;
      for (int j = 0; j < std::abs(exponents[k]); j++) power *= bases[i];
      float want = static_cast<float>(exponents[k] < 0 ? 1 / power : power);
      EXPECT_LE(ulp_distance(got[i], want), std::fabs(power) < 0x1p53 ? 0 : 1)
          << bases[i] << "^" << exponents[k] << ": got " << show(got[i]) << ", want " << show(want);
    }
  }
}

// pow(double) over random bases: integer exponents (squaring), half-integers (squaring times a
// square root), exponents past the squaring limit and fractions (the general path). 1 ULP.
TEST(Transcendentals, PowScalarExponent) {
  Inputs bases = cat({every_float(-1e4, 1e4, 50000, 19), grid(-3, 3, 20001), specials()});
  for (double e : {3.0, 10.0, 33.0, -7.0, 100.0, 1000.0, 2.5, -1.5, 20.5, 70000.0, 1 / 3.0, -0.7, 1e-3}) {
    SCOPED_TRACE("exponent " + std::to_string(e));
    check_unary(bases, [e](const Tensor& t) { return t.pow(e); }, [e](double b) { return c_pow(b, e); }, 1,
                "max_ulp_e" + std::to_string(e));
  }
}

// pow(Tensor) over random positive bases and finite exponents, plus negative bases with integer
// exponents (the sign logic) and zero and infinite bases. 1 ULP.
TEST(Transcendentals, PowTensorExponent) {
  Inputs b = every_float(0, kMax, 200000, 20), e = every_float(-60, 60, 200000, 21);
  Inputs near_one = every_float(0.5, 2, 50000, 22), big_e = every_float(-1e4, 1e4, 50000, 23);
  b.insert(b.end(), near_one.begin(), near_one.end());
  e.insert(e.end(), big_e.begin(), big_e.end());
  for (float v : every_float(-100, -1e-3, 20000, 24)) {
    b.push_back(v);
    e.push_back(std::round(v * 0.37f));
  }
  for (float v : {0.0f, kInf, -kInf, NAN})
    for (float p : {-3.0f, -2.0f, -0.5f, 0.0f, 0.5f, 2.0f, 3.0f}) {
      b.push_back(v);
      e.push_back(p);
    }
  std::vector<double> want;
  for (size_t i = 0; i < b.size(); i++) want.push_back(c_pow(b[i], e[i]));
  Report r = compare(tensor(b).pow(tensor(e)), want);
  ::testing::Test::RecordProperty("max_ulp", std::to_string(r.max_ulp));
  EXPECT_LE(r.max_ulp, 1) << "at " << show(b[r.at]) << "^" << show(e[r.at]) << ": got " << show(r.got) << ", want "
                          << show(r.want);
}

// ---- float64: exp, log and cos are libm's double functions; tanh has a float64 polynomial

void expect_relative(const std::vector<double>& x, const UnaryFn& f, const std::function<double(double)>& ref) {
  std::vector<double> got = f(Tensor::from_vector(x, {static_cast<int64_t>(x.size())})).to_vector<double>();
  for (size_t i = 0; i < x.size(); i++) EXPECT_NEAR(got[i], ref(x[i]), 1e-14 * std::fabs(ref(x[i]))) << "x = " << x[i];
}

TEST(Transcendentals, Float64) {
  std::vector<double> x, tiny;
  for (int i = 0; i < 20000; i++) x.push_back(-700 + 1400 * (i + 0.5) / 20000);  // never 0
  for (int i = 0; i < 2000; i++) tiny.push_back(std::pow(10.0, -300 + 300.0 * i / 2000) * (i % 2 ? 1 : -1));
  expect_relative(x, [](const Tensor& t) { return t.exp(); }, [](double v) { return std::exp(v); });
  expect_relative(x, [](const Tensor& t) { return t.abs().log(); }, [](double v) { return std::log(std::fabs(v)); });
  expect_relative(x, [](const Tensor& t) { return t.cos(); }, [](double v) { return std::cos(v); });
  expect_relative(x, [](const Tensor& t) { return t.tanh(); }, [](double v) { return std::tanh(v); });
  expect_relative(tiny, [](const Tensor& t) { return t.tanh(); }, [](double v) { return std::tanh(v); });
}

}  // namespace
