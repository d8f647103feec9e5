// Gradients at the edges of their ops' domains, as PyTorch gives them: abs, sigmoid and softplus at 0,
// clip at its bounds, ties of minimum, pow at 0 and ±inf, acosh below -1, and integer powers that
// stay integers.
// Expected values are PyTorch's closed-form derivatives, written out; exact up to float64 rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kiln/error.h"
#include "kiln/tensor.h"

namespace {

using kiln::Tensor;
namespace dtypes = kiln::dtypes;
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor f64(std::vector<double> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<double>(std::move(v), {n});
}

// Equal element by element, NaN matching NaN; infinities must match exactly, others within 1e-12.
void expect_values(const Tensor& t, const std::vector<double>& expected) {
  std::vector<double> got = t.cast(dtypes::float64).to_vector<double>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); i++) {
    if (std::isnan(expected[i])) EXPECT_TRUE(std::isnan(got[i])) << "element " << i << ": " << got[i];
    else if (std::isinf(expected[i])) EXPECT_EQ(got[i], expected[i]) << "element " << i;
    else EXPECT_NEAR(got[i], expected[i], 1e-12 * (1 + std::abs(expected[i]))) << "element " << i;
  }
}

Tensor grad_of(Tensor (*f)(const Tensor&), const Tensor& x) { return f(x).sum().gradient({x})[0]; }

TEST(EdgeGradient, AbsIsZeroAtZero) {
  Tensor x = f64({-1, -0.0, 0, 1, kInf, -kInf});
  expect_values(grad_of([](const Tensor& t) { return t.abs(); }, x), {-1, 0, 0, 1, 1, -1});
}

TEST(EdgeGradient, ClipPassesItsBoundsThrough) {
  Tensor x = f64({-3, -2.5, 0, 1.5, 2});
  expect_values(grad_of([](const Tensor& t) { return t.clip(-2.5, 1.5); }, x), {0, 1, 1, 1, 0});
  // a lower bound above the upper one: the upper wins everywhere, as PyTorch's clamp
  expect_values(x.clip(3, 0), {0, 0, 0, 0, 0});
  expect_values(grad_of([](const Tensor& t) { return t.clip(3, 0); }, x), {0, 0, 0, 0, 0});
}

TEST(EdgeGradient, MinimumSplitsTies) {
  Tensor a = f64({1, 0, 3, -4}), b = f64({-1, -2, 3, 0});
  std::vector<Tensor> g = a.minimum(b).sum().gradient({a, b});
  expect_values(g[0], {0, 0, 0.5, 1});
  expect_values(g[1], {1, 1, 0.5, 0});
  expect_values(f64({1, NAN}).minimum(f64({NAN, 2})), {NAN, NAN});
}

TEST(EdgeGradient, PowOfAConstantAtZeroAndInfinity) {
  Tensor x = f64({0, -kInf, 1, kInf});
  expect_values(x.pow(0.3), {0, kInf, 1, kInf});
  expect_values(grad_of([](const Tensor& t) { return t.pow(0.3); }, x), {kInf, 0, 0.3, 0});
  expect_values(f64({-kInf}).pow(3.3), {kInf});
  expect_values(grad_of([](const Tensor& t) { return t.pow(3.3); }, f64({-kInf})), {kInf});
  expect_values(grad_of([](const Tensor& t) { return t.pow(0.0); }, x), {0, 0, 0, 0});
}

TEST(EdgeGradient, PowOfTwoTensorsAtZeroAndInfinity) {
  Tensor b = f64({0, 0, 0, -kInf, kInf, -1}), e = f64({0, 0.3, -0.3, 0, 0, 0.5});
  expect_values(b.pow(e), {1, 0, kInf, 1, 1, NAN});
  std::vector<Tensor> g = b.pow(e).sum().gradient({b, e});
  expect_values(g[0], {0, kInf, -kInf, 0, 0, NAN});     // e b^(e-1), 0 where e is 0
  expect_values(g[1], {0, 0, -kInf, NAN, kInf, NAN});  // b^e log b, 0 where b is 0 and e >= 0
}

TEST(EdgeGradient, AcoshBelowMinusOneKeepsItsFormula) {
  Tensor x = f64({-2, 1.5, 300});
  expect_values(x.acosh(), {NAN, std::acosh(1.5), std::acosh(300.0)});
  expect_values(grad_of([](const Tensor& t) { return t.acosh(); }, x),
                {1 / std::sqrt(3.0), 1 / std::sqrt(1.25), 1 / std::sqrt(300.0 * 300.0 - 1)});
}

TEST(EdgeGradient, SigmoidAndSoftplusAtZero) {  // sigmoid(0) (1 - sigmoid(0)) and sigmoid(0)
  Tensor x = f64({0, -0.0});
  expect_values(grad_of([](const Tensor& t) { return t.sigmoid(); }, x), {0.25, 0.25});
  expect_values(grad_of([](const Tensor& t) { return t.softplus(); }, x), {0.5, 0.5});
}

TEST(IntegerPow, StaysIntegerAndRefusesNegativeExponents) {
  Tensor x = Tensor::from_vector<int32_t>({-2, 0, 2}, {3});
  EXPECT_EQ(x.pow(3.0).dtype(), dtypes::int32);
  EXPECT_EQ(x.pow(3.0).to_vector<int32_t>(), (std::vector<int32_t>{-8, 0, 8}));
  EXPECT_EQ(x.pow(0.0).to_vector<int32_t>(), (std::vector<int32_t>{1, 1, 1}));
  EXPECT_EQ(x.pow(29.0).to_vector<int32_t>(), (std::vector<int32_t>{-(1 << 29), 0, 1 << 29}));
  EXPECT_THROW(x.pow(-2.0), kiln::Error);
  EXPECT_EQ(x.pow(0.5).dtype(), dtypes::float32);  // a fraction makes it float
}

}  // namespace
