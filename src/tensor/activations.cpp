// Activation functions, as compositions of elementwise primitives (tinygrad's formulas).
#include <cmath>
#include <numbers>
#include <string>

#include "kiln/error.h"
#include "tensor/tensor_impl.h"

namespace kiln {

Tensor Tensor::gelu(std::string_view approximate) const {
  if (approximate == "none") return *this * 0.5 * (1.0 + (*this * (1 / std::numbers::sqrt2)).erf());
  if (approximate != "tanh")
    throw_error("gelu: approximate must be \"tanh\" or \"none\", got \"", std::string(approximate), "\"");
  const double c = std::sqrt(2 / std::numbers::pi);
  return 0.5 * *this * (1.0 + (c * (*this + 0.044715 * *this * *this * *this)).tanh());
}
Tensor Tensor::quick_gelu() const { return *this * (*this * 1.702).sigmoid(); }
Tensor Tensor::silu() const { return *this * sigmoid(); }
Tensor Tensor::swish() const { return silu(); }
Tensor Tensor::relu6() const { return relu() - (*this - 6.0).relu(); }
Tensor Tensor::hardswish() const { return *this * (*this + 3.0).relu6() * (1.0 / 6); }
Tensor Tensor::mish() const { return *this * softplus().tanh(); }
Tensor Tensor::hardtanh(double lo, double hi) const { return clip(lo, hi); }
Tensor Tensor::leaky_relu(double neg_slope) const { return lt(0).where(*this * neg_slope, *this); }
Tensor Tensor::elu(double alpha) const { return relu() - alpha * (1.0 - exp()).relu(); }
Tensor Tensor::celu(double alpha) const { return maximum(0) + (alpha * ((*this / alpha).exp() - 1.0)).minimum(0); }
Tensor Tensor::selu(double alpha, double gamma) const { return gamma * ge(0).where(*this, alpha * (exp() - 1.0)); }
// clip, not tinygrad's relu(y) - relu(y - 1), which is inf - inf at x = inf
Tensor Tensor::hardsigmoid(double alpha, double beta) const { return (alpha * *this + beta).clip(0, 1); }
Tensor Tensor::softsign() const { return *this / (1.0 + abs()); }
Tensor Tensor::logsigmoid() const { return -(-*this).softplus(); }

Tensor Tensor::softplus(double beta) const {
  // log(1 + e^(bx)) / b, computed as max(bx, 0) + log(1 + e^-|bx|) so large inputs don't overflow
  // (-|bx| as a where: its gradient at 0 is then 1, so the gradient there is sigmoid(0) = 1/2, as
  // PyTorch's, where relu's is 0)
  Tensor bx = *this * beta;
  return (bx.relu() + (1.0 + bx.gt(0.0).where(-bx, bx).exp()).log()) * (1.0 / beta);
}

Tensor Tensor::erf() const {
  // Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7)
  Tensor t = 1.0 / (1.0 + 0.3275911 * abs());
  Tensor poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t;
  return sign() * (1.0 - poly * (-square()).exp());
}

}  // namespace kiln
