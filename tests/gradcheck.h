#pragma once
// Finite-difference gradient checks for kiln's autograd, shared by the autograd and nn-op tests.
//
// For a function f(inputs) -> Tensor of any shape, the scalar checked is
//     loss(inputs) = sum(f(inputs) * R)
// with R a fixed random array of f's output shape (so every output element matters, with a
// different weight). The analytic gradient is loss.gradient(inputs); the numeric one perturbs a
// host copy of each input element by +-eps, rebuilds the tensors, and takes central differences:
//     (loss(x + eps e_i) - loss(x - eps e_i)) / (2 eps)
// Its error is O(eps^2 f''') from truncation plus O(macheps |loss| / eps) from rounding: with
// float64, eps = 1e-6 and |loss| of order 1-10, both stay below 1e-8. The default tolerance,
// |analytic - numeric| <= 1e-7 + 1e-5 |numeric|, leaves a wide margin over that and still catches
// any wrong rule (a wrong factor or sign, a missing term, a misplaced index).
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
  uint64_t seed = 99;                   // of the output weights R
};

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

// The analytic gradients of f's weighted loss against central differences, for every element of
// every input. Use as EXPECT_TRUE(gc::check(...)).
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
  for (size_t i = 0; i < xs.size(); i++) {
    if (grads[i].shape() != xs[i].shape)
      return ::testing::AssertionFailure() << "gradient of input " << i << " has shape " << ref::shape_str(grads[i].shape())
                                           << ", the input " << ref::shape_str(xs[i].shape);
    std::vector<double> analytic = kt::read(grads[i]);
    for (int64_t j = 0; j < xs[i].size(); j++) {
      const double x0 = xs[i].data[j];
      xs[i].data[j] = x0 + opt.eps;
      const double up = loss_at(f, xs, weights, opt.dtype);
      xs[i].data[j] = x0 - opt.eps;
      const double down = loss_at(f, xs, weights, opt.dtype);
      xs[i].data[j] = x0;
      const double numeric = (up - down) / (2 * opt.eps);
      if (!ref::close_enough(analytic[j], numeric, opt.rtol, opt.atol)) {
        if (bad++ < 3)
          fails << "\n  input " << i << " " << ref::index_str(ref::unravel(j, xs[i].shape)) << " of "
                << ref::shape_str(xs[i].shape) << ": analytic " << analytic[j] << ", numeric " << numeric;
      }
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " gradient elements differ (rtol " << opt.rtol << ", atol " << opt.atol
                                       << ", eps " << opt.eps << "):" << fails.str();
}

}  // namespace gc
