// A GROUP opt's reductions, lowered for a work-group (tinygrad's GROUP through DEFINE_LOCAL and
// BARRIER). The reduced loop was split as r = r_outer*amt + g, g being the work-item's index along
// the GROUP_REDUCE axis. Each work-item reduces its share over the other loops into a partial, the
// partials meet in local memory, and every work-item reduces the amt partials of its output:
//   partial = REDUCE(x, r_outer, ...)
//   barrier                              (the previous iteration's readers are done with the slots)
//   slots[rest*amt + g] = partial        (rest: the work-item's place along the LOCAL axes)
//   barrier
//   result = REDUCE(slots[rest*amt + r2], r2)
// All work-items compute the same result and store the same value, so the code after it needs no
// branch on the work-item: a kernel's control flow stays the same for every work-item, as barriers
// require.
#include <algorithm>
#include <unordered_map>

#include "codegen/codegen.h"
#include "codegen/opt.h"
#include "kiln/ir/pattern_matcher.h"

namespace kiln::codegen {

UOpRef lower_group_reduces(const UOpRef& sink) {
  const std::vector<const UOp*> locals = local_axes(sink);
  auto g_it = std::find_if(locals.begin(), locals.end(), [](const UOp* r) { return axis_type(r) == AxisType::GROUP_REDUCE; });
  if (g_it == locals.end()) return sink;
  const UOpRef g = (*g_it)->ref();
  const int64_t amt = range_size(g.get());
  // The work-item's place among the others of its group along the LOCAL axes.
  UOpRef rest = UOp::const_(dtypes::index, 0);
  int64_t slots = amt;
  for (const UOp* r : locals) {
    if (r == g.get()) continue;
    rest = rest * range_size(r) + r->ref();
    slots *= range_size(r);
  }
  const UOpRef r2 = UOp::make(Ops::RANGE, g->dtype, {UOp::const_(g->dtype, double(amt))},
                              RangeArg{axis_id(ranges_of(sink).back()) + 1, AxisType::REDUCE});

  std::vector<const UOp*> reduces;
  for (const UOp* u : sink->toposort())
    if (reduces_over(u, g.get())) reduces.push_back(u);
  std::vector<UOpRef> partials, buffers;
  for (const UOp* red : reduces) {
    std::vector<UOpRef> others{red->src[0]};
    for (size_t i = 1; i < red->src.size(); i++)
      if (red->src[i] != g) others.push_back(red->src[i]);
    partials.push_back(others.size() == 1 ? red->src[0] : UOp::make(Ops::REDUCE, red->dtype, std::move(others), red->arg));
    buffers.push_back(UOp::make(Ops::DEFINE_LOCAL, red->dtype.as_ptr(), {},
                                BufferArg{static_cast<int64_t>(buffers.size()), slots, "LOCAL"}));
  }
  const UOpRef before_write = UOp::make(Ops::BARRIER, dtypes::void_, partials);
  std::vector<UOpRef> stores;
  for (size_t i = 0; i < reduces.size(); i++) {
    UOpRef slot = UOp::make(Ops::INDEX, buffers[i]->dtype,
                            {UOp::make(Ops::AFTER, buffers[i]->dtype, {buffers[i], before_write}), rest * amt + g});
    stores.push_back(UOp::make(Ops::STORE, dtypes::void_, {slot, partials[i]}));
  }
  const UOpRef written = UOp::make(
      Ops::END, dtypes::void_, {stores.size() == 1 ? stores[0] : UOp::make(Ops::GROUP, dtypes::void_, stores), g});
  const UOpRef after_write = UOp::make(Ops::BARRIER, dtypes::void_, {written});
  std::unordered_map<const UOp*, UOpRef> replace;
  for (size_t i = 0; i < reduces.size(); i++) {
    UOpRef slot = UOp::make(Ops::INDEX, buffers[i]->dtype,
                            {UOp::make(Ops::AFTER, buffers[i]->dtype, {buffers[i], after_write}), rest * amt + r2});
    UOpRef partial = UOp::make(Ops::LOAD, reduces[i]->dtype, {slot});
    replace[reduces[i]] = UOp::make(Ops::REDUCE, reduces[i]->dtype, {partial, r2}, reduces[i]->arg);
  }
  return substitute(sink, replace);
}

}  // namespace kiln::codegen
