#pragma once
// Kernel optimizations as small records (tinygrad's Opt). Each one splits or retypes one loop of a
// kernel AST, named by its RANGE id:
//   THREAD(axis, amt)  the loop's iterations are divided among amt cores (an output loop only);
//   UPCAST(axis, amt)  an output loop split as r = r_outer*amt + r_inner, r_inner becoming amt
//                      copies of the body (expander.cpp): a register tile; along the loop the
//                      output is contiguous in, the copies are SIMD lanes;
//   UNROLL(axis, amt)  a reduced loop split the same way, its inner part summed in SIMD lanes
//                      (vectorize.cpp), one such loop per kernel;
//   SWAP(axis, amt)    the output loops `axis` and `amt` trade places in the loop nest;
//   PADTO(axis, amt)   a loop (output or reduced) of n iterations runs n rounded up to a multiple
//                      of amt, the extra ones doing nothing: every buffer access that varies with it
//                      is gated by r < n, and a reduction over it adds its identity there. Then a
//                      tile of amt (UPCAST, UNROLL) fits sizes it does not divide (n = 1000, 257);
//   LOCAL(axis, amt)   an output loop split the same way, r_inner becoming amt work-items of a
//                      work-group (get_local_id / threadIdx): devices with work-groups only;
//   GROUP(axis, amt)   a reduced loop split the same way, r_inner becoming amt work-items that each
//                      reduce a share and combine their partials in local memory (group_reduce.cpp).
// On devices with work-groups the THREAD loop is shared among the work-groups (core_id is the
// group id; there may be as many groups as iterations); a kernel has at most 3 LOCAL and GROUP axes (the launch's dimensions) and one GROUP.
// The split keeps the outer loop's id; the inner loop gets the next free id. Opts are applied in
// order, so a list of them replays exactly: the hand-written heuristics (heuristics/) and BEAM
// search (engine/beam_search.cpp) both produce such lists.
#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "kiln/ir/uop.h"

namespace kiln::codegen {

struct Target;

enum class OptOp : uint8_t { THREAD, UPCAST, UNROLL, SWAP, LOCAL, GROUP, PADTO };

struct Opt {
  OptOp op;
  int64_t axis;
  int64_t amt;
  bool operator==(const Opt&) const = default;
  std::string str() const;  // "UPCAST(axis=1, amt=4)"
};

// The opts printed one per line by str(), read back; throws kiln::Error naming the bad line.
std::vector<Opt> parse_opts(const std::string& text);
std::string opts_to_string(const std::vector<Opt>& opts);

// `ast` with `opt` applied, or null when the opt is not legal for it (no such loop, a loop of the
// wrong kind, an amount that does not divide it, a second THREAD or UNROLL, a register tile too
// big for the target, LOCAL or GROUP on a target without work-groups or past its work-group size
// or local memory). Legal opts never change what the kernel computes.
UOpRef apply_opt(const UOpRef& ast, const Opt& opt, const Target& target);
// Whether apply_opt would apply `opt`, without applying it (checks only: cheap).
bool opt_applies(const UOpRef& ast, const Opt& opt, const Target& target);
// Every opt in order; throws kiln::Error naming the first one that is not legal.
UOpRef apply_opts(const UOpRef& ast, const std::vector<Opt>& opts, const Target& target);
// The cores a kernel with these opts runs on (THREAD's amount, else 1): on devices with work-groups,
// the number of work-groups.
int64_t thread_count(const std::vector<Opt>& opts);
// The kernel's LOCAL and GROUP_REDUCE ranges by id: local dimension i of the launch is the i-th.
std::vector<const UOp*> local_axes(const UOpRef& ast);

// Every legal opt one step from `ast` (BEAM search's moves): THREAD on an output loop, UPCAST of
// an output loop and UNROLL of a reduced one by the amounts that divide them, PADTO of a loop to
// a vector-friendly multiple it is not one of already (adding at most a quarter), SWAP of two loops,
// and on targets with work-groups LOCAL of an output loop and GROUP of a reduced one.
std::vector<Opt> possible_opts(const UOpRef& ast, const Target& target);

// The kernel's RANGEs by id, and their sizes and kinds.
std::vector<const UOp*> ranges_of(const UOpRef& ast);
int64_t range_size(const UOp* r);
AxisType axis_type(const UOp* r);
int64_t axis_id(const UOp* r);
// Whether `reduce` is a REDUCE over the range r.
bool reduces_over(const UOp* reduce, const UOp* r);
// The ranges a node depends on: the loops its value varies with and, for a REDUCE, those it reduces.
std::unordered_set<const UOp*> ranges_below(const UOp* u);
// Every range some reduction of the kernel depends on (the others it is broadcast along).
std::unordered_set<const UOp*> ranges_under_reductions(const UOpRef& ast);
// The loops some load's gate holds at one value: the stacked loops of a stack's or cat's pieces.
std::unordered_set<const UOp*> stacked_ranges(const UOpRef& ast);

// Opts chosen by hand-written rules (heuristics/rules.h): THREAD for big kernels, register tiles for
// reductions, vector accumulators for reductions along contiguous data; on targets with
// work-groups, LOCAL tiles of the output and GROUP for reductions with few outputs.
std::vector<Opt> hand_coded_opts(const UOpRef& ast, const Target& target);

}  // namespace kiln::codegen
