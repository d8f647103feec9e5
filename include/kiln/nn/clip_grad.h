#pragma once
// Gradient clipping by the joint norm of every gradient, as PyTorch's torch.nn.utils.clip_grad_norm_.
#include <vector>

#include "kiln/tensor.h"

namespace kiln::nn {

// Scales every parameter's .grad in place (lazily, through assign) by min(1, max_norm / (norm + 1e-6)),
// where norm is the L2 norm of all gradients together, and returns that norm before clipping (a
// scalar: float64 if a gradient is, else float32). Parameters without a gradient are skipped; with
// none, the norm is 0.
Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm);

}  // namespace kiln::nn
