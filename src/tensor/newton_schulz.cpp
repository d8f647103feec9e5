// Newton–Schulz orthogonalization (tinygrad's Tensor.newton_schulz, Muon's core): a polynomial
// iteration that drives a matrix's singular values toward 1 using only matmuls.
#include "kiln/error.h"
#include "tensor/tensor_impl.h"

namespace kiln {

Tensor Tensor::newton_schulz(int steps, const std::vector<double>& params, double eps) const {
  if (ndim() < 2)
    throw_error("newton_schulz: expected a tensor of 2 or more dims, got shape ", shape_to_string(shape()));
  if (steps < 0) throw_error("newton_schulz: steps must be >= 0, got ", steps);
  if (params.empty()) throw_error("newton_schulz: expected at least one coefficient in params");
  // G G^T is the smaller product for a wide matrix
  if (shape()[ndim() - 2] > shape()[ndim() - 1])
    return transpose(-2, -1).newton_schulz(steps, params, eps).transpose(-2, -1);
  Tensor g = *this / (square().sum({-2, -1}, true).sqrt() + eps);
  for (int s = 0; s < steps; s++) {
    const Tensor gram = g.matmul(g.transpose(-2, -1));
    Tensor term = g, next = g * params[0];
    for (size_t i = 1; i < params.size(); i++) {
      term = gram.matmul(term);
      next = next + term * params[i];
    }
    g = next;
  }
  return g;
}

}  // namespace kiln
