#pragma once
// Codegen: a kernel AST from the scheduler → optimized, lowered, linearized → source text.
// Every step is a graph rewrite or a walk over UOps; nothing here runs a kernel.
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/opt.h"
#include "kiln/ir/pattern_matcher.h"
#include "kiln/ir/uop.h"
#include "renderer/renderer.h"

namespace kiln::codegen {

struct Program {
  std::string name;          // function name, e.g. "r_16_16"
  std::string display_name;  // the name with axes colored by kind (ANSI), for DEBUG output
  std::string source;
  std::vector<UOpRef> linear;
  std::vector<Opt> opts;     // applied optimizations, printed at DEBUG=3
  int64_t threads = 1;       // launch size: core_ids 0..threads-1 (work-groups when local_size > 1)
  // The launch's work-items in all and per work-group, by dimension (local dimension i is the
  // kernel's i-th LOCAL/GROUP axis, work-groups go along dimension 0); without work-groups
  // {threads, 1, 1} and {1, 1, 1}.
  std::array<int64_t, 3> global_size{1, 1, 1}, local_size{1, 1, 1};
  double flops = 0;          // estimated arithmetic operations per launch
};

struct Target {
  const renderer::Renderer* renderer;
  int max_threads = 1;
  bool optimize = true;      // false with NOOPT=1
  int vector_bytes = 0;      // widest SIMD register (64 with AVX-512); 0: scalar code only
  int max_local_size = 0;    // work-items per work-group; 0: no work-groups (C), no LOCAL or GROUP
  int64_t local_memory_bytes = 0;  // local (__shared__) memory per work-group
  bool prefer_work_groups = true;  // whether hand_coded_opts uses them (else the CPU's loop opts)
  int vector_registers = 16;       // how many SIMD registers of vector_bytes (register tile sizes)
  // The last-level cache's size (0: unknown). Kernels that store more store whole cache lines past
  // the caches; reductions over bigger inputs prefetch (prefetch.cpp).
  int64_t cache_bytes = 0;
  int64_t l2_cache_bytes = 0;  // one core's L2 (0: unknown): what stays near a core across a loop
};

// The most rows a matmul's register tile takes on a CPU with `vector_registers` SIMD registers: two
// vectors of columns per row within the accumulator budget (heuristics/). The scheduler pads a
// matmul's rows to a multiple of it where no divisor gives the tile enough rows (matmul_tiles.cpp).
int64_t matmul_tile_rows(int vector_registers);

// Rules: each float sum or maximum over an UNROLL range accumulated in vectors along it
// (vectorize.cpp), with the context they read: vectors of up to `vector_bytes`.
const PatternMatcher& pm_vectorize_unrolls();
std::unique_ptr<RewriteCtx> unroll_ctx(const UOpRef& sink, int vector_bytes);
// UPCAST ranges → copies of the statements that use them, one per value of the range; the
// innermost one along which the stores are contiguous becomes SIMD vectors of up to
// `vector_bytes` (vectorize.cpp) when vector_bytes > 0. `unrolled`: the kernel's reductions were
// vectorized along UNROLL ranges (by pm_vectorize_unrolls).
UOpRef expand_upcasts(const UOpRef& sink, int vector_bytes, bool unrolled);
// `statement` with `axis` (an UPCAST range) as vectors of at most `max_lanes` lanes.
UOpRef vectorize_axis(const UOpRef& statement, const UOp* axis, int64_t max_lanes);
// d(e)/d(axis) when the index expression e is linear in axis (1: neighbours in memory), else nullopt.
std::optional<int64_t> linear_coefficient(const UOp* e, const UOp* axis);
// Rules: reductions over a GROUP_REDUCE range → each work-item's partial into local memory, a
// barrier, and a reduction of the partials (run by every work-item, which all get the same
// result); with their context, the barriers the kernel's reductions share (group_reduce.cpp).
const PatternMatcher& pm_group_reduces();
std::unique_ptr<RewriteCtx> group_reduce_ctx(const UOpRef& sink);
// Long float sums accumulated in blocks of loop iterations, each block's total added to the sum's
// (block_sums.cpp): the rounding error grows with the block count and size, not the term count.
UOpRef block_long_sums(const UOpRef& sink);
// REDUCE → accumulator registers: initialize, update in their loops, read after them.
UOpRef lower_reduces(const UOpRef& ast);
// Flat list in program order: loops open right before they're needed and close right after.
std::vector<UOpRef> linearize(const UOpRef& sink);
// Estimated ALU operations of a linearized kernel (each op times the trip count of its loops).
double estimate_flops(const std::vector<UOpRef>& linear);
// Bytes a linearized kernel stores to its buffers (each store times the trip count of its loops).
double estimate_stored_bytes(const std::vector<UOpRef>& linear);
// Loads of a linearized kernel to prefetch ahead of (prefetch.cpp), with how many elements ahead:
// loads in reductions from inputs bigger than `cache_bytes`, the next slab along their innermost
// output loop, one load per cache line of upcast copies. None when cache_bytes is 0.
std::unordered_map<const UOp*, int64_t> prefetch_distances(const std::vector<UOpRef>& linear, int64_t cache_bytes);

// The whole pipeline for one kernel, with the given opts (none: hand_coded_opts picks them;
// throws kiln::Error if one does not apply).
Program to_program(const UOpRef& ast, const Target& target, const std::optional<std::vector<Opt>>& opts = std::nullopt);

}  // namespace kiln::codegen
