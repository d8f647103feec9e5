// REDUCE → accumulator registers, the way a C programmer writes a reduction:
//   acc = identity;                      (inside the output loops it depends on)
//   for (r...) acc = acc <op> x;
//   ... acc ...                          (read after the loops close)
// Reductions over the same ranges (the copies an UPCAST makes) share one loop that updates all
// their accumulators. Ordering is carried by data edges: the loop's RANGEs depend on the
// initializing STOREs, each update reads its accumulator AFTER the ranges open, and each result
// reads it AFTER the END. A reduction whose value does not depend on an enclosing reduction's loop
// runs before that loop, not inside it: the enclosing accumulator's reset waits for its END.
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "codegen/codegen.h"
#include "codegen/live_ranges.h"
#include "kiln/error.h"
#include "kiln/ir/pattern_matcher.h"

namespace kiln::codegen {
namespace {

UOpRef scalar_index(const UOpRef& buf) {
  return UOp::make(Ops::INDEX, buf->dtype, {buf, UOp::const_(dtypes::index, 0)});
}

UOpRef after(const UOpRef& buf, std::vector<UOpRef> deps) {
  if (deps.empty()) return buf;
  deps.insert(deps.begin(), buf);
  return UOp::make(Ops::AFTER, buf->dtype, std::move(deps));
}

// The already lowered reductions `x` reads that run outside its `inner` loops: ENDs that live
// only in x's other loops. (An END nested in another loop is reached through that loop's END.)
std::vector<UOpRef> ends_run_before(const UOpRef& x, const std::set<const UOp*>& inner) {
  std::set<const UOp*> outer;
  for (const UOpRef& r : live_ranges(x))
    if (!inner.count(r.get())) outer.insert(r.get());
  std::vector<UOpRef> out;
  for (const UOp* u : x->toposort()) {
    if (u->op != Ops::END) continue;
    std::vector<UOpRef> live = live_ranges(u->ref());
    if (std::all_of(live.begin(), live.end(), [&](const UOpRef& r) { return outer.count(r.get()) > 0; }))
      out.push_back(u->ref());
  }
  return out;
}

// Lowers reductions that share `ranges`, adding each one's replacement to `replace`. `loops_of_kernel`
// are the kernel's output loops.
void lower_group(const std::vector<const UOp*>& reduces, const std::vector<UOpRef>& ranges,
                 const std::vector<UOpRef>& loops_of_kernel, int64_t& next_acc,
                 std::unordered_map<const UOp*, UOpRef>& replace) {
  std::set<const UOp*> own;
  for (const UOpRef& r : ranges) own.insert(r.get());
  std::vector<UOpRef> accs, inits;
  for (const UOp* red : reduces) {
    // The accumulator is reset, and its loop runs, inside the loops its value depends on (output
    // loops and enclosing reductions): initialization and loop share one nest (the loop opens
    // exactly where its accumulators were reset), so it never accumulates across iterations of a
    // loop the initialization sits outside of. Output loops it does not depend on stay outside:
    // a row's max or sum that a fused softmax broadcasts along the row runs once per row.
    std::vector<UOpRef> outer;
    std::pair<bool, int64_t> innermost{false, -1};
    for (const UOpRef& r : live_ranges(red->src[0]))
      if (!own.count(r.get())) {
        outer.push_back(r);
        innermost = std::max(innermost, r->arg_as<RangeArg>().nest_rank());
      }
    // and inside the output loops around those (a pool's divisor, varying with the pixel loops,
    // is recomputed for every batch element)
    for (const UOpRef& r : loops_of_kernel)
      if (r->arg_as<RangeArg>().nest_rank() < innermost && std::find(outer.begin(), outer.end(), r) == outer.end()) outer.push_back(r);
    // The reductions it reads that do not depend on its loops finish first, so its loops can open
    // where it is reset.
    for (const UOpRef& end : ends_run_before(red->src[0], own)) outer.push_back(end);
    accs.push_back(UOp::make(Ops::BUFFER, red->dtype.as_ptr(), {}, BufferArg{next_acc++, 1, "REG"}));
    UOpRef identity = UOp::const_(red->dtype, reduce_identity(red->arg_as<ReduceArg>().op, red->dtype));
    inits.push_back(UOp::make(Ops::STORE, dtypes::void_, {scalar_index(after(accs.back(), outer)), identity}));
  }
  std::unordered_map<const UOp*, UOpRef> reopened;
  std::vector<UOpRef> loops;
  for (size_t p = 0; p < ranges.size(); p++) {
    // each loop nests in the previous one: a reduction over several axes is one loop nest
    const UOpRef& r = ranges[p];
    std::vector<UOpRef> src{r->src[0]};
    src.insert(src.end(), inits.begin(), inits.end());
    if (!loops.empty()) src.push_back(loops.back());
    // reductions broadcast inside the nest (a row's mean in a sum over rows and columns) finish
    // before the loops they do not vary with open
    if (p > 0) {
      std::set<const UOp*> inner;  // the loops from here in
      for (size_t i = p; i < ranges.size(); i++) inner.insert(ranges[i].get());
      for (const UOp* red : reduces)
        for (const UOpRef& end : ends_run_before(red->src[0], inner)) src.push_back(substitute(end, reopened));
    }
    loops.push_back(UOp::make(Ops::RANGE, r->dtype, std::move(src), r->arg));
    reopened[r.get()] = loops.back();
  }
  std::vector<UOpRef> updates;
  for (size_t i = 0; i < reduces.size(); i++) {
    const UOp* red = reduces[i];
    UOpRef x = substitute(red->src[0], reopened);
    UOpRef current = UOp::make(Ops::LOAD, red->dtype, {scalar_index(after(accs[i], loops))});
    UOpRef combined = UOp::make(red->arg_as<ReduceArg>().op, red->dtype, {current, x});
    updates.push_back(UOp::make(Ops::STORE, dtypes::void_, {scalar_index(accs[i]), combined}));
  }
  std::vector<UOpRef> end_src{updates.size() == 1 ? updates[0] : UOp::make(Ops::GROUP, dtypes::void_, updates)};
  end_src.insert(end_src.end(), loops.begin(), loops.end());
  UOpRef end = UOp::make(Ops::END, dtypes::void_, std::move(end_src));
  for (size_t i = 0; i < reduces.size(); i++)
    replace[reduces[i]] = UOp::make(Ops::LOAD, reduces[i]->dtype, {scalar_index(after(accs[i], {end}))});
}

}  // namespace

UOpRef lower_reduces(const UOpRef& ast) {
  UOpRef k = ast;
  int64_t next_acc = 0;
  std::vector<UOpRef> loops;
  for (const UOp* u : ast->toposort())
    if (u->op == Ops::RANGE && !u->arg_as<RangeArg>().reduces()) loops.push_back(u->ref());  // a group's axis ends where the partials are written
  // Innermost reductions first: an outer reduction's value then holds the inner one's loop.
  while (true) {
    std::unordered_map<const UOp*, bool> reduce_below;
    std::vector<std::pair<std::vector<UOpRef>, std::vector<const UOp*>>> groups;  // by ranges, first seen first
    for (const UOp* u : k->toposort()) {
      bool below = false;
      for (const UOpRef& s : u->src) below |= s->op == Ops::REDUCE || reduce_below[s.get()];
      reduce_below[u] = below;
      if (u->op != Ops::REDUCE || below) continue;
      std::vector<UOpRef> ranges(u->src.begin() + 1, u->src.end());
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == ranges; });
      if (it == groups.end()) groups.push_back({ranges, {u}});
      else it->second.push_back(u);
    }
    if (groups.empty()) return k;
    std::unordered_map<const UOp*, UOpRef> replace;
    for (const auto& [ranges, reduces] : groups) lower_group(reduces, ranges, loops, next_acc, replace);
    k = substitute(k, replace);
  }
}

}  // namespace kiln::codegen
