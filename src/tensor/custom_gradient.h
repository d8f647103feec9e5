#pragma once
// Custom gradients for composite ops (JAX's custom_vjp, PyTorch's autograd.Function): the
// gradient of a node built from primitives can be given by a function instead of being derived
// from its graph, when a different formula runs much faster. conv2d uses it so that its input
// gradient is a transposed convolution over an explicitly padded gradient (no per-element bounds
// checks in the hot loop) instead of the sliding window's derived, gated col2im sum.
#include <functional>
#include <optional>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::autograd {

// Given d root / d out and which inputs need a gradient, d root / d input for each input (nullopt
// where none is wanted). Called only during backward()/gradient().
using CustomBackward =
    std::function<std::vector<std::optional<Tensor>>(const Tensor& grad, const std::vector<bool>& wanted)>;

struct CustomGradient {
  std::vector<UOpRef> inputs;  // out's differentiable inputs, in the order backward answers
  CustomBackward backward;
};

// `out` with its gradient from `backward` instead of derived: the composite's result to hand on.
// That is `out` itself when it ends in a reduction or a movement op, else a same-shape reshape of
// it (a view that costs nothing): only those ops' nodes are watched for their release, which
// every elementwise node would otherwise pay for. The entry lives as long as the node does.
// Capture UOpRefs, not Tensors, in `backward`: a Tensor may be assigned a new value later
// (optimizer steps), its graph node may not.
[[nodiscard]] Tensor set_custom_gradient(const Tensor& out, std::vector<Tensor> inputs, CustomBackward backward);
// The custom gradient registered for `node`, if any.
std::optional<CustomGradient> custom_gradient(const UOp* node);

}  // namespace kiln::autograd
