#pragma once
// Symbolic simplification: constant folding, algebraic identities, and the index arithmetic the
// scheduler leans on (div/mod folding with value ranges, term combining). Views are index
// expressions in kiln, so this simplifier is what makes a reshape of a permute cheap.
#include <vector>

#include "kiln/ir/pattern_matcher.h"

namespace kiln {

// Evaluates one ALU op on constant operands with the semantics of `dtype` (C wraparound for
// integers, float32 rounding, C truncating division). Throws kiln::Error for ops it can't fold.
double exec_alu(Ops op, DType dtype, const std::vector<double>& operands);

// Folds constants and removes identities (x+0, x*1, x*0 for ints, where(true,a,b), ...).
const PatternMatcher& symbolic_simple();
// symbolic_simple plus index math: div/mod by constants using value ranges, combining like terms.
const PatternMatcher& symbolic();
// graph_rewrite(u, symbolic()).
UOpRef simplify(const UOpRef& u);

}  // namespace kiln
