#pragma once
// Finite-difference gradient checks for kiln's autograd, shared by the autograd and nn-op tests.
//
// For a function f(inputs) -> Tensor of any shape, the scalar checked is
//     loss(inputs) = sum(f(inputs) * R)
// with R a fixed random array of f's output shape (so every output element matters, with a
// different weight). The analytic gradient is loss.gradient(inputs); the numeric one perturbs a
// host copy of an input element by +-eps, rebuilds the tensors, and takes central differences:
//     (loss(x + eps e_i) - loss(x - eps e_i)) / (2 eps)
// Its error is O(eps^2 f''') from truncation plus O(macheps |loss| / eps) from rounding: with
// float64, eps = 1e-6 and |loss| of order 1-10, both stay below 1e-8. The default tolerance,
// |analytic - numeric| <= 1e-7 + 1e-5 |numeric|, leaves a wide margin over that and still catches
// any wrong rule (a wrong factor or sign, a missing term, a misplaced index).
//
// Every evaluation schedules a new graph, which costs milliseconds for big composites (conv), so
// `max_elements` can cap the elements checked one by one per input (an even spread, first and
// last included); the rest are still covered by `directions` checks along random +-1 directions
// v over all inputs at once: (loss(x + eps v) - loss(x - eps v)) / (2 eps) against <grad, v>.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/tensor.h"
#include "reference.h"

namespace gc {

using kiln::DType;
using kiln::Tensor;
using ref::NdArray;
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

struct Options {
  double eps = 1e-6;
  double rtol = 1e-5, atol = 1e-7;
  DType dtype = kiln::dtypes::float64;  // the inputs' dtype
  int64_t max_elements = 1 << 30;       // per input, checked one by one
  int directions = 2;                   // random directions, when some elements were skipped
  uint64_t seed = 99;                   // of the output weights R and the directions
};

// Finite differences on a few elements per input (and random directions over all of them), for
// ops whose every evaluation builds a new graph.
inline Options few_elements(int64_t n = 4) {
  Options o;
  o.max_elements = n;
  return o;
}

inline std::vector<Tensor> make_all(const std::vector<NdArray>& xs, DType dt) {
  std::vector<Tensor> out;
  for (const NdArray& x : xs) out.push_back(kt::make(x, dt));
  return out;
}

// sum(f(inputs) * R) in float64.
inline Tensor weighted_loss(const Tensor& out, const NdArray& weights) {
  return (out.cast(kiln::dtypes::float64) * kt::make(weights, kiln::dtypes::float64)).sum();
}

inline double loss_at(const Fn& f, const std::vector<NdArray>& xs, const NdArray& weights, DType dt) {
  return kt::read(weighted_loss(f(make_all(xs, dt)), weights))[0];
}

// The elements of an n-element input checked one by one: all, or an even spread of m >= 2.
inline std::vector<int64_t> checked_elements(int64_t n, int64_t m) {
  std::vector<int64_t> out;
  for (int64_t k = 0; k < std::min(n, m); k++) out.push_back(n <= m ? k : k * (n - 1) / (m - 1));
  return out;
}

// The analytic gradients of f's weighted loss against central differences. Use as
// EXPECT_TRUE(gc::check(...)).
inline ::testing::AssertionResult check(const Fn& f, std::vector<NdArray> xs, Options opt = {}) {
  std::vector<Tensor> inputs = make_all(xs, opt.dtype);
  Tensor out = f(inputs);
  NdArray weights = ref::random(out.shape(), opt.seed, -1, 1);
  std::vector<Tensor> grads;
  try {
    grads = weighted_loss(out, weights).gradient(inputs);
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "gradient() threw: " << e.what();
  }
  std::ostringstream fails;
  fails.precision(12);
  int bad = 0;
  auto compare = [&](double analytic, double numeric, const std::string& where) {
    if (ref::close_enough(analytic, numeric, opt.rtol, opt.atol)) return;
    if (bad++ < 3) fails << "\n  " << where << ": analytic " << analytic << ", numeric " << numeric;
  };
  std::vector<std::vector<double>> analytic;
  bool sampled = false;
  for (size_t i = 0; i < xs.size(); i++) {
    if (grads[i].shape() != xs[i].shape)
      return ::testing::AssertionFailure() << "gradient of input " << i << " has shape " << ref::shape_str(grads[i].shape())
                                           << ", the input " << ref::shape_str(xs[i].shape);
    analytic.push_back(kt::read(grads[i]));
    sampled |= xs[i].size() > opt.max_elements;
    for (int64_t j : checked_elements(xs[i].size(), opt.max_elements)) {
      const double x0 = xs[i].data[j];
      xs[i].data[j] = x0 + opt.eps;
      const double up = loss_at(f, xs, weights, opt.dtype);
      xs[i].data[j] = x0 - opt.eps;
      const double down = loss_at(f, xs, weights, opt.dtype);
      xs[i].data[j] = x0;
      compare(analytic[i][j], (up - down) / (2 * opt.eps),
              "input " + std::to_string(i) + " " + ref::index_str(ref::unravel(j, xs[i].shape)) + " of " +
                  ref::shape_str(xs[i].shape));
    }
  }
  for (int d = 0; sampled && d < opt.directions; d++) {
    std::vector<NdArray> up = xs, down = xs;
    double along = 0;
    for (size_t i = 0; i < xs.size(); i++) {
      NdArray v = ref::random(xs[i].shape, opt.seed + 1 + d * 101 + i, -1, 1);
      for (int64_t j = 0; j < v.size(); j++) {
        const double s = v.data[j] < 0 ? -1 : 1;
        up[i].data[j] += s * opt.eps;
        down[i].data[j] -= s * opt.eps;
        along += s * analytic[i][j];
      }
    }
    const double numeric = (loss_at(f, up, weights, opt.dtype) - loss_at(f, down, weights, opt.dtype)) / (2 * opt.eps);
    compare(along, numeric, "random direction " + std::to_string(d));
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " gradient checks differ (rtol " << opt.rtol << ", atol " << opt.atol
                                       << ", eps " << opt.eps << "):" << fails.str();
}

}  // namespace gc
