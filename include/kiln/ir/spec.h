#pragma once
// Spec validators: what each stage's graph may contain. They throw kiln::Error naming the first
// node that breaks the stage's rules. Tests run them on every stage; SPEC=1 runs them always.
#include "kiln/ir/uop.h"

namespace kiln::spec {

// The Tensor API's graphs: buffers, constants, movement, elementwise, REDUCE over axes, hints.
void verify_tensor_graph(const UOpRef& root);
// A scheduled kernel: SINK of STOREs into PARAMs, loads through INDEX, kernel-form REDUCEs over RANGEs.
void verify_kernel(const UOpRef& sink);
// A linearized program: no tensor-graph ops, every source listed before its user, loops balanced.
void verify_linear(const std::vector<UOpRef>& linear);

}  // namespace kiln::spec
