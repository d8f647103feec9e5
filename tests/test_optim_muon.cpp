// The Muon optimizer: its steps against the same update computed in float64 with naive loops
// (momentum, Newton–Schulz on each parameter as a matrix, decoupled weight decay), and that it
// trains a small least-squares problem.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "error_message.h"
#include "kiln/kiln.h"

namespace {

using kiln::Shape;
using kiln::Tensor;
namespace optim = kiln::nn::optim;
using Matrix = std::vector<std::vector<double>>;

Matrix matmul(const Matrix& a, const Matrix& b) {
  Matrix out(a.size(), std::vector<double>(b[0].size(), 0.0));
  for (size_t i = 0; i < a.size(); i++)
    for (size_t k = 0; k < b.size(); k++)
      for (size_t j = 0; j < b[0].size(); j++) out[i][j] += a[i][k] * b[k][j];
  return out;
}

Matrix transposed(const Matrix& a) {
  Matrix out(a[0].size(), std::vector<double>(a.size()));
  for (size_t i = 0; i < a.size(); i++)
    for (size_t j = 0; j < a[0].size(); j++) out[j][i] = a[i][j];
  return out;
}

// G <- sum_i c[i] (G G^T)^i G from G / (||G||_F + 1e-7), through the transpose for a tall G.
Matrix newton_schulz(Matrix g, int steps, const std::vector<double>& c) {
  const bool tall = g.size() > g[0].size();
  if (tall) g = transposed(g);
  double norm = 0;
  for (const auto& row : g)
    for (double v : row) norm += v * v;
  for (auto& row : g)
    for (double& v : row) v /= std::sqrt(norm) + 1e-7;
  for (int s = 0; s < steps; s++) {
    const Matrix gram = matmul(g, transposed(g));
    Matrix term = g, next = g;
    for (auto& row : next)
      for (double& v : row) v *= c[0];
    for (size_t i = 1; i < c.size(); i++) {
      term = matmul(gram, term);
      for (size_t r = 0; r < g.size(); r++)
        for (size_t k = 0; k < g[0].size(); k++) next[r][k] += c[i] * term[r][k];
    }
    g = next;
  }
  return tall ? transposed(g) : g;
}

// One parameter of the reference: values row-major as (rows, cols), with its momentum buffer.
struct RefParam {
  size_t rows, cols;
  std::vector<double> value, buf;
};

void muon_step(RefParam& p, const std::vector<double>& grad, double lr, double momentum, double wd, int ns_steps,
               const std::vector<double>& c, bool nesterov) {
  std::vector<double> step(grad.size());
  for (size_t i = 0; i < grad.size(); i++) {
    p.buf[i] = momentum * p.buf[i] + grad[i];
    step[i] = nesterov ? grad[i] + momentum * p.buf[i] : p.buf[i];
  }
  Matrix g(p.rows, std::vector<double>(p.cols));
  for (size_t i = 0; i < step.size(); i++) g[i / p.cols][i % p.cols] = step[i];
  g = newton_schulz(g, ns_steps, c);
  for (size_t i = 0; i < step.size(); i++) p.value[i] = p.value[i] * (1 - lr * wd) - lr * g[i / p.cols][i % p.cols];
}

std::vector<float> sample(size_t n, float scale, float offset) {
  std::vector<float> out;
  for (size_t i = 0; i < n; i++) out.push_back(scale * std::sin(1.7f * static_cast<float>(i) + offset));
  return out;
}

// loss = 0.5 sum((W - T)^2) + 0.5 sum(k b^2): gradients W - T and k b, so the reference needs no autograd.
struct Case {
  double lr, momentum, wd;
  int ns_steps;
  std::vector<double> coefficients;
  bool nesterov;
};

class MuonSteps : public ::testing::TestWithParam<Case> {};

TEST_P(MuonSteps, MatchTheFloat64Update) {
  const Case c = GetParam();
  const std::vector<float> w0 = sample(15, 0.8f, 0.3f), t = sample(15, 0.5f, 2.0f), b0 = sample(4, 1.0f, 1.1f),
                           k = {0.5f, 1.0f, 2.0f, 3.0f};
  Tensor w = Tensor::from_vector(w0, {3, 5}), b = Tensor::from_vector(b0, {4});
  const Tensor target = Tensor::from_vector(t, {3, 5}), kt_ = Tensor::from_vector(k, {4});
  optim::Muon opt({w, b}, c.lr, c.momentum, c.wd, c.ns_steps, c.coefficients, c.nesterov);
  RefParam rw{3, 5, {w0.begin(), w0.end()}, std::vector<double>(15, 0.0)};
  RefParam rb{4, 1, {b0.begin(), b0.end()}, std::vector<double>(4, 0.0)};  // (4,) as a (4, 1) matrix
  for (int step = 0; step < 4; step++) {
    opt.zero_grad();
    Tensor loss = (w - target).square().sum() * 0.5f + (b.square() * kt_).sum() * 0.5f;
    loss.backward();
    opt.step();
    std::vector<double> gw(15), gb(4);
    for (size_t i = 0; i < 15; i++) gw[i] = rw.value[i] - t[i];
    for (size_t i = 0; i < 4; i++) gb[i] = k[i] * rb.value[i];
    muon_step(rw, gw, c.lr, c.momentum, c.wd, c.ns_steps, c.coefficients, c.nesterov);
    muon_step(rb, gb, c.lr, c.momentum, c.wd, c.ns_steps, c.coefficients, c.nesterov);
    // float32 against float64: the Newton–Schulz polynomial amplifies rounding a little
    const std::vector<float> got_w = w.to_vector<float>(), got_b = b.to_vector<float>();
    for (size_t i = 0; i < 15; i++) EXPECT_NEAR(got_w[i], rw.value[i], 1e-5) << "step " << step << " W[" << i << "]";
    for (size_t i = 0; i < 4; i++) EXPECT_NEAR(got_b[i], rb.value[i], 1e-5) << "step " << step << " b[" << i << "]";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Muon, MuonSteps,
    ::testing::Values(Case{0.02, 0.95, 0.1, 5, {3.4445, -4.775, 2.0315}, true},  // tinygrad's defaults, larger lr
                      Case{0.05, 0.9, 0.0, 3, {2.0, -1.5, 0.5}, false},
                      Case{0.01, 0.0, 0.01, 5, {3.4445, -4.775, 2.0315}, true}));  // no momentum buffer

TEST(Muon, TrainsALeastSquaresProblem) {
  // y = X W*: 16 samples of 4 features to 3 outputs
  const Tensor x = Tensor::from_vector(sample(64, 1.0f, 0.0f), {16, 4});
  const Tensor w_true = Tensor::from_vector(sample(12, 1.0f, 0.7f), {4, 3});
  const Tensor y = x.matmul(w_true);
  Tensor w = Tensor::zeros({4, 3}).contiguous().realize();
  optim::Muon opt({w}, 0.05, 0.9, 0.0);
  auto loss = [&] { return (x.matmul(w) - y).square().mean(); };
  const float initial = loss().item<float>();
  for (int step = 0; step < 60; step++) {
    opt.zero_grad();
    loss().backward();
    opt.step();
  }
  EXPECT_LT(loss().item<float>(), 0.01f * initial);
}

TEST(Muon, BadArgumentsAreErrors) {
  Tensor w = Tensor::ones({2, 2}).contiguous().realize();
  EXPECT_NE(kt::error_of([&] { optim::Muon({w}, 0.01, -0.5); }).find("Muon: momentum must be >= 0, got -0.5"),
            std::string::npos);
  EXPECT_NE(kt::error_of([&] { optim::Muon({w}, 0.01, 0.9, 0.1, -1); }).find("Muon: ns_steps must be >= 0"),
            std::string::npos);
  EXPECT_NE(kt::error_of([&] { optim::Muon({w}, 0.01, 0.9, 0.1, 5, {}); }).find("at least one Newton-Schulz"),
            std::string::npos);
}

}  // namespace
