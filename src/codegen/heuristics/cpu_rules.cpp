// The CPU's rules: THREAD for kernels with enough work, then for elementwise kernels a tile only
// where the C compiler would not vectorize the loops as they are (stacked pieces, transposes,
// short inner loops); reductions go on to cpu_reduce_rules.cpp.
#include <algorithm>
#include <cstdlib>
#include <unordered_set>

#include "codegen/heuristics/analysis.h"
#include "codegen/heuristics/rules.h"

namespace kiln::codegen::heuristics {
namespace {

// Below this many inner-loop iterations a kernel runs faster on one core than it takes to wake others.
constexpr double kMinWorkPerThreadSplit = 1 << 16;

// THREAD: the outermost loop, when there is enough work to share.
bool threads_apply(const Plan& p) {
  return p.target.max_threads > 1 && !p.loops.empty() && range_size(p.loops[0]) >= 2 && p.work >= kMinWorkPerThreadSplit;
}

bool add_threads(Plan& p) {
  p.threads = std::min<int64_t>(p.target.max_threads, range_size(p.loops[0]));
  p.opts.push_back({OptOp::THREAD, axis_id(p.loops[0]), p.threads});
  p.k = apply_opt(p.k, p.opts.back(), p.target);
  return true;
}

// Elementwise kernels get at most one tile: the first rule that proposes one decides, and its tile
// is kept only if all of it applies.
bool untiled_elementwise(const Plan& p) { return !p.reduces && !p.tiled; }

bool add_tile(Plan& p, const std::vector<Opt>& tile) {
  if (tile.empty()) return false;
  p.tiled = true;
  UOpRef tiled = p.k;
  for (const Opt& o : tile) {
    if (!tiled || !opt_applies(tiled, o, p.target)) return true;
    tiled = apply_opt(tiled, o, p.target);
  }
  p.opts.insert(p.opts.end(), tile.begin(), tile.end());
  p.k = tiled;
  return true;
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

bool add_stacked_upcasts(Plan& p) { return add_tile(p, stacked_upcasts(p.k, p.target)); }

// Elementwise transposes (a channels-last copy back to NCHW, and the reverse): the stores run
// along one loop while a load steps at least a cache line per iteration along it and runs
// contiguously along another loop. Loop by loop, every load touches a new line and uses one
// float of it. A tile of up to 16 along the load's contiguous loop and 4 along the store's uses
// each line 16 times at once and stores 4-wide vectors, close to a plain copy's traffic. Inputs
// read along the load's loop only (a BatchNorm's per-channel scale and shift) stay in registers for
// the whole store loop, one per tile row each: the rows shrink until they fit (the 13-input
// BatchNorm/ReLU/max-pool backward, 7 such inputs: 4 rows with AVX2's 16 registers).
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

bool add_transpose_tile(Plan& p) { return add_tile(p, transpose_tile(p.k, p.target)); }

// Elementwise kernels whose innermost loops are short (a max-pool window's 2x2, a 10-wide row):
// the C compiler vectorizes only the innermost loop and gives up on a few iterations. Those loops
// upcast whole, from the innermost out until the straight-line body holds 16 elements, leave it
// the body to pack instead, in the loops that remain (BatchNorm's output stored in max-pool
// windows, (512,32,10,10,2,2)).
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

bool add_short_loop_upcasts(Plan& p) { return add_tile(p, short_loop_upcasts(p.k)); }

}  // namespace

// Other elementwise loops are vectorized by the C compiler as they are: no rule for them.
const std::vector<Rule>& cpu_rules() {
  static const std::vector<Rule> rules = [] {
    std::vector<Rule> out = {
        {"threads", threads_apply, add_threads},
        {"stacked pieces upcast whole", untiled_elementwise, add_stacked_upcasts},
        {"transpose tile", untiled_elementwise, add_transpose_tile},
        {"short inner loops upcast whole", untiled_elementwise, add_short_loop_upcasts},
    };
    const std::vector<Rule>& reduce = cpu_reduce_rules();
    out.insert(out.end(), reduce.begin(), reduce.end());
    return out;
  }();
  return rules;
}

}  // namespace kiln::codegen::heuristics
