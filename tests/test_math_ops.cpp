// Elementwise math built from primitives (tinygrad's composites: inverse and hyperbolic trigonometry,
// fmod, copysign, logaddexp, lerp, isclose, activations), comparison operators, rounding division,
// shifts by a tensor, and the pooling/convolution argument errors. Values against float64 std::
// functions: float32 within 2e-6 absolute + 1e-5 relative (the A&S polynomials behind asin/acos/atan
// are accurate to 2e-8 absolute, a few float32 ULPs); gradients by finite differences in float64.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>
#include <string>
#include <vector>

#include "error_message.h"
#include "gradcheck.h"
#include "kiln/tensor.h"

namespace {

using kiln::Tensor;
namespace dtypes = kiln::dtypes;

std::vector<float> linspace(float lo, float hi, int n) {
  std::vector<float> v;
  for (int i = 0; i < n; i++) v.push_back(lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(n - 1));
  return v;
}

// f(x) for each x, against `reference` in float64; NaN must match NaN.
void expect_unary(const std::function<Tensor(const Tensor&)>& f, const std::function<double(double)>& reference,
                  const std::vector<float>& xs, double atol = 2e-6, double rtol = 1e-5) {
  std::vector<float> got = f(Tensor(xs)).to_vector<float>();
  ASSERT_EQ(got.size(), xs.size());
  for (size_t i = 0; i < xs.size(); i++) {
    double want = reference(xs[i]);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got[i])) << "at x = " << xs[i] << ": got " << got[i];
    } else if (std::isinf(want)) {
      EXPECT_EQ(got[i], want) << "at x = " << xs[i];
    } else {
      EXPECT_NEAR(got[i], want, atol + rtol * std::abs(want)) << "at x = " << xs[i];
    }
  }
}

struct UnaryCase {
  const char* name;
  Tensor (Tensor::*op)() const;
  double (*reference)(double);
  float lo, hi;
  std::vector<float> edges;
};

const float kInf = INFINITY, kNan = NAN;

const std::vector<UnaryCase>& unary_cases() {
  static const std::vector<UnaryCase> cases = {
      {"log10", &Tensor::log10, [](double x) { return std::log10(x); }, 0.01f, 100, {0, 1, kInf, -1, kNan}},
      {"sinh", &Tensor::sinh, [](double x) { return std::sinh(x); }, -5, 5, {0, 80, -80, kInf, -kInf}},
      {"cosh", &Tensor::cosh, [](double x) { return std::cosh(x); }, -5, 5, {0, 80, -80, kInf}},
      {"asinh", &Tensor::asinh, [](double x) { return std::asinh(x); }, -20, 20, {0, -1e4f, 1e4f, 1e20f, -1e20f, kInf, -kInf}},
      {"acosh", &Tensor::acosh, [](double x) { return std::acosh(x); }, 1, 20, {1, 1e20f, kInf, 0.5f, -2, -1e20f}},
      {"atanh", &Tensor::atanh, [](double x) { return std::atanh(x); }, -0.99f, 0.99f, {0, 1, -1, 2}},
      {"asin", &Tensor::asin, [](double x) { return std::asin(x); }, -1, 1, {0, 1, -1, 1.5f, kInf}},
      {"acos", &Tensor::acos, [](double x) { return std::acos(x); }, -1, 1, {0, 1, -1, -1.5f}},
      {"atan", &Tensor::atan, [](double x) { return std::atan(x); }, -20, 20, {0, 1e20f, -1e20f, kInf, -kInf, kNan}},
  };
  return cases;
}

TEST(MathOps, UnaryMatchesLibm) {
  for (const UnaryCase& c : unary_cases()) {
    SCOPED_TRACE(c.name);
    expect_unary([&](const Tensor& x) { return (x.*c.op)(); }, c.reference, linspace(c.lo, c.hi, 201));
    expect_unary([&](const Tensor& x) { return (x.*c.op)(); }, c.reference, c.edges);
  }
}

TEST(MathOps, UnaryGradients) {
  for (const UnaryCase& c : unary_cases()) {
    SCOPED_TRACE(c.name);
    // inside the domain, away from its boundaries (where the derivative is infinite)
    double lo = c.lo + 0.1 * (c.hi - c.lo), hi = c.hi - 0.1 * (c.hi - c.lo);
    std::vector<double> xs;
    for (int i = 0; i < 7; i++) xs.push_back(lo + (hi - lo) * i / 6.0);
    // the A&S polynomial's derivative is itself an approximation: its error is about 1e-6
    gc::Options opt;
    if (std::string(c.name).starts_with("a") && std::string(c.name) != "asinh" && std::string(c.name) != "acosh" &&
        std::string(c.name) != "atanh")
      opt.rtol = 1e-4, opt.atol = 5e-6;
    EXPECT_TRUE(gc::check([&](const std::vector<Tensor>& in) { return (in[0].*c.op)(); }, {ref::NdArray({7}, xs)}, opt));
  }
  // odd functions keep their slope at 0 (x.sign() * f(|x|) would give 0 there)
  for (auto op : {&Tensor::asin, &Tensor::atan, &Tensor::asinh}) {
    Tensor x = Tensor::from_vector<double>({0.0}, {1}).requires_grad_();
    EXPECT_NEAR((x.*op)().sum().gradient({x})[0].item<double>(), 1.0, 1e-5);
  }
}

TEST(MathOps, FmodTakesTheDividendSign) {
  std::vector<float> a{5.5f, -5.5f, 5.5f, -5.5f, 7, kInf, 3, 2.5f}, b{2, 2, -2, -2, kInf, 2, 0, 1e-3f};
  std::vector<float> got = Tensor(a).fmod(Tensor(b)).to_vector<float>();
  for (size_t i = 0; i < a.size(); i++) {
    double want = std::fmod(double{a[i]}, double{b[i]});
    if (std::isnan(want)) EXPECT_TRUE(std::isnan(got[i])) << i;
    else EXPECT_NEAR(got[i], want, 1e-4) << i;
  }
  std::vector<int> ia{-4, 7, 5, 4, -7, 8, 9, -9, -2147483647 - 1}, ib{2, -3, 8, -2, 3, 5, 0, -1, -1};
  std::vector<int> igot = Tensor::from_vector(ia, {9}).fmod(Tensor::from_vector(ib, {9})).to_vector<int>();
  for (size_t i = 0; i < ia.size(); i++) EXPECT_EQ(igot[i], ib[i] == 0 || ib[i] == -1 ? 0 : ia[i] % ib[i]) << i;
}

TEST(MathOps, DivRoundingModes) {
  std::vector<int> a{-7, 7, -7, 7, 6, -9, 5}, b{2, 2, -2, -2, 3, 4, 0};
  Tensor ta = Tensor::from_vector(a, {7}), tb = Tensor::from_vector(b, {7});
  Tensor trunc = ta.div(tb, "trunc"), floor = ta.div(tb, "floor");
  EXPECT_EQ(trunc.dtype(), dtypes::int32);
  std::vector<int> t = trunc.to_vector<int>(), f = floor.to_vector<int>();
  for (size_t i = 0; i + 1 < a.size(); i++) {
    EXPECT_EQ(t[i], a[i] / b[i]) << i;
    EXPECT_EQ(f[i], static_cast<int>(std::floor(double(a[i]) / b[i]))) << i;
  }
  EXPECT_EQ(t.back(), 0);  // integer division by zero gives 0, as idiv
  std::vector<float> ff = Tensor({-7.5f, 7.5f}).div(Tensor({2.0f, 2.0f}), "trunc").to_vector<float>();
  EXPECT_EQ(ff, (std::vector<float>{-3, 3}));
  EXPECT_NE(kt::error_of([] { Tensor({1.0f}).div(Tensor({2.0f}), "round"); }).find("div: rounding_mode"), std::string::npos);
}

TEST(MathOps, CopysignLogaddexpLerpIsclose) {
  std::vector<float> a{1, -2, 3, -0.0f, kInf, 5}, b{-0.0f, 0, -kInf, -1, -1, kInf};
  std::vector<float> got = Tensor(a).copysign(Tensor(b)).to_vector<float>();
  for (size_t i = 0; i < a.size(); i++) {
    EXPECT_EQ(got[i], std::copysign(a[i], b[i])) << i;
    EXPECT_EQ(std::signbit(got[i]), std::signbit(std::copysign(a[i], b[i]))) << i;
  }
  std::vector<float> x{-100, 0, 3, 80}, y{-99, 0, -5, 88};
  std::vector<float> lae = Tensor(x).logaddexp(Tensor(y)).to_vector<float>();
  for (size_t i = 0; i < x.size(); i++) {
    double m = std::max<double>(x[i], y[i]);
    EXPECT_NEAR(lae[i], m + std::log(std::exp(x[i] - m) + std::exp(y[i] - m)), 1e-5 * std::abs(m) + 1e-6) << i;
  }
  EXPECT_EQ(Tensor({1, 2, 3}).lerp(Tensor({4, 5, 6}), 0.5).to_vector<float>(), (std::vector<float>{2.5f, 3.5f, 4.5f}));
  EXPECT_TRUE(gc::check([](const std::vector<Tensor>& in) { return in[0].lerp(in[1], in[2]); },
                        {ref::NdArray({3}, {1, 2, 3}), ref::NdArray({3}, {-1, 0, 7}), ref::NdArray({3}, {0.2, 0.5, 1.5})}));
  std::vector<float> p{1e-7f, 1e-8f, 1e-9f, kNan, kInf, kInf, 1}, q{0, 0, 0, kNan, kInf, -kInf, 1.000005f};
  // |p - q| <= 1e-8 + 1e-5 |q|, by hand
  std::vector<bool> want{false, true, true, false, true, false, true};
  std::vector<bool> close = Tensor(p).isclose(Tensor(q)).to_vector<bool>();
  for (size_t i = 0; i < p.size(); i++) EXPECT_EQ(close[i], want[i]) << i;
  EXPECT_TRUE(Tensor(p).isclose(Tensor(q), 1e-5, 1e-8, true).to_vector<bool>()[3]);
  EXPECT_FALSE(Tensor(p).allclose(Tensor(q)).item<bool>());
  EXPECT_TRUE(Tensor({1, 2}).allclose(Tensor({1, 2.00001f})).item<bool>());
}

TEST(MathOps, Activations) {
  auto xs = linspace(-6, 6, 49);
  expect_unary([](const Tensor& x) { return x.hardsigmoid(); }, [](double x) { return std::clamp(x / 6 + 0.5, 0.0, 1.0); }, xs);
  expect_unary([](const Tensor& x) { return x.softsign(); }, [](double x) { return x / (1 + std::abs(x)); }, xs);
  expect_unary([](const Tensor& x) { return x.celu(0.7); },
               [](double x) { return std::max(0.0, x) + std::min(0.0, 0.7 * std::expm1(x / 0.7)); }, xs);
  expect_unary([](const Tensor& x) { return x.selu(); },
               [](double x) { return 1.0507 * (x >= 0 ? x : 1.67326 * std::expm1(x)); }, xs);
  expect_unary([](const Tensor& x) { return x.logsigmoid(); }, [](double x) { return -std::log1p(std::exp(-x)); }, xs);
  expect_unary([](const Tensor& x) { return x.gelu("none"); },
               [](double x) { return 0.5 * x * (1 + std::erf(x / std::numbers::sqrt2)); }, xs, 1e-6);
  EXPECT_NE(kt::error_of([] { Tensor({1.0f}).gelu("fast"); }).find("gelu: approximate"), std::string::npos);
  EXPECT_TRUE(gc::check([](const std::vector<Tensor>& in) { return in[0].celu(0.7) + in[0].selu() + in[0].logsigmoid(); },
                        {ref::NdArray({4}, {-2, -0.5, 0.5, 2})}));
}

TEST(MathOps, SoftminNormalizeMoments) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, -1, 0, 4}, {2, 3});
  std::vector<float> sm = x.softmin(1).to_vector<float>();
  std::vector<double> v{1, 2, 3, -1, 0, 4};
  for (int r = 0; r < 2; r++) {
    double s = 0;
    for (int c = 0; c < 3; c++) s += std::exp(-v[r * 3 + c]);
    for (int c = 0; c < 3; c++) EXPECT_NEAR(sm[r * 3 + c], std::exp(-v[r * 3 + c]) / s, 1e-6);
  }
  std::vector<float> n = x.normalize().to_vector<float>();  // p=2 along dim 1
  for (int r = 0; r < 2; r++) {
    double s = 0;
    for (int c = 0; c < 3; c++) s += v[r * 3 + c] * v[r * 3 + c];
    for (int c = 0; c < 3; c++) EXPECT_NEAR(n[r * 3 + c], v[r * 3 + c] / std::sqrt(s), 1e-6);
  }
  auto [var, mean] = x.var_mean({1}, false, 0);
  auto [sd, mean2] = x.std_mean({1});
  EXPECT_NEAR(mean.to_vector<float>()[0], 2.0, 1e-6);
  EXPECT_NEAR(var.to_vector<float>()[1], 14.0 / 3, 1e-5);  // ((-2)^2 + (-1)^2 + 3^2) / 3
  EXPECT_NEAR(sd.to_vector<float>()[0], 1.0, 1e-6);
  EXPECT_NEAR(mean2.to_vector<float>()[1], 1.0, 1e-6);
  EXPECT_EQ(x.size(), (kiln::Shape{2, 3}));
  EXPECT_EQ(x.size(-1), 3);
}

TEST(MathOps, ComparisonOperators) {
  Tensor a({1, 2, 3}), b({3, 2, 1});
  EXPECT_EQ((a == b).dtype(), dtypes::bool_);
  EXPECT_EQ((a == b).to_vector<bool>(), (std::vector<bool>{false, true, false}));
  EXPECT_EQ((a != b).to_vector<bool>(), (std::vector<bool>{true, false, true}));
  EXPECT_EQ((a < b).to_vector<bool>(), (std::vector<bool>{true, false, false}));
  EXPECT_EQ((a <= b).to_vector<bool>(), (std::vector<bool>{true, true, false}));
  EXPECT_EQ((a > b).to_vector<bool>(), (std::vector<bool>{false, false, true}));
  EXPECT_EQ((a >= b).to_vector<bool>(), (std::vector<bool>{false, true, true}));
  EXPECT_EQ((a == 2).to_vector<bool>(), (std::vector<bool>{false, true, false}));
  EXPECT_EQ((2 < a).to_vector<bool>(), (std::vector<bool>{false, false, true}));
  EXPECT_EQ((a >= 2.5).to_vector<bool>(), (std::vector<bool>{false, false, true}));
  EXPECT_EQ((1 != a).to_vector<bool>(), (std::vector<bool>{false, true, true}));
  // a Tensor is not a bool, so gtest's EXPECT_EQ(tensor, tensor) does not compile
  static_assert(!std::is_convertible_v<Tensor, bool> && !std::is_constructible_v<bool, Tensor>);
  // gradients pass through the multiply, not the comparison
  Tensor x = Tensor({1, -2, 3}).requires_grad_(), y = Tensor({0, 0, 5}).requires_grad_();
  ((x < y).cast(dtypes::float32) * x).sum().backward();
  EXPECT_EQ(x.grad()->to_vector<float>(), (std::vector<float>{0, 1, 1}));
  EXPECT_TRUE(!y.grad() || y.grad()->to_vector<float>() == (std::vector<float>{0, 0, 0}));
}

TEST(MathOps, ShiftsByATensorAndMaskedFill) {
  Tensor x = Tensor::from_vector<int>({1, -8, 3, 255, -1, 5}, {6}), s = Tensor::from_vector<int>({0, 1, 2, 3, 31, 40}, {6});
  EXPECT_EQ(x.lshift(s).to_vector<int>(), (std::vector<int>{1, -16, 12, 2040, int(0x80000000u), 0}));
  EXPECT_EQ(x.rshift(s).to_vector<int>(), (std::vector<int>{1, -4, 0, 31, -1, 0}));
  EXPECT_NE(kt::error_of([] { Tensor({1.0f}).lshift(Tensor::from_vector<int>({1}, {1})); }).find("lshift"), std::string::npos);
  Tensor t = Tensor::from_vector<int>({1, 2, 3, 4, 5}, {5});
  Tensor mask = Tensor::from_vector<bool>({true, false, true, false, false}, {5});
  EXPECT_EQ(t.masked_fill(mask, Tensor::from_vector<int>({-1, -2, -3, -4, -5}, {5})).to_vector<int>(),
            (std::vector<int>{-1, 2, -3, 4, 5}));
  Tensor f = t.masked_fill(mask, Tensor::full({}, 7.5));  // the value takes this tensor's dtype, as PyTorch
  EXPECT_EQ(f.dtype(), dtypes::int32);
  EXPECT_EQ(f.to_vector<int>(), (std::vector<int>{7, 2, 7, 4, 5}));
}

TEST(MathOps, PoolAndConvErrorsNameTheOp) {
  Tensor x = Tensor::ones({1, 2, 4, 4}), w = Tensor::ones({2, 2, 3, 3});
  auto has = [](const std::string& message, const std::string& part) {
    return message.find(part) != std::string::npos ? ::testing::AssertionSuccess()
                                                   : ::testing::AssertionFailure() << "\"" << message << "\" lacks \"" << part << "\"";
  };
  EXPECT_TRUE(has(kt::error_of([&] { x.conv2d(Tensor::ones({2, 2, 9, 9})); }), "conv2d: window 9"));
  EXPECT_TRUE(has(kt::error_of([&] { x.conv2d(w, {}, 1, -1); }), "conv2d: padding must be >= 0, got -1"));
  EXPECT_TRUE(has(kt::error_of([&] { x.conv_transpose2d(w, {}, 1, -1); }), "conv_transpose2d: padding must be >= 0"));
  EXPECT_TRUE(has(kt::error_of([&] { x.max_pool2d(3, {}, 5); }), "max_pool2d: padding 5 is more than half the kernel size 3"));
  EXPECT_TRUE(has(kt::error_of([&] { x.max_pool2d(3, {}, -1); }), "max_pool2d: padding must be >= 0"));
  EXPECT_TRUE(has(kt::error_of([&] { x.avg_pool2d(3, {}, 2); }), "more than half the kernel size 3"));
  EXPECT_TRUE(has(kt::error_of([&] { x.avg_pool2d({2, 2}, {1, 1}, {{1, 1}, {1, 1}}, {5, 5}); }), "covers padding only"));
  EXPECT_TRUE(has(kt::error_of([&] { x.max_pool2d(9); }), "max_pool2d: window 9"));
  EXPECT_TRUE(has(kt::error_of([&] { x.max_pool2d({3, 3}, {}, {{5, 5}, {0, 0}}); }), "max_pool2d: window 0 along spatial axis 0 covers padding only"));
  // the per-axis form still crops with negative padding
  EXPECT_EQ(x.conv2d(w, {}, {1, 1}, {{-1, 0}, {0, 0}}).shape(), (kiln::Shape{1, 2, 1, 2}));
}

}  // namespace
