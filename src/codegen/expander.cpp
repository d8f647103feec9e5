// The expander: each UPCAST range of size n becomes n copies of the statements that use them, with
// the range replaced by 0..n-1. Copies of a reduction share its loop (lower_reduce.cpp groups
// them), so the loop body updates n accumulators side by side. SIMD vectors take the place of
// copies along one axis per reduction (vectorize.cpp): the UNROLL ranges (reduced loops) if opts
// made any, else the innermost UPCAST range along which every store is contiguous.
#include <algorithm>

#include "codegen/codegen.h"
#include "codegen/opt.h"
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

// The UPCAST range to vectorize: the last applied (highest id) along which every store to memory
// steps by one element, when the stored values are float32/float64.
const UOp* vector_axis(const UOpRef& sink, const std::vector<const UOp*>& upcasts, int& itemsize) {
  std::vector<const UOp*> stores;
  for (const UOp* u : sink->toposort())
    if (u->op == Ops::STORE && u->src[0]->src[0]->op == Ops::PARAM) stores.push_back(u);
  for (auto it = upcasts.rbegin(); it != upcasts.rend(); ++it) {
    bool contiguous = !stores.empty();
    for (const UOp* s : stores) {
      DType d = s->src[1]->dtype;
      contiguous &= (d.scalar == ScalarType::Float32 || d.scalar == ScalarType::Float64) &&
                    linear_coefficient(s->src[0]->src[1].get(), *it) == 1;
      itemsize = std::max(itemsize, d.itemsize());
    }
    if (contiguous) return *it;
  }
  return nullptr;
}

void flatten_groups(const UOpRef& s, std::vector<UOpRef>& out) {
  if (s->op != Ops::GROUP) return out.push_back(s);
  for (const UOpRef& x : s->src) flatten_groups(x, out);
}

}  // namespace

UOpRef expand_upcasts(const UOpRef& sink, int vector_bytes, bool unrolled) {
  std::vector<const UOp*> upcasts;
  for (const UOp* u : sink->toposort())
    if (u->op == Ops::RANGE && u->arg_as<RangeArg>().type == AxisType::UPCAST) upcasts.push_back(u);
  if (upcasts.empty()) return sink;
  std::sort(upcasts.begin(), upcasts.end(),
            [](const UOp* a, const UOp* b) { return a->arg_as<RangeArg>().id < b->arg_as<RangeArg>().id; });
  // With reductions vectorized along their UNROLLs (pm_vectorize_unrolls), only an UPCAST no
  // reduction varies with can be vectors too (a fused softmax's stores along its row).
  std::vector<const UOp*> vectorizable = upcasts;
  if (unrolled) {
    const auto under = ranges_under_reductions(sink);
    std::erase_if(vectorizable, [&](const UOp* r) { return under.count(r) > 0; });
  }
  int itemsize = 1;
  const UOp* vector = vector_bytes > 0 ? vector_axis(sink, vectorizable, itemsize) : nullptr;
  std::vector<const UOp*> copied = upcasts;
  std::erase(copied, vector);
  const auto copies = assignments(copied);
  // A copy of a stacked piece (codegen/heuristics/) is folded before the vector lanes take its place: its
  // gates are then constants that drop the other pieces (a splat of one would not fold).
  const auto stacked_loops = stacked_ranges(sink);
  const bool stacked = std::any_of(copied.begin(), copied.end(), [&](const UOp* r) { return stacked_loops.count(r) > 0; });
  std::vector<UOpRef> statements;
  for (const UOpRef& s : sink->src) {
    // END(body, ranges...): copy the body, and the END no longer closes the upcast ranges
    UOpRef body = s->op == Ops::END ? s->src[0] : s;
    std::vector<UOpRef> bodies;
    for (const auto& values : copies) {
      UOpRef copy = substitute(body, values);
      if (vector) copy = vectorize_axis(stacked ? simplify(copy) : copy, vector, vector_bytes / itemsize);
      flatten_groups(copy, bodies);
    }
    UOpRef grouped = UOp::make(Ops::GROUP, dtypes::void_, std::move(bodies));
    std::vector<UOpRef> end_src{grouped};
    if (s->op == Ops::END)
      for (size_t i = 1; i < s->src.size(); i++)
        if (std::find(upcasts.begin(), upcasts.end(), s->src[i].get()) == upcasts.end()) end_src.push_back(s->src[i]);
    statements.push_back(end_src.size() > 1 ? UOp::make(Ops::END, dtypes::void_, std::move(end_src)) : grouped);
  }
  return UOp::sink(std::move(statements));
}

}  // namespace kiln::codegen
