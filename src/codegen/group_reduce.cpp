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
//
// One rule rewrites each REDUCE over g into its last line. The reductions over g share their
// barriers (one work-group synchronization for all of them), so the context builds those once from
// the kernel: the partials' writes and the barriers around them.
#include <algorithm>

#include "codegen/codegen.h"
#include "codegen/opt.h"
#include "kiln/error.h"
#include "kiln/ir/pattern_matcher.h"

namespace kiln::codegen {
namespace {

struct GroupReduceCtx : RewriteCtx {
  UOpRef g, r2, rest;  // g: none when the kernel has no GROUP_REDUCE axis
  int64_t amt = 0;
  std::vector<const UOp*> reduces;  // the REDUCEs over g, the i-th writing buffers[i]
  std::vector<UOpRef> buffers;
  UOpRef after_write;  // the barrier after every partial is written

  explicit GroupReduceCtx(const UOpRef& sink) {
    const std::vector<const UOp*> locals = local_axes(sink);
    auto g_it = std::find_if(locals.begin(), locals.end(), [](const UOp* r) { return axis_type(r) == AxisType::GROUP_REDUCE; });
    if (g_it == locals.end()) return;
    g = (*g_it)->ref();
    amt = range_size(g.get());
    // The work-item's place among the others of its group along the LOCAL axes.
    rest = UOp::const_(dtypes::index, 0);
    int64_t slots = amt;
    for (const UOp* r : locals) {
      if (r == g.get()) continue;
      rest = rest * range_size(r) + r->ref();
      slots *= range_size(r);
    }
    r2 = UOp::make(Ops::RANGE, g->dtype, {UOp::const_(g->dtype, double(amt))},
                   RangeArg{axis_id(ranges_of(sink).back()) + 1, AxisType::REDUCE});
    std::vector<UOpRef> partials;
    for (const UOp* u : sink->toposort()) {
      if (!reduces_over(u, g.get())) continue;
      reduces.push_back(u);
      std::vector<UOpRef> others{u->src[0]};
      for (size_t i = 1; i < u->src.size(); i++)
        if (u->src[i] != g) others.push_back(u->src[i]);
      partials.push_back(others.size() == 1 ? u->src[0] : UOp::make(Ops::REDUCE, u->dtype, std::move(others), u->arg));
      buffers.push_back(UOp::make(Ops::DEFINE_LOCAL, u->dtype.as_ptr(), {},
                                  BufferArg{static_cast<int64_t>(buffers.size()), slots, "LOCAL"}));
    }
    const UOpRef before_write = UOp::make(Ops::BARRIER, dtypes::void_, partials);
    std::vector<UOpRef> stores;
    for (size_t i = 0; i < reduces.size(); i++)
      stores.push_back(UOp::make(Ops::STORE, dtypes::void_, {slot(i, before_write, g), partials[i]}));
    const UOpRef written = UOp::make(
        Ops::END, dtypes::void_, {stores.size() == 1 ? stores[0] : UOp::make(Ops::GROUP, dtypes::void_, stores), g});
    after_write = UOp::make(Ops::BARRIER, dtypes::void_, {written});
  }

  // buffers[i] at the work-item's row, column `at`, once `barrier` has passed.
  UOpRef slot(size_t i, const UOpRef& barrier, const UOpRef& at) const {
    return UOp::make(Ops::INDEX, buffers[i]->dtype,
                     {UOp::make(Ops::AFTER, buffers[i]->dtype, {buffers[i], barrier}), rest * amt + at});
  }

  // A REDUCE over g → the reduction of its group's partials, read from local memory.
  UOpRef reduce_partials(const UOpRef& red) const {
    if (!g || !reduces_over(red.get(), g.get())) return {};
    const size_t i = static_cast<size_t>(std::find(reduces.begin(), reduces.end(), red.get()) - reduces.begin());
    // one made by lowering another: a reduction over g inside another's value
    if (i == reduces.size()) throw_error("lower group reduces: a reduction over the GROUP axis reads another one");
    UOpRef partial = UOp::make(Ops::LOAD, red->dtype, {slot(i, after_write, r2)});
    return UOp::make(Ops::REDUCE, red->dtype, {partial, r2}, red->arg);
  }
};

}  // namespace

const PatternMatcher& pm_group_reduces() {
  static const PatternMatcher pm{{
      make_rule(UPat(Ops::REDUCE).named("red"),
                [](RewriteCtx* ctx, const Match& m) { return ctx->as<GroupReduceCtx>().reduce_partials(m["red"]); }),
  }};
  return pm;
}

std::unique_ptr<RewriteCtx> group_reduce_ctx(const UOpRef& sink) { return std::make_unique<GroupReduceCtx>(sink); }

}  // namespace kiln::codegen
