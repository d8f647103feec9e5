// Software prefetch for reductions that stream through inputs bigger than the caches. Such a kernel
// reads a slab of each input per iteration of its output loops, then computes on it, often several
// times (a register tile re-reads the slab for each block of outputs). The hardware prefetchers
// stop at page boundaries and run little ahead, so the first pass over each slab waits on memory
// while the passes after it wait on nothing (the MNIST CNN's Winograd weight gradient runs much
// slower cold than with its inputs in cache). Fetching the next slab while the kernel computes on
// this one overlaps the two (that kernel, the Winograd forward matmul and the first conv's weight
// gradient gain most).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "codegen/codegen.h"

namespace kiln::codegen {
namespace {

// How far ahead to fetch, at least: a few KiB, about what the memory system has in flight while a
// register tile computes on what it loaded (1-8 KiB measured alike within noise; 0.6 KiB less).
constexpr double kAheadBytes = 2560;
constexpr int64_t kLineBytes = 64;

// An address as (what varies, constant part): copies of an upcast load differ in the constant only.
std::pair<const UOp*, int64_t> split_constant(const UOp* address) {
  if (address->op == Ops::ADD && address->src[1]->op == Ops::CONST)
    return {address->src[0].get(), static_cast<int64_t>(address->src[1]->const_value())};
  return {address, 0};
}

// The loops an index expression reads (not what a loop's own sources order it after).
void ranges_read(const UOp* e, std::set<const UOp*>& out) {
  if (e->op == Ops::RANGE) {
    out.insert(e);
    return;
  }
  for (const UOpRef& s : e->src) ranges_read(s.get(), out);
}

// d(e)/d(loop) for a sum of loops times constants, else nullopt. (codegen's linear_coefficient
// would walk into the loops' own sources, which after lowering order them after other loops.)
std::optional<int64_t> step_along(const UOp* e, const UOp* loop) {
  switch (e->op) {
    case Ops::RANGE: return e == loop ? 1 : 0;
    case Ops::CONST: return 0;
    case Ops::ADD: {
      auto a = step_along(e->src[0].get(), loop), b = step_along(e->src[1].get(), loop);
      if (!a || !b) return std::nullopt;
      return *a + *b;
    }
    case Ops::MUL:
      for (size_t i = 0; i < 2; i++)
        if (e->src[1 - i]->op == Ops::CONST)
          if (auto a = step_along(e->src[i].get(), loop)) return *a * static_cast<int64_t>(e->src[1 - i]->const_value());
      return std::nullopt;
    default: return std::nullopt;
  }
}

bool reduces(const UOp* range) { return range->arg_as<RangeArg>().reduces(); }

// A load of a buffer: its address, element size and lanes, and the loops it moves along. The
// loops around it, `open`, come outermost first.
struct Load {
  const UOp* address;
  int64_t itemsize, lanes;
  std::set<const UOp*> reads;  // the loops its address moves along

  // Whether a step of `loop` moves it less than a cache line (not at all, where it does not read it).
  bool within_a_line(const UOp* loop) const {
    const std::optional<int64_t> step = step_along(address, loop);
    return step && std::abs(*step) * itemsize < kLineBytes;
  }
  // The bytes it sweeps over the whole kernel (0 when its address is not linear in its loops).
  double span_bytes() const {
    double span = static_cast<double>(lanes);
    for (const UOp* r : reads) {
      const std::optional<int64_t> step = step_along(address, r);
      if (!step) return 0;
      span += static_cast<double>(range_size(r) - 1) * static_cast<double>(std::abs(*step));
    }
    return span * static_cast<double>(itemsize);
  }
  // The innermost output loop along which it moves to other lines, with its step: the next
  // iterations of that loop read the next slab (a loop stepping within a line, as a block of a
  // row of channels, re-reads this one).
  std::pair<const UOp*, int64_t> next_slab_loop(const std::vector<const UOp*>& open) const {
    for (auto it = open.rbegin(); it != open.rend(); ++it)
      if (!reduces(*it) && reads.count(*it) && !within_a_line(*it))
        if (const std::optional<int64_t> step = step_along(address, *it); step && *step > 0) return {*it, *step};
    return {nullptr, 0};
  }
  // Whether memory idles while the kernel computes on a slab: its innermost loop dwells on the
  // lines it reads (a broadcast operand stepping an element at a time), or an output loop inside
  // `along` re-reads them (a register tile's later blocks). A load that takes a new line at every
  // step streams, and the hardware's prefetchers keep up with it (a Winograd transform pass, where
  // prefetches only add instructions).
  bool computes_between_slabs(const std::vector<const UOp*>& open, const UOp* along) const {
    if (within_a_line(open.back())) return true;
    for (auto it = std::find(open.begin(), open.end(), along) + 1; it != open.end(); ++it)
      if (!reduces(*it) && within_a_line(*it)) return true;
    return false;
  }
};

}  // namespace

std::unordered_map<const UOp*, int64_t> prefetch_distances(const std::vector<UOpRef>& linear, int64_t cache_bytes) {
  std::unordered_map<const UOp*, int64_t> ahead;
  if (cache_bytes <= 0) return ahead;
  std::vector<const UOp*> open;  // the loops around the current statement, outermost first
  std::map<std::pair<const UOp*, const UOp*>, std::set<int64_t>> lines_fetched;  // (buffer, varying part) -> lines
  for (const UOpRef& ref : linear) {
    const UOp* u = ref.get();
    if (u->op == Ops::RANGE) open.push_back(u);
    if (u->op == Ops::END) open.resize(open.size() - (u->src.size() - 1));
    if (u->op != Ops::LOAD || u->src[0]->src[0]->op != Ops::PARAM || std::none_of(open.begin(), open.end(), reduces)) continue;
    Load load{u->src[0]->src[1].get(), u->dtype.itemsize(), u->dtype.count, {}};
    ranges_read(load.address, load.reads);
    if (load.span_bytes() < static_cast<double>(cache_bytes)) continue;  // a small input stays in the caches anyway
    const auto [along, step] = load.next_slab_loop(open);
    if (!along || !load.computes_between_slabs(open, along)) continue;
    const auto [varying, constant] = split_constant(load.address);
    if (!lines_fetched[{u->src[0]->src[0].get(), varying}].insert(constant * load.itemsize / kLineBytes).second) continue;
    ahead[u] = step * static_cast<int64_t>(std::ceil(kAheadBytes / static_cast<double>(step * load.itemsize)));
  }
  return ahead;
}

}  // namespace kiln::codegen
