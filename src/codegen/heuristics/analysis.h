#pragma once
// Queries on a kernel AST that the heuristics' rules share: which loads a reduction pays for and
// how they move along each loop, vector lanes and registers, gated and broadcast loops.
#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "codegen/codegen.h"

namespace kiln::codegen::heuristics {

// The largest power of two in [2, cap] dividing n (vector widths), else its largest divisor in
// [2, cap], else 0.
int64_t upcast_amount(int64_t n, int64_t cap);
// The largest power of two in [2, cap] dividing n, else 0.
int64_t power_of_two_divisor(int64_t n, int64_t cap);

// The address of a LOAD (its INDEX without the validity gate).
const UOp* address(const UOp* load);
// Whether a load's address varies with the range r.
bool address_reads(const UOp* load, const UOp* r);
// The loads inside the reduction loops: the ones the inner loop pays for.
std::vector<const UOp*> loads_in_reduction(const UOpRef& ast);
// For each range, which of loads_in_reduction's loads (n_loads of them) read an address that
// depends on it.
std::unordered_map<const UOp*, std::vector<bool>> load_dependence(const UOpRef& ast, size_t& n_loads);
// Whether a load in the reduction loop moves along r other than one element per step (its
// copies along r would be scalar loads gathered into a vector).
bool gathers_along(const UOpRef& ast, const UOp* r);
// Whether a load in the reduction loop reads consecutive elements along r (its copies would be
// one vector load).
bool reads_neighbours(const UOpRef& ast, const UOp* r);
// The loops some load's validity gate varies with. Copies of a load along such a loop are each a
// branch: the C compiler can no longer vectorize them, so gated loops are not upcast.
std::unordered_set<const UOp*> gated_ranges(const UOpRef& ast);

// How many SIMD lanes r's copies fill when every store of the kernel steps by one element along
// it (vectorize.cpp), else 0.
int64_t vector_lanes(const UOpRef& ast, const UOp* r, int vector_bytes);
// Vector registers the chunks of an n-lane vector take (20 lanes: 16 + 4, two).
int64_t chunk_count(int64_t n, int64_t lanes);
// Vector accumulators a register tile may use, and fewer when each update computes an inline exp.
int64_t max_vector_accumulators(const Target& target);
int64_t max_vector_accumulators_with_exp(const Target& target);
bool reduces_an_exp(const UOpRef& ast);

// A reduced loop to vectorize when the outputs make no full vector (a conv's weight gradient:
// its output rows are a 5-wide kernel row): the innermost one that every load moving along it
// reads contiguously, ungated, when every reduction is a float sum or max. With `only`, one of
// that reduction's loops.
const UOp* reduce_vector_axis(const UOpRef& ast, const UOp* only = nullptr);
// Output loops whose copies would shift a vector load along `unroll` by less than a vector: the
// copies then load overlapping, misaligned vectors of the same row (a conv weight gradient's kx
// next to its vectorized ox), which runs about half as fast as copies along another loop (ky).
std::unordered_set<const UOp*> misaligned_with(const UOpRef& ast, const UOp* unroll, int64_t lanes);
// Whether some reduction does not vary with some output loop (it is broadcast along it, as a fused
// softmax's row max along the row): a SWAP moving that loop outside would recompute the reduction
// in every iteration of it (OpenCL's softmax would compute its max once per output).
bool broadcasts_a_reduction(const UOpRef& ast);

}  // namespace kiln::codegen::heuristics
