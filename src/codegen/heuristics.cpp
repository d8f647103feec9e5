// Hand-written rules that pick a kernel's opts (opt.h) without search: THREAD for kernels with
// enough work, and for reductions a register tile (UPCAST) shaped like a BLAS micro-kernel, or
// vector accumulators along a reduced loop (UNROLL) when the outputs make no full vector. Targets
// that prefer work-groups (GPUs) get work-group tiles (LOCAL) and shared reductions (GROUP) instead.
#include <algorithm>
#include <cstdlib>
#include <unordered_map>
#include <unordered_set>

#include "codegen/codegen.h"
#include "codegen/opt.h"
#include "kiln/ir/pattern_matcher.h"
#include "kiln/ir/symbolic.h"

namespace kiln::codegen {
namespace {

// Below this many inner-loop iterations a kernel runs faster on one core than it takes to wake others.
constexpr double kMinWorkPerThreadSplit = 1 << 16;
// Copies of a reduction body: enough accumulators for a vector register or two, few enough that
// they all stay in registers.
constexpr int64_t kInnerUpcast = 8, kOuterUpcast = 4;


// The largest power of two in [2, cap] dividing n (vector widths), else its largest divisor in
// [2, cap], else 0.
int64_t upcast_amount(int64_t n, int64_t cap) {
  for (int64_t a = cap; a >= 2; a /= 2)
    if (a <= n && n % a == 0) return a;
  for (int64_t a = std::min(cap, n); a >= 2; a--)
    if (n % a == 0) return a;
  return 0;
}

// The address of a LOAD (its INDEX without the validity gate).
const UOp* address(const UOp* load) { return load->src[0]->src[1].get(); }

// Whether a load's address varies with the range r.
bool address_reads(const UOp* load, const UOp* r) {
  const auto topo = address(load)->toposort();
  return std::find(topo.begin(), topo.end(), r) != topo.end();
}

// The loads inside the reduction loops: the ones the inner loop pays for.
std::vector<const UOp*> loads_in_reduction(const UOpRef& ast) {
  std::vector<const UOp*> loads;
  for (const UOp* u : ast->toposort()) {
    if (u->op != Ops::LOAD) continue;
    const auto topo = address(u)->toposort();
    if (std::any_of(topo.begin(), topo.end(),
                    [](const UOp* r) { return r->op == Ops::RANGE && axis_type(r) == AxisType::REDUCE; }))
      loads.push_back(u);
  }
  return loads;
}

// Which of those loads read an address that depends on each range.
std::unordered_map<const UOp*, std::vector<bool>> load_dependence(const UOpRef& ast, size_t& n_loads) {
  std::unordered_map<const UOp*, std::vector<bool>> out;
  std::vector<const UOp*> loads = loads_in_reduction(ast);
  n_loads = loads.size();
  for (size_t i = 0; i < loads.size(); i++)
    for (const UOp* u : address(loads[i])->toposort())
      if (u->op == Ops::RANGE) {
        auto& deps = out[u];
        deps.resize(loads.size(), false);
        deps[i] = true;
      }
  return out;
}

// How many SIMD lanes r's copies fill when every store of the kernel steps by one element along
// it (vectorize.cpp), else 0.
int64_t vector_lanes(const UOpRef& ast, const UOp* r, int vector_bytes) {
  int itemsize = 0;
  for (const UOp* u : ast->toposort())
    if (u->op == Ops::STORE) {
      if (linear_coefficient(u->src[0]->src[1].get(), r) != 1) return 0;
      itemsize = std::max(itemsize, u->src[1]->dtype.itemsize());
    }
  return itemsize ? vector_bytes / itemsize : 0;
}

// Vector accumulators the register tile may use: three quarters of the vector registers (the loads
// need the rest). AVX-512 has 32 (24 accumulators: an 8x32 matmul tile), AVX2 and SSE 16 (12: a
// 4x16 tile; the 8x16 tile spilled and ran at 0.75x on a Zen 3).
int64_t max_vector_accumulators(const Target& target) { return target.vector_registers * 3 / 4; }
// Fewer when each accumulator's update computes an inline exp (c_math.cpp: ~5 live vectors each,
// beside ~14 constants): one per 8 registers. A softmax's exp-and-sum ran ~1.5x faster with 4 than
// with 16 on AVX-512, and ~1.2x faster with 2 than with 4 on AVX2, whose 16 registers spilled.
int64_t max_vector_accumulators_with_exp(const Target& target) { return std::max(1, target.vector_registers / 8); }

bool reduces_an_exp(const UOpRef& ast) {
  for (const UOp* u : ast->toposort())
    if (u->op == Ops::REDUCE)
      for (const UOp* v : u->src[0]->toposort())
        if (v->op == Ops::EXP || v->op == Ops::EXP2) return true;
  return false;
}

// Vector registers the chunks of an n-lane vector take (20 lanes: 16 + 4, two).
int64_t chunk_count(int64_t n, int64_t lanes) {
  int64_t count = 0;
  for (int64_t width = lanes; n > 0; width /= 2)
    for (; width >= 1 && n >= width; n -= width) count++;
  return count;
}

// A conv's tile of output channels x a row of pixels loads, per step of the reduction, one weight
// per channel and the row's vector chunks. When the row is several chunks (24 wide: 16 + 8), half
// the channels and two rows make as many accumulators from fewer loads (4 + 2x2 instead of 8 + 2):
// a third pick of 2 on an output loop whose loads all move with the first pick too (the next
// output row), the second pick halved. ~1.3x on the MNIST CNN's 5x5 convolutions; with a row of
// one chunk (a block of 8 pixels) measured slower, so not then.
template <class Depends>
void add_row_pair(std::vector<std::pair<const UOp*, int64_t>>& picks, const std::vector<const UOp*>& outputs,
                  size_t n_loads, const Depends& depends, int64_t lanes) {
  auto& [first, first_amt] = picks[0];
  auto& [second, second_amt] = picks[1];
  const int64_t chunks = chunk_count(first_amt, lanes);
  if (chunks < 2 || second_amt % 2 != 0 || second_amt / 2 <= chunks) return;
  for (auto it = outputs.rbegin(); it != outputs.rend(); ++it) {
    if (*it == first || *it == second || range_size(*it) % 2 != 0) continue;
    bool moves_with_first = false, only_with_first = true;
    for (size_t i = 0; i < n_loads; i++)
      if (depends(*it, i)) {
        moves_with_first = true;
        only_with_first &= depends(first, i);
      }
    if (moves_with_first && only_with_first) {
      second_amt /= 2;
      picks.push_back({*it, 2});
      return;
    }
  }
}

// The loops some load's validity gate varies with. Copies of a load along such a loop are each a
// branch: the C compiler can no longer vectorize them, so gated loops are not upcast.
std::unordered_set<const UOp*> gated_ranges(const UOpRef& ast) {
  std::unordered_set<const UOp*> gated;
  for (const UOp* u : ast->toposort())
    if (u->op == Ops::INDEX && u->src.size() > 2)
      for (const UOp* g : u->src[2]->toposort())
        if (g->op == Ops::RANGE) gated.insert(g);
  return gated;
}

// Whether a load in the reduction loop moves along r other than one element per step (its
// copies along r would be scalar loads gathered into a vector).
bool gathers_along(const UOpRef& ast, const UOp* r) {
  const auto loads = loads_in_reduction(ast);
  return std::any_of(loads.begin(), loads.end(),
                     [&](const UOp* l) { return address_reads(l, r) && linear_coefficient(address(l), r) != 1; });
}

// Whether a load in the reduction loop reads consecutive elements along r (its copies would be
// one vector load).
bool reads_neighbours(const UOpRef& ast, const UOp* r) {
  const auto loads = loads_in_reduction(ast);
  return std::any_of(loads.begin(), loads.end(), [&](const UOp* l) { return linear_coefficient(address(l), r) == 1; });
}

// Register tiling for reductions, as a BLAS micro-kernel: upcast an output loop that some loads do
// not depend on (those loads are then shared by every copy), innermost first, then a second loop
// that the first one's loads do not depend on (matmul: a column block and a row block; conv: output
// pixels and output channels). Without such loops, several outputs still give independent
// accumulators. A first loop along which the output is contiguous becomes vectors: up to two
// registers' worth of lanes, the whole loop when it fits (a 20-wide row: 16 + 4 lanes).
std::vector<std::pair<const UOp*, int64_t>> choose_upcasts(const UOpRef& ast, int64_t threads, const Target& target,
                                                           const std::unordered_set<const UOp*>& excluded = {}) {
  size_t n_loads = 0;
  auto deps = load_dependence(ast, n_loads);
  std::vector<const UOp*> outputs;
  for (const UOp* r : ranges_of(ast)) {
    if (axis_type(r) != AxisType::LOOP && axis_type(r) != AxisType::THREAD) continue;
    if (axis_type(r) == AxisType::THREAD && range_size(r) / 2 < threads) continue;  // keep the cores busy
    outputs.push_back(r);
  }
  const std::unordered_set<const UOp*> gated = gated_ranges(ast);
  std::erase_if(outputs, [&](const UOp* r) { return gated.count(r) > 0 || excluded.count(r) > 0; });
  auto depends = [&](const UOp* r, size_t load) { return deps.count(r) && deps.at(r)[load]; };
  auto reuses = [&](const UOp* r) {
    for (size_t i = 0; i < n_loads; i++)
      if (!depends(r, i)) return true;
    return false;
  };
  std::vector<std::pair<const UOp*, int64_t>> picks;
  const UOp* first = nullptr;
  for (auto it = outputs.rbegin(); it != outputs.rend() && !first; ++it)
    if (reuses(*it) && upcast_amount(range_size(*it), kInnerUpcast)) first = *it;
  if (first) {
    const int64_t n = range_size(first);
    const int64_t lanes = vector_lanes(ast, first, target.vector_bytes);
    picks.push_back({first, lanes < 2 ? upcast_amount(n, kInnerUpcast) : n <= 2 * lanes ? n : upcast_amount(n, 2 * lanes)});
    // the loads the first pick copies should be shared by the second, as many times as the
    // accumulators fit in registers
    const int64_t cap = std::max(kOuterUpcast, max_vector_accumulators(target) / chunk_count(picks[0].second, std::max<int64_t>(lanes, 1)));
    for (auto it = outputs.rbegin(); it != outputs.rend(); ++it) {
      if (*it == first || !upcast_amount(range_size(*it), cap)) continue;
      bool complements = true;
      for (size_t i = 0; i < n_loads; i++) complements &= !(depends(first, i) && depends(*it, i));
      if (complements) {
        picks.push_back({*it, upcast_amount(range_size(*it), cap)});
        break;
      }
    }
    if (picks.size() == 2) add_row_pair(picks, outputs, n_loads, depends, std::max<int64_t>(lanes, 1));
    return picks;
  }
  // no reuse: the innermost loop by 8 and the outermost by 4 give independent accumulators, to
  // hide the latency of their adds; not when the innermost copies gather (a load strides along
  // it), whose scalar loads take longer than the adds anyway: more copies only add registers (a
  // BatchNorm backward's sums over NCHW data, 8 channels x 4 chunks: ~1.25x slower, with spills)
  if (outputs.empty()) return picks;
  // A column sum (a split reduction's second kernel: 256 partials of a weight gradient's 25k
  // values) reads its innermost output loop contiguously, with every load that moves along it: four vectors along it read whole cache
  // lines, where 8 lanes x 4 outer outputs read half lines, evicted before the next tile reads
  // their other half (the 5x5 conv's partials: ~3 -> ~1.7 ms on a Zen 3).
  const int64_t lanes = vector_lanes(ast, outputs.back(), target.vector_bytes);
  if (lanes > 1 && range_size(outputs.back()) % (kOuterUpcast * lanes) == 0 && reads_neighbours(ast, outputs.back()) &&
      !gathers_along(ast, outputs.back())) {
    picks.push_back({outputs.back(), kOuterUpcast * lanes});
    return picks;
  }
  if (range_size(outputs.back()) % kInnerUpcast == 0) picks.push_back({outputs.back(), kInnerUpcast});
  const bool inner_gathers = !picks.empty() && gathers_along(ast, outputs.back());
  if (outputs.size() > 1 && range_size(outputs.front()) % kOuterUpcast == 0 && !inner_gathers)
    picks.push_back({outputs.front(), kOuterUpcast});
  return picks;
}

// A reduced loop to vectorize when the outputs make no full vector (a conv's weight gradient:
// its output rows are a 5-wide kernel row): the innermost one that every load moving along it
// reads contiguously, ungated, when every reduction is a float sum or max. With `only`, one of
// that reduction's loops.
const UOp* reduce_vector_axis(const UOpRef& ast, const UOp* only = nullptr) {
  std::vector<const UOp*> loads;
  for (const UOp* u : ast->toposort()) {
    const bool vector_op = u->op == Ops::REDUCE && (u->arg_as<ReduceArg>().op == Ops::ADD || u->arg_as<ReduceArg>().op == Ops::MAX);
    if (u->op == Ops::REDUCE && (!vector_op || (u->dtype.scalar != ScalarType::Float32 && u->dtype.scalar != ScalarType::Float64)))
      return nullptr;
    if (u->op == Ops::LOAD) loads.push_back(u);
  }
  const auto ranges = ranges_of(ast);
  for (auto it = ranges.rbegin(); it != ranges.rend(); ++it) {
    if (axis_type(*it) != AxisType::REDUCE) continue;
    if (only && !reduces_over(only, *it)) continue;
    bool moves = false, contiguous = true;
    for (const UOp* load : loads) {
      auto c = linear_coefficient(address(load), *it);
      const UOp* index = load->src[0].get();
      if (index->src.size() > 2 && linear_coefficient(index->src[2].get(), *it) != 0) contiguous = false;
      if (c == 1) moves = true;
      else if (c != 0) contiguous = false;
    }
    if (moves && contiguous) return *it;
  }
  return nullptr;
}

// Output loops whose copies would shift a vector load along `unroll` by less than a vector: the
// copies then load overlapping, misaligned vectors of the same row (a conv weight gradient's kx
// next to its vectorized ox), which runs about half as fast as copies along another loop (ky).
std::unordered_set<const UOp*> misaligned_with(const UOpRef& ast, const UOp* unroll, int64_t lanes) {
  std::unordered_set<const UOp*> out;
  for (const UOp* load : loads_in_reduction(ast)) {
    if (linear_coefficient(address(load), unroll) != 1) continue;
    for (const UOp* r : ranges_of(ast)) {
      auto c = linear_coefficient(address(load), r);
      if (r != unroll && c && *c != 0 && std::abs(*c) < lanes) out.insert(r);
    }
  }
  return out;
}

// Work-group shapes (tinygrad's hand_coded_optimizations for GPUs): a 16x16 tile of a reduction's
// outputs, a 1-D group of up to 256 along an elementwise kernel's innermost loop, and GROUP for
// reductions with so few outputs that each group of work-items had better share one.
constexpr int64_t kTileSide = 16, kLineGroup = 256, kGroupReduceMax = 256;
constexpr int64_t kFewOutputs = 64, kMinGroupedReduce = 256;

// The largest power of two in [2, cap] dividing n, else 0.
int64_t power_of_two_divisor(int64_t n, int64_t cap) {
  int64_t a = 1;
  while (a * 2 <= cap && n % (a * 2) == 0) a *= 2;
  return a >= 2 ? a : 0;
}

// Opts for targets with work-groups (OpenCL, CUDA): LOCAL or GROUP, then THREAD over the groups.
std::vector<Opt> work_group_opts(const UOpRef& ast, const Target& target) {
  std::vector<Opt> opts;
  UOpRef k = ast;
  auto add = [&](Opt o) {
    if (UOpRef next = apply_opt(k, o, target)) {
      opts.push_back(o);
      k = next;
    }
  };
  std::vector<const UOp*> loops, reduces;
  int64_t outputs = 1;
  for (const UOp* r : ranges_of(ast)) {
    if (axis_type(r) == AxisType::LOOP) {
      loops.push_back(r);
      outputs *= range_size(r);
    }
    if (axis_type(r) == AxisType::REDUCE) reduces.push_back(r);
  }
  const int64_t max_local = target.max_local_size;
  // GROUP: few outputs, a long reduction: the reduced loop with the largest power-of-two divisor
  // (the innermost among equals)
  int64_t reduced = 1;
  for (const UOp* r : reduces) reduced *= range_size(r);
  if (!reduces.empty() && outputs <= kFewOutputs && reduced >= kMinGroupedReduce) {
    const UOp* best = nullptr;
    int64_t best_amt = 0;
    for (const UOp* r : reduces) {
      const int64_t amt = power_of_two_divisor(range_size(r), std::min(kGroupReduceMax, int64_t{max_local}));
      if (amt >= best_amt) {
        best = r;
        best_amt = amt;
      }
    }
    if (best_amt >= 8) add({OptOp::GROUP, axis_id(best), best_amt});
  }
  // LOCAL: a 2-D tile of a reduction's two innermost output loops, else a line along the innermost;
  // only loops every reduction varies along (the work-items would each recompute a reduction that
  // does not, where one loop iteration computes it once: a softmax's row maximum)
  std::erase_if(loops, [&](const UOp* r) {
    for (const UOp* u : ast->toposort()) {
      if (u->op != Ops::REDUCE) continue;
      const auto below = u->toposort();
      if (std::find(below.begin(), below.end(), r) == below.end()) return true;
    }
    return false;
  });
  if (opts.empty() && !loops.empty()) {
    const bool tile = !reduces.empty() && loops.size() >= 2;
    const int64_t inner = power_of_two_divisor(range_size(loops.back()), std::min(tile ? kTileSide : kLineGroup, int64_t{max_local}));
    if (inner) add({OptOp::LOCAL, axis_id(loops.back()), inner});
    if (tile) {
      const UOp* second = loops[loops.size() - 2];
      const int64_t outer = power_of_two_divisor(range_size(second), std::min(kTileSide, max_local / std::max<int64_t>(inner, 1)));
      if (outer) add({OptOp::LOCAL, axis_id(second), outer});
    }
  }
  // THREAD: a work-group per iteration of the outermost output loop that remains (the outer part
  // of a split)
  for (const UOp* r : ranges_of(k))
    if (axis_type(r) == AxisType::LOOP && range_size(r) >= 2) {
      add({OptOp::THREAD, axis_id(r), range_size(r)});
      break;
    }
  return opts;
}

// Elementwise transposes (a channels-last copy back to NCHW, and the reverse): the stores run
// along one loop while a load steps at least a cache line per iteration along it and runs
// contiguously along another loop. Loop by loop, every load touches a new line and uses one
// float of it. A tile of up to 16 along the load's contiguous loop and 4 along the store's uses
// each line 16 times at once and stores 4-wide vectors: (512,20,20,32) to NCHW 3.4 -> 2.1 ms on a
// Zen 3 (a plain copy of the same size: 1.6 ms). Inputs read along the load's loop only (a
// BatchNorm's per-channel scale and shift) stay in registers for the whole store loop, one per tile
// row each: the rows shrink until they fit (the 13-input BatchNorm/ReLU/max-pool backward, 7 such
// inputs: 16 -> 4 rows with AVX2's 16 registers, 9.5 -> 5.8 ms on a Zen 3).
constexpr int64_t kTransposeLoadRun = 16, kTransposeStoreRun = 4, kLineElements = 16, kMinTransposeLoadRun = 4;

// How many of `loads` read along `r` but not along `other` (values the tile keeps per row of r).
int64_t loads_kept_per_row(const std::vector<const UOp*>& loads, const UOp* r, const UOp* other) {
  return std::count_if(loads.begin(), loads.end(),
                       [&](const UOp* load) { return address_reads(load, r) && !address_reads(load, other); });
}

std::vector<Opt> transpose_tile(const UOpRef& ast, const Target& target) {
  std::vector<const UOp*> loops;
  for (const UOp* r : ranges_of(ast))
    if (axis_type(r) == AxisType::LOOP) loops.push_back(r);
  const UOp* along_store = nullptr;
  std::vector<const UOp*> loads;
  for (const UOp* u : ast->toposort()) {
    if (u->op == Ops::LOAD) loads.push_back(u);
    if (u->op != Ops::STORE) continue;
    if (u->src[0]->src.size() > 2) return {};  // a gated store
    const UOp* contiguous = nullptr;
    for (const UOp* r : loops)
      if (linear_coefficient(u->src[0]->src[1].get(), r) == 1) contiguous = r;
    if (!contiguous || (along_store && contiguous != along_store)) return {};
    along_store = contiguous;
  }
  if (!along_store || !upcast_amount(range_size(along_store), kTransposeStoreRun)) return {};
  for (const UOp* load : loads) {
    if (load->src[0]->src.size() > 2) continue;  // gated loads become branches, not vectors
    const std::optional<int64_t> step = linear_coefficient(address(load), along_store);
    if (!step || std::abs(*step) < kLineElements) continue;
    for (const UOp* r : loops) {
      if (r == along_store || linear_coefficient(address(load), r) != 1) continue;
      const int64_t kept = loads_kept_per_row(loads, r, along_store);
      const int64_t run = std::max(kMinTransposeLoadRun, std::min(kTransposeLoadRun, target.vector_registers / std::max<int64_t>(kept, 1)));
      const int64_t amt = upcast_amount(range_size(r), run);
      if (amt >= kMinTransposeLoadRun)
        return {{OptOp::UPCAST, axis_id(r), amt},
                {OptOp::UPCAST, axis_id(along_store), upcast_amount(range_size(along_store), kTransposeStoreRun)}};
    }
  }
  return {};
}

// Elementwise kernels whose innermost loops are short (a max-pool window's 2x2, a 10-wide row):
// the C compiler vectorizes only the innermost loop and gives up on a few iterations. Those loops
// upcast whole, from the innermost out until the straight-line body holds 16 elements, leave it
// the body to pack instead, in the loops that remain: BatchNorm's output stored in max-pool windows (512,32,10,10,2,2)
// 7.1 -> 1.8 ms on a Zen 3.
constexpr int64_t kMinStraightRun = 16, kMaxStraightRun = 64;

std::vector<Opt> short_loop_upcasts(const UOpRef& ast) {
  std::vector<const UOp*> loops;
  bool threaded = false;
  for (const UOp* r : ranges_of(ast)) {
    if (axis_type(r) == AxisType::LOOP) loops.push_back(r);
    threaded |= axis_type(r) == AxisType::THREAD;
  }
  if (loops.empty() || range_size(loops.back()) >= kMinStraightRun) return {};
  const std::unordered_set<const UOp*> gated = gated_ranges(ast);
  std::vector<Opt> opts;
  int64_t run = 1;
  for (auto it = loops.rbegin(); it != loops.rend() && run < kMinStraightRun; ++it) {
    const int64_t n = range_size(*it);
    if (gated.count(*it) || run * n > kMaxStraightRun) break;
    opts.push_back({OptOp::UPCAST, axis_id(*it), n});
    run *= n;
  }
  // a kernel that is all straight-line code has no loop left to run the body in: nothing gained
  if (opts.size() == loops.size() && !threaded) return {};
  return opts;
}

// Elementwise kernels that stack pieces (stack and cat: each piece's loads gated to one iteration
// of a short loop, as the rows of a Winograd transform): the stacked loops upcast whole, innermost
// first, so each copy's gates fold and it computes its own piece only, and terms the pieces share
// (a transform's first pass, read by every row of its second) are one expression across the
// copies. The loop every store runs along becomes vectors.
constexpr int64_t kMaxStackedCopies = 64;

std::vector<Opt> stacked_upcasts(const UOpRef& ast, const Target& target) {
  const std::unordered_set<const UOp*> pinned = stacked_ranges(ast);
  std::vector<const UOp*> loops;
  for (const UOp* r : ranges_of(ast))
    if (axis_type(r) == AxisType::LOOP) loops.push_back(r);
  std::vector<Opt> opts;
  int64_t copies = 1;
  for (auto it = loops.rbegin(); it != loops.rend(); ++it)
    if (pinned.count(*it) && copies * range_size(*it) <= kMaxStackedCopies) {
      opts.push_back({OptOp::UPCAST, axis_id(*it), range_size(*it)});
      copies *= range_size(*it);
    }
  if (opts.empty()) return opts;
  // the widest vectors the copies leave room for (opt.cpp caps the copies of the body)
  UOpRef upcast = ast;
  for (const Opt& o : opts)
    if (upcast) upcast = apply_opt(upcast, o, target);
  if (!upcast) return {};
  for (auto it = loops.rbegin(); it != loops.rend(); ++it) {
    if (pinned.count(*it)) continue;
    int64_t lanes = vector_lanes(ast, *it, target.vector_bytes);
    while (lanes > 1 && (range_size(*it) % lanes != 0 || !opt_applies(upcast, {OptOp::UPCAST, axis_id(*it), lanes}, target))) lanes /= 2;
    if (lanes > 1) opts.push_back({OptOp::UPCAST, axis_id(*it), lanes});
    break;
  }
  return opts;
}

// Whether some reduction does not vary with some output loop (it is broadcast along it, as a fused
// softmax's row max along the row): a SWAP moving that loop outside would recompute the reduction
// in every iteration of it (OpenCL's softmax: 7.7 ms -> 825 ms).
bool broadcasts_a_reduction(const UOpRef& ast) {
  const auto ranges = ranges_of(ast);
  for (const UOp* u : ast->toposort()) {
    if (u->op != Ops::REDUCE) continue;
    const auto below = ranges_below(u);
    for (const UOp* r : ranges)
      if (axis_type(r) == AxisType::LOOP && !below.count(r)) return true;
  }
  return false;
}

// The UNROLL of a reduced loop `unroll`. A kernel whose reductions are broadcast along an output
// loop (a softmax fused over its rows: max, sum, then the row's outputs) computes each reduction
// once per row, then the row: each other reduction gets vector accumulators too, and the innermost
// output loop no reduction varies with, when every store steps along it, becomes vectors (applied
// first: ~5% faster than last). (4096, 1024): 3.0 ms on a Zen 3, against 3.2 with the sum's
// UNROLL alone and 3.8 for the three kernels it replaces.
std::vector<Opt> unroll_opts(const UOpRef& ast, const UOp* unroll, int64_t unroll_amt, int64_t lanes) {
  std::vector<Opt> opts;
  std::vector<const UOp*> others;
  for (const UOp* u : ast->toposort())
    if (u->op == Ops::REDUCE && !reduces_over(u, unroll)) others.push_back(u);
  const auto reduced_with = ranges_under_reductions(ast);
  const auto ranges = ranges_of(ast);
  for (auto it = ranges.rbegin(); it != ranges.rend() && !others.empty(); ++it) {
    if (axis_type(*it) != AxisType::LOOP || reduced_with.count(*it) || range_size(*it) % lanes != 0) continue;
    bool contiguous = true;
    for (const UOp* u : ast->toposort())
      if (u->op == Ops::STORE) contiguous &= linear_coefficient(u->src[0]->src[1].get(), *it) == 1;
    if (contiguous) opts.push_back({OptOp::UPCAST, axis_id(*it), lanes});
    break;
  }
  opts.push_back({OptOp::UNROLL, axis_id(unroll), unroll_amt});
  std::unordered_set<const UOp*> unrolled{unroll};
  for (const UOp* red : others) {
    const UOp* axis = reduce_vector_axis(ast, red);
    if (axis && range_size(axis) % unroll_amt == 0 && unrolled.insert(axis).second)
      opts.push_back({OptOp::UNROLL, axis_id(axis), unroll_amt});
  }
  return opts;
}

}  // namespace

std::vector<Opt> hand_coded_opts(const UOpRef& ast, const Target& target) {
  std::vector<Opt> opts;
  if (!target.optimize) return opts;
  if (target.max_local_size > 1 && target.prefer_work_groups) return work_group_opts(ast, target);
  UOpRef k = ast;
  std::vector<const UOp*> ranges = ranges_of(k);
  double work = 1;
  for (const UOp* r : ranges) work *= static_cast<double>(range_size(r));
  std::vector<const UOp*> loops;
  for (const UOp* r : ranges)
    if (axis_type(r) == AxisType::LOOP) loops.push_back(r);
  bool reduces = std::any_of(ranges.begin(), ranges.end(), [](const UOp* r) { return axis_type(r) == AxisType::REDUCE; });

  // THREAD: the outermost loop, when there is enough work to share.
  int64_t threads = 1;
  if (target.max_threads > 1 && !loops.empty() && range_size(loops[0]) >= 2 && work >= kMinWorkPerThreadSplit) {
    threads = std::min<int64_t>(target.max_threads, range_size(loops[0]));
    opts.push_back({OptOp::THREAD, axis_id(loops[0]), threads});
    k = apply_opt(k, opts.back(), target);
  }
  // UPCAST: for elementwise kernels only transposes and short inner loops (other loops are
  // vectorized by the C compiler as they are).
  if (!reduces) {
    UOpRef tiled = k;
    std::vector<Opt> tile = stacked_upcasts(k, target);
    if (tile.empty()) tile = transpose_tile(k, target);
    if (tile.empty()) tile = short_loop_upcasts(k);
    for (const Opt& o : tile) {
      if (!tiled || !opt_applies(tiled, o, target)) return opts;
      tiled = apply_opt(tiled, o, target);
    }
    opts.insert(opts.end(), tile.begin(), tile.end());
    return opts;
  }
  // The first pick is applied last: copies vary fastest along it, so neighbouring statements read
  // neighbouring addresses and the C compiler can pack them into vectors.
  auto picks = choose_upcasts(k, threads, target);
  // UNROLL: when the outputs fill less than one vector register (a 5-wide kernel row is 4 + 1 of
  // AVX2's 8 lanes: the first MNIST conv's weight gradient ran ~2.7x slower so), or no load reads
  // neighbours along them (a row sum's rows are a row apart), a reduced loop becomes the vector
  // axis instead, and the register tile shrinks to fit its accumulators.
  const int64_t lanes = target.vector_bytes / 4;
  const UOp* unroll = nullptr;
  int64_t unroll_amt = 0;
  if (lanes > 1 && (picks.empty() || vector_lanes(k, picks[0].first, target.vector_bytes) < 2 ||
                    picks[0].second < lanes || !reads_neighbours(k, picks[0].first))) {
    unroll = reduce_vector_axis(k);
    if (unroll) {
      const int64_t n = range_size(unroll);
      unroll_amt = n <= 2 * lanes ? n : upcast_amount(n, 2 * lanes);
      if (unroll_amt < 4) unroll = nullptr;
    }
  }
  if (unroll) {
    // Reductions broadcast along an output loop (a fused softmax's max and sum, then its row) are
    // computed once per row: copies of rows or of the row's outputs tile no accumulator, they only
    // multiply the code and take the vector lanes (the row's exps in float_x2 pieces: softmax
    // (4096, 1024) 4.2 -> 1.3 ms on AVX-512); unroll_opts vectorizes the row instead.
    if (broadcasts_a_reduction(k)) picks.clear();
    const auto misaligned = misaligned_with(k, unroll, lanes);
    if (std::any_of(picks.begin(), picks.end(), [&](const auto& p) { return misaligned.count(p.first) > 0; }))
      picks = choose_upcasts(k, threads, target, misaligned);
    auto tile = [&] {
      int64_t t = chunk_count(unroll_amt, lanes);
      for (auto& [r, amt] : picks) t *= amt;
      return t;
    };
    const int64_t max_accumulators = reduces_an_exp(k) ? max_vector_accumulators_with_exp(target) : max_vector_accumulators(target);
    while (!picks.empty() && tile() > max_accumulators) {
      if (picks.back().second % 2 == 0 && picks.back().second > 2) picks.back().second /= 2;
      else picks.pop_back();
    }
  }
  // The ranges keep their ids through the splits (the inner parts get new ones), so the picks,
  // made on the threaded kernel, name their loops in the optimized one too.
  for (auto it = picks.rbegin(); it != picks.rend(); ++it) opts.push_back({OptOp::UPCAST, axis_id(it->first), it->second});
  // Loop order: the tile's wider loop goes outside (a matmul's column blocks outside its row
  // blocks). The operand the inner loop reads is streamed again for every outer iteration, so
  // fewer, wider outer iterations re-read it less (matmul 2048: ~30% faster).
  // Only with an operand of each kind: one read along the first pick but not the second (a
  // matmul's B), one along the second but not the first (its A). Where every big load moves along
  // both (a max-pool of channels-last data, whose other loads are per-channel values), the swap
  // would only split each row of channels over outer iterations: the whole input streamed once per
  // block of channels (the MNIST CNN's BatchNorm and max-pool kernels, 2-3x slower).
  auto operand_along_only = [&](const UOp* r, const UOp* other) {
    for (const UOp* load : loads_in_reduction(k))
      if (address_reads(load, r) && !address_reads(load, other)) return true;
    return false;
  };
  auto outer_remains = [](const std::pair<const UOp*, int64_t>& pick) { return range_size(pick.first) > pick.second; };
  if (picks.size() == 2 && picks[0].second > picks[1].second && axis_id(picks[1].first) < axis_id(picks[0].first) &&
      outer_remains(picks[0]) && outer_remains(picks[1]) && !broadcasts_a_reduction(k) &&
      operand_along_only(picks[0].first, picks[1].first) && operand_along_only(picks[1].first, picks[0].first))
    opts.push_back({OptOp::SWAP, axis_id(picks[1].first), axis_id(picks[0].first)});
  if (unroll) {
    // the other reductions' UNROLLs and the row's UPCAST where the copies they add still fit
    UOpRef applied = ast;
    for (const Opt& o : opts) applied = apply_opt(applied, o, target);
    for (const Opt& o : unroll_opts(k, unroll, unroll_amt, lanes)) {
      if (o.axis != axis_id(unroll) && !opt_applies(applied, o, target)) continue;
      applied = apply_opt(applied, o, target);
      opts.push_back(o);
    }
  }
  return opts;
}

}  // namespace kiln::codegen
