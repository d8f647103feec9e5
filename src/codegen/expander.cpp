// The expander: each UPCAST range of size n becomes n copies of the statements that use it, with
// the range replaced by 0..n-1. Copies of a reduction share its loop (lower_reduce.cpp groups
// them), so the loop body updates n accumulators side by side.
#include <algorithm>

#include "codegen/codegen.h"
#include "kiln/ir/pattern_matcher.h"
#include "kiln/ir/symbolic.h"

namespace kiln::codegen {
namespace {

// Every assignment of values to `ranges` (the last one varying fastest).
std::vector<std::unordered_map<const UOp*, UOpRef>> assignments(const std::vector<const UOp*>& ranges) {
  std::vector<std::unordered_map<const UOp*, UOpRef>> out{{}};
  for (const UOp* r : ranges) {
    std::vector<std::unordered_map<const UOp*, UOpRef>> next;
    for (const auto& partial : out)
      for (int64_t v = 0; v < static_cast<int64_t>(r->src[0]->const_value()); v++) {
        auto a = partial;
        a[r] = UOp::const_(r->dtype, static_cast<double>(v));
        next.push_back(std::move(a));
      }
    out = std::move(next);
  }
  return out;
}

}  // namespace

UOpRef expand_upcasts(const UOpRef& sink) {
  std::vector<const UOp*> upcasts;
  for (const UOp* u : sink->toposort())
    if (u->op == Ops::RANGE && u->arg_as<RangeArg>().type == AxisType::UPCAST) upcasts.push_back(u);
  if (upcasts.empty()) return sink;
  std::sort(upcasts.begin(), upcasts.end(),
            [](const UOp* a, const UOp* b) { return a->arg_as<RangeArg>().id < b->arg_as<RangeArg>().id; });
  const auto copies = assignments(upcasts);
  std::vector<UOpRef> statements;
  for (const UOpRef& s : sink->src) {
    // END(body, ranges...): copy the body, and the END no longer closes the upcast ranges
    UOpRef body = s->op == Ops::END ? s->src[0] : s;
    std::vector<UOpRef> bodies;
    for (const auto& values : copies) bodies.push_back(substitute(body, values));
    UOpRef grouped = UOp::make(Ops::GROUP, dtypes::void_, std::move(bodies));
    std::vector<UOpRef> end_src{grouped};
    if (s->op == Ops::END)
      for (size_t i = 1; i < s->src.size(); i++)
        if (std::find(upcasts.begin(), upcasts.end(), s->src[i].get()) == upcasts.end()) end_src.push_back(s->src[i]);
    statements.push_back(end_src.size() > 1 ? UOp::make(Ops::END, dtypes::void_, std::move(end_src)) : grouped);
  }
  return simplify(UOp::sink(std::move(statements)));
}

}  // namespace kiln::codegen
