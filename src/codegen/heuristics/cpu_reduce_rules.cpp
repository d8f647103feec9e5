// The CPU's rules for reductions: a register tile shaped like a BLAS micro-kernel (UPCAST of
// output loops whose copies share loads), or vector accumulators along a reduced loop (UNROLL)
// when the outputs make no full vector, the tile then shrunk to fit beside them; and the loop
// order of the tile (SWAP).
#include <algorithm>
#include <unordered_set>

#include "codegen/heuristics/analysis.h"
#include "codegen/heuristics/rules.h"

namespace kiln::codegen::heuristics {
namespace {

// Copies of a reduction body: enough accumulators for a vector register or two, few enough that
// they all stay in registers.
constexpr int64_t kInnerUpcast = 8, kOuterUpcast = 4;

// A conv's tile of output channels x a row of pixels loads, per step of the reduction, one weight
// per channel and the row's vector chunks. When the row is several chunks (24 wide: 16 + 8), half
// the channels and two rows make as many accumulators from fewer loads (4 + 2x2 instead of 8 + 2):
// a third pick of 2 on an output loop whose loads all move with the first pick too (the next
// output row), the second pick halved, as in the MNIST CNN's 5x5 convolutions. With a row of one
// chunk (a block of 8 pixels) there are no loads to save, so not then.
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
  // BatchNorm backward's sums over NCHW data, 8 channels x 4 chunks, spilled)
  if (outputs.empty()) return picks;
  // A column sum (a split reduction's second kernel: 256 partials of a weight gradient's 25k
  // values) reads its innermost output loop contiguously, with every load that moves along it: four vectors along it read whole cache
  // lines, where 8 lanes x 4 outer outputs read half lines, evicted before the next tile reads
  // their other half (the 5x5 conv's partials).
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

// The UNROLL of a reduced loop `unroll`. A kernel whose reductions are broadcast along an output
// loop (a softmax fused over its rows: max, sum, then the row's outputs) computes each reduction
// once per row, then the row: each other reduction gets vector accumulators too, and the innermost
// output loop no reduction varies with, when every store steps along it, becomes vectors (applied
// first, so the row's copies are the vector lanes). One such kernel beats the sum's UNROLL alone and
// the three kernels it replaces.
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

// float32 lanes of the target's vectors: the UNROLL's vector width.
int64_t float_lanes(const Target& target) { return target.vector_bytes / 4; }

bool reduces(const Plan& p) { return p.reduces; }
bool tiles_beside_unroll(const Plan& p) { return p.unroll && !p.tile.empty(); }

bool choose_tile(Plan& p) {
  p.tile = choose_upcasts(p.k, p.threads, p.target);
  return !p.tile.empty();
}

// UNROLL: when the outputs fill less than one vector register (a 5-wide kernel row is 4 + 1 of
// AVX2's 8 lanes, as the first MNIST conv's weight gradient: mostly masked lanes), or no load reads
// neighbours along them (a row sum's rows are a row apart), a reduced loop becomes the vector
// axis instead, and the register tile shrinks to fit its accumulators.
bool outputs_fill_no_vector(const Plan& p) {
  if (!p.reduces || float_lanes(p.target) <= 1) return false;
  if (p.tile.empty()) return true;
  const UOp* first = p.tile[0].first;
  return vector_lanes(p.k, first, p.target.vector_bytes) < 2 || p.tile[0].second < float_lanes(p.target) ||
         !reads_neighbours(p.k, first);
}

bool choose_unroll(Plan& p) {
  const int64_t lanes = float_lanes(p.target);
  p.unroll = reduce_vector_axis(p.k);
  if (!p.unroll) return false;
  const int64_t n = range_size(p.unroll);
  p.unroll_amt = n <= 2 * lanes ? n : upcast_amount(n, 2 * lanes);
  if (p.unroll_amt < 4) p.unroll = nullptr;
  return p.unroll != nullptr;
}

// Reductions broadcast along an output loop (a fused softmax's max and sum, then its row) are
// computed once per row: copies of rows or of the row's outputs tile no accumulator, they only
// multiply the code and take the vector lanes (the row's exps in float_x2 pieces); the last rule
// vectorizes the row instead.
bool broadcast_with_unroll(const Plan& p) { return tiles_beside_unroll(p) && broadcasts_a_reduction(p.k); }

bool drop_tile(Plan& p) {
  p.tile.clear();
  return true;
}

// A tile loop whose copies shift the vector loads along the unrolled loop by less than a vector
// (misaligned_with) is traded for another loop.
bool avoid_misaligned_loops(Plan& p) {
  const auto misaligned = misaligned_with(p.k, p.unroll, float_lanes(p.target));
  if (std::none_of(p.tile.begin(), p.tile.end(), [&](const auto& pick) { return misaligned.count(pick.first) > 0; }))
    return false;
  p.tile = choose_upcasts(p.k, p.threads, p.target, misaligned);
  return true;
}

// Each tile position keeps the unrolled loop's chunks of vector accumulators: the tile halves, the
// last pick first, until they fit in registers.
bool fit_tile_to_accumulators(Plan& p) {
  auto size = [&] {
    int64_t t = chunk_count(p.unroll_amt, float_lanes(p.target));
    for (auto& [r, amt] : p.tile) t *= amt;
    return t;
  };
  const int64_t max_accumulators =
      reduces_an_exp(p.k) ? max_vector_accumulators_with_exp(p.target) : max_vector_accumulators(p.target);
  bool shrunk = false;
  while (!p.tile.empty() && size() > max_accumulators) {
    if (p.tile.back().second % 2 == 0 && p.tile.back().second > 2) p.tile.back().second /= 2;
    else p.tile.pop_back();
    shrunk = true;
  }
  return shrunk;
}

// The first pick is applied last: copies vary fastest along it, so neighbouring statements read
// neighbouring addresses and the C compiler can pack them into vectors. The ranges keep their ids
// through the splits (the inner parts get new ones), so the picks, made on the threaded kernel,
// name their loops in the optimized one too.
bool has_tile(const Plan& p) { return !p.tile.empty(); }

bool add_tile_upcasts(Plan& p) {
  for (auto it = p.tile.rbegin(); it != p.tile.rend(); ++it)
    p.opts.push_back({OptOp::UPCAST, axis_id(it->first), it->second});
  return true;
}

// Loop order: the tile's wider loop goes outside (a matmul's column blocks outside its row
// blocks). The operand the inner loop reads is streamed again for every outer iteration, so
// fewer, wider outer iterations re-read it less.
// Only with an operand of each kind: one read along the first pick but not the second (a
// matmul's B), one along the second but not the first (its A). Where every big load moves along
// both (a max-pool of channels-last data, whose other loads are per-channel values), the swap
// would only split each row of channels over outer iterations: the whole input streamed once per
// block of channels (the MNIST CNN's BatchNorm and max-pool kernels).
bool operand_along_only(const UOpRef& k, const UOp* r, const UOp* other) {
  for (const UOp* load : loads_in_reduction(k))
    if (address_reads(load, r) && !address_reads(load, other)) return true;
  return false;
}

bool wider_loop_goes_outside(const Plan& p) {
  if (p.tile.size() != 2) return false;
  const auto& [first, first_amt] = p.tile[0];
  const auto& [second, second_amt] = p.tile[1];
  auto outer_remains = [](const std::pair<const UOp*, int64_t>& pick) { return range_size(pick.first) > pick.second; };
  return first_amt > second_amt && axis_id(second) < axis_id(first) && outer_remains(p.tile[0]) &&
         outer_remains(p.tile[1]) && !broadcasts_a_reduction(p.k) && operand_along_only(p.k, first, second) &&
         operand_along_only(p.k, second, first);
}

bool add_swap(Plan& p) {
  p.opts.push_back({OptOp::SWAP, axis_id(p.tile[1].first), axis_id(p.tile[0].first)});
  return true;
}

// The other reductions' UNROLLs and the row's UPCAST where the copies they add still fit.
bool unrolls(const Plan& p) { return p.unroll != nullptr; }

bool add_unrolls(Plan& p) {
  UOpRef applied = p.ast;
  for (const Opt& o : p.opts) applied = apply_opt(applied, o, p.target);
  for (const Opt& o : unroll_opts(p.k, p.unroll, p.unroll_amt, float_lanes(p.target))) {
    if (o.axis != axis_id(p.unroll) && !opt_applies(applied, o, p.target)) continue;
    applied = apply_opt(applied, o, p.target);
    p.opts.push_back(o);
  }
  return true;
}

}  // namespace

const std::vector<Rule>& cpu_reduce_rules() {
  static const std::vector<Rule> rules = {
      {"register tile of reused loads", reduces, choose_tile},
      {"vector accumulators along a reduced loop", outputs_fill_no_vector, choose_unroll},
      {"no tile beside reductions broadcast along it", broadcast_with_unroll, drop_tile},
      {"tile avoids loops misaligned with the vector axis", tiles_beside_unroll, avoid_misaligned_loops},
      {"tile fits the vector accumulators", tiles_beside_unroll, fit_tile_to_accumulators},
      {"register tile upcasts", has_tile, add_tile_upcasts},
      {"wider tile loop outside", wider_loop_goes_outside, add_swap},
      {"reduced loop unrolled into vectors", unrolls, add_unrolls},
  };
  return rules;
}

}  // namespace kiln::codegen::heuristics
