// clip_grad_norm_: PyTorch's formula (the 1e-6 keeps a zero norm from dividing by zero). Everything
// stays lazy, so the clip fuses into the optimizer step that reads the gradients.
#include "kiln/nn/clip_grad.h"

#include <cmath>
#include <optional>

#include "kiln/error.h"

namespace kiln::nn {

Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm) {
  if (!(max_norm >= 0) || std::isinf(max_norm))
    throw_error("clip_grad_norm_: max_norm must be a finite number >= 0, got ", max_norm);
  std::vector<Tensor> grads;
  for (const Tensor& p : params)
    if (auto g = p.grad()) grads.push_back(*g);
  if (grads.empty()) return Tensor::zeros({});
  // squares summed in float32 at least (half-precision gradients would overflow), float64 stays
  std::optional<Tensor> sum_sq;
  for (const Tensor& g : grads) {
    Tensor s = (g.dtype() == dtypes::float64 ? g : g.cast(dtypes::float32)).square().sum();
    sum_sq = sum_sq ? *sum_sq + s : s;
  }
  Tensor norm = sum_sq->sqrt();
  Tensor coef = (max_norm / (norm + 1e-6)).minimum(1.0);
  for (Tensor& g : grads) g.assign((g * coef).cast(g.dtype()));
  return norm;
}

}  // namespace kiln::nn
