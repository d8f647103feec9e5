#pragma once
// Symbolic simplification: constant folding, algebraic identities, and the index arithmetic the
// scheduler leans on (div/mod folding with value ranges, term combining). Views are index
// expressions in kiln, so this simplifier is what makes a reshape of a permute cheap.
#include <vector>

#include "kiln/ir/pattern_matcher.h"

namespace kiln {

// Evaluates one ALU op on constant operands with the semantics of `dtype` (C wraparound for
// integers, float32 rounding, C truncating division). Throws kiln::Error for ops it can't fold.
//   - `dtype` is the dtype the op computes in: for CMPLT/CMPNE/CMPEQ the operands' dtype (the result
//     is a bool, 0 or 1); for WHERE the result dtype (operand 0 is the condition, nonzero = true).
//   - Integers wrap at the dtype's width as C computes them (narrow types promote to int, so shifts
//     by up to 31 are defined for them); bool results are `!= 0`. Operands convert like a C cast.
//   - Floats: operands and result are rounded to the dtype (float32/float16/bfloat16), computed in
//     double in between; MAX is (a > b ? a : b).
//   - Throws for: IDIV/MOD by zero, shifts by a negative or too large count, float ops on ints and
//     int ops on floats, non-ALU ops (CAST is not an ALU op), the wrong operand count.
// int64/uint64 operands travel as doubles here, so they are exact only below 2^53; the rewrite
// rules fold integer CONSTs on their exact int64 values instead.
double exec_alu(Ops op, DType dtype, const std::vector<double>& operands);

// Folds constants and removes identities (x+0, x*1, x*0 for ints, where(true,a,b), ...).
// Folding that exec_alu refuses (e.g. x//0) leaves the node for runtime. Floats keep IEEE results:
// x*0.0 and x+0.0 stay, x+(-0.0), x-0.0, x*1, x/1 fold. Integer/bool ALU and CAST nodes whose range
// is one value become that CONST; RANGE/SPECIAL nodes themselves are kept (they are loop structure).
const PatternMatcher& symbolic_simple();
// symbolic_simple plus index math: div/mod by constants using value ranges, combining like terms.
// Integer sums are kept in one canonical form: Σ term*coef + const, terms ordered by structure
// (never by address), so equal index expressions are the same node in every run. Rules that use
// vmin/vmax first check that no integer node below could have wrapped (compute_range clamps).
const PatternMatcher& symbolic();
// A gated INDEX's address simplified with the ranges its gate implies (simplify_valid.cpp).
const PatternMatcher& simplify_valid_rules();
// The RANGEs a bool gate holds at one value (`2 < r & r < 4`: a piece of a stack or cat, valid on
// one iteration of the stacked loop).
std::vector<const UOp*> ranges_pinned_by(const UOpRef& gate);
// graph_rewrite(u, symbolic() + simplify_valid_rules()). VIZ=1 records it only under a
// `traced_name` (whole kernels: the many small index expressions are not worth a trace each).
UOpRef simplify(const UOpRef& u, std::string_view traced_name = {});

}  // namespace kiln
