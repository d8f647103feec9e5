#pragma once
// Reverse-mode differentiation over the tensor graph. The backward rules are a pattern list (one
// rule per primitive op) that build gradient graphs out of ordinary tensor ops, so the result is
// lazy, hash-consed and fuses like any other graph.
#include <unordered_map>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::autograd {

// d root / d node for every node of root's graph that lies on a path to one of `targets`
// (targets included), given d root / d root = `root_grad`. Nodes of integer or bool dtype carry no
// gradient; DETACH stops it.
std::unordered_map<const UOp*, Tensor> compute_gradient(const Tensor& root, const Tensor& root_grad,
                                                        const std::vector<const UOp*>& targets);

}  // namespace kiln::autograd
