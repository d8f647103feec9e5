// Blocked accumulation of long float sums. An accumulator that adds n terms one after another
// rounds each add at the size of the running total, so its error grows with n: 10^7 float32
// values of 0.1 summed that way are off in the fifth digit. A long sum here is a sum of blocks
// instead: each block of at most kBlock loop iterations is added into a fresh accumulator, and
// the blocks' totals are summed the same way, in blocks of at most kOuterBlock, level by level,
// until one block is left. The error then grows with the number of levels (log n) rather than n,
// as in NumPy's and PyTorch's blocked pairwise sums, for one add per block of each level:
//   acc = 0; for (r < n) acc += x[r];
//     ->
//   acc = 0; for (ro < n/b) { blk = 0; for (ri < b) blk += x[ro*b + ri]; acc += blk; }
// A level's block is the innermost loops whose trip counts multiply to at most its size, with one
// loop cut by a divisor where a loop alone is longer. Register-tiled reductions (matmul, conv:
// many accumulators in one loop) are left alone: their accumulators already split the terms, and
// doubling them would spill registers.
#include <algorithm>
#include <numeric>

#include "codegen/codegen.h"
#include "codegen/opt.h"
#include "kiln/ir/pattern_matcher.h"

namespace kiln::codegen {
namespace {

// Iterations per block: of the innermost level, and of each level that sums blocks (short, so that
// every level's error stays small).
constexpr int64_t kBlock = 64, kOuterBlock = 16, kMinBlock = 4, kMaxAccumulators = 4;

bool is_float_sum(const UOp* u) {
  return u->op == Ops::REDUCE && u->arg_as<ReduceArg>().op == Ops::ADD && u->dtype.is_float();
}

// The largest divisor of n that is at most `limit`.
int64_t largest_divisor_up_to(int64_t n, int64_t limit) {
  for (int64_t d = std::min(n, limit); d > 1; d--)
    if (n % d == 0) return d;
  return 1;
}

struct BlockPlan {
  size_t split;         // ranges[split] is cut in two (or, with factor 1, starts the block)
  int64_t factor;       // iterations of ranges[split] that go into the block
};

// Where the block starts among the reduction's loops (outermost first), or none when the whole
// reduction is one block already or no block of at least kMinBlock iterations fits.
std::optional<BlockPlan> plan_block(const std::vector<UOpRef>& ranges, int64_t block) {
  int64_t inner = 1;  // trip count of the loops inside ranges[i]
  for (size_t i = ranges.size(); i-- > 0;) {
    const int64_t n = range_size(ranges[i].get());
    if (n * inner <= block) {
      inner *= n;
      continue;
    }
    const int64_t factor = largest_divisor_up_to(n, block / inner);
    if (factor * inner < kMinBlock) return std::nullopt;
    return BlockPlan{i, factor};
  }
  return std::nullopt;
}

bool blockable(const std::vector<UOpRef>& ranges) {
  return std::all_of(ranges.begin(), ranges.end(), [](const UOpRef& r) {
    return r->op == Ops::RANGE && axis_type(r.get()) == AxisType::REDUCE && r->src[0]->op == Ops::CONST;
  });
}

}  // namespace

UOpRef block_long_sums(const UOpRef& sink) {
  // Reductions that share their loops are lowered into one loop nest: block them together.
  std::vector<std::pair<std::vector<UOpRef>, std::vector<const UOp*>>> groups;
  const std::vector<const UOp*> topo = sink->toposort();
  int64_t next_id = 0;
  for (const UOp* u : topo)
    if (u->op == Ops::RANGE) next_id = std::max(next_id, axis_id(u) + 1);
  for (const UOp* u : topo) {
    if (u->op != Ops::REDUCE) continue;
    // one enclosing another is left alone, so that the replacements never nest
    const std::vector<const UOp*> below = u->src[0]->toposort();
    if (std::any_of(below.begin(), below.end(), [](const UOp* s) { return s->op == Ops::REDUCE; })) continue;
    std::vector<UOpRef> ranges(u->src.begin() + 1, u->src.end());
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == ranges; });
    if (it == groups.end()) groups.push_back({ranges, {u}});
    else it->second.push_back(u);
  }
  std::unordered_map<const UOp*, UOpRef> replace;
  for (const auto& [ranges, reduces] : groups) {
    if (static_cast<int64_t>(reduces.size()) > kMaxAccumulators || !blockable(ranges)) continue;
    if (std::none_of(reduces.begin(), reduces.end(), is_float_sum)) continue;
    // Each level sums blocks of the level below until the outermost loops form one block.
    std::vector<UOpRef> values, outer = ranges;
    for (const UOp* red : reduces) values.push_back(red->src[0]);
    for (int64_t limit = kBlock; const std::optional<BlockPlan> plan = plan_block(outer, limit); limit = kOuterBlock) {
      const UOpRef cut = outer[plan->split];
      const int64_t n = range_size(cut.get());
      std::vector<UOpRef> inner(outer.begin() + static_cast<std::ptrdiff_t>(plan->split) + 1, outer.end());
      outer.resize(plan->split);
      std::unordered_map<const UOp*, UOpRef> index;
      if (plan->factor == 1) {
        outer.push_back(cut);
      } else {
        // the outer part keeps the loop's id, the block's part takes a new one (nested inside)
        UOpRef o = UOp::make(Ops::RANGE, cut->dtype, {UOp::const_(cut->dtype, double(n / plan->factor))}, cut->arg);
        UOpRef i = UOp::make(Ops::RANGE, cut->dtype, {UOp::const_(cut->dtype, double(plan->factor))},
                             RangeArg{next_id++, AxisType::REDUCE});
        outer.push_back(o);
        inner.insert(inner.begin(), i);
        index[cut.get()] = o * plan->factor + i;
      }
      for (size_t k = 0; k < reduces.size(); k++) {
        std::vector<UOpRef> src{index.empty() ? values[k] : substitute(values[k], index)};
        src.insert(src.end(), inner.begin(), inner.end());
        values[k] = UOp::make(Ops::REDUCE, reduces[k]->dtype, std::move(src), reduces[k]->arg);
      }
    }
    if (outer == ranges) continue;
    for (size_t k = 0; k < reduces.size(); k++) {
      std::vector<UOpRef> src{values[k]};
      src.insert(src.end(), outer.begin(), outer.end());
      replace[reduces[k]] = UOp::make(Ops::REDUCE, reduces[k]->dtype, std::move(src), reduces[k]->arg);
    }
  }
  return replace.empty() ? sink : substitute(sink, replace);
}

}  // namespace kiln::codegen
