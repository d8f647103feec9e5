// Rules for targets with work-groups (OpenCL, CUDA), as tinygrad's hand_coded_optimizations for
// GPUs: GROUP for reductions with so few outputs that each group of work-items had better share
// one, else LOCAL work-group tiles (a 16x16 tile of a reduction's outputs, a 1-D group of up to
// 256 along an elementwise kernel's innermost loop), then THREAD over the groups.
#include <algorithm>

#include "codegen/heuristics/analysis.h"
#include "codegen/heuristics/rules.h"

namespace kiln::codegen::heuristics {
namespace {

constexpr int64_t kTileSide = 16, kLineGroup = 256, kGroupReduceMax = 256;
constexpr int64_t kFewOutputs = 64, kMinGroupedReduce = 256;

std::vector<const UOp*> reduced_loops(const UOpRef& ast) {
  std::vector<const UOp*> out;
  for (const UOp* r : ranges_of(ast))
    if (axis_type(r) == AxisType::REDUCE) out.push_back(r);
  return out;
}

// GROUP: few outputs, a long reduction: the reduced loop with the largest power-of-two divisor
// (the innermost among equals)
bool few_outputs_long_reduction(const Plan& p) {
  int64_t outputs = 1, reduced = 1;
  for (const UOp* r : p.loops) outputs *= range_size(r);
  for (const UOp* r : reduced_loops(p.ast)) reduced *= range_size(r);
  return p.reduces && outputs <= kFewOutputs && reduced >= kMinGroupedReduce;
}

bool add_group(Plan& p) {
  const UOp* best = nullptr;
  int64_t best_amt = 0;
  for (const UOp* r : reduced_loops(p.ast)) {
    const int64_t cap = std::min(kGroupReduceMax, int64_t{p.target.max_local_size});
    const int64_t amt = power_of_two_divisor(range_size(r), cap);
    if (amt >= best_amt) {
      best = r;
      best_amt = amt;
    }
  }
  return best_amt >= 8 && p.add_if_legal({OptOp::GROUP, axis_id(best), best_amt});
}

// LOCAL goes only on loops every reduction varies along: the work-items would each recompute a
// reduction that does not, where one loop iteration computes it once (a softmax's row maximum).
std::vector<const UOp*> local_candidates(const Plan& p) {
  std::vector<const UOp*> loops = p.loops;
  std::erase_if(loops, [&](const UOp* r) {
    for (const UOp* u : p.ast->toposort()) {
      if (u->op != Ops::REDUCE) continue;
      const auto below = u->toposort();
      if (std::find(below.begin(), below.end(), r) == below.end()) return true;
    }
    return false;
  });
  return loops;
}

// A 2-D tile of a reduction's two innermost output loops (when no GROUP took the work-items)
bool reduction_with_two_loops(const Plan& p) { return p.opts.empty() && p.reduces && local_candidates(p).size() >= 2; }

bool add_local_tile(Plan& p) {
  const std::vector<const UOp*> loops = local_candidates(p);
  const int64_t max_local = p.target.max_local_size;
  const int64_t inner = power_of_two_divisor(range_size(loops.back()), std::min(kTileSide, max_local));
  bool added = inner && p.add_if_legal({OptOp::LOCAL, axis_id(loops.back()), inner});
  const UOp* second = loops[loops.size() - 2];
  const int64_t outer =
      power_of_two_divisor(range_size(second), std::min(kTileSide, max_local / std::max<int64_t>(inner, 1)));
  if (outer) added |= p.add_if_legal({OptOp::LOCAL, axis_id(second), outer});
  return added;
}

// else a line along the innermost loop
bool one_loop_or_elementwise(const Plan& p) {
  if (!p.opts.empty()) return false;
  const size_t loops = local_candidates(p).size();
  return loops >= 1 && !(p.reduces && loops >= 2);
}

bool add_local_line(Plan& p) {
  const UOp* inner = local_candidates(p).back();
  const int64_t amt = power_of_two_divisor(range_size(inner), std::min(kLineGroup, int64_t{p.target.max_local_size}));
  return amt && p.add_if_legal({OptOp::LOCAL, axis_id(inner), amt});
}

// THREAD: a work-group per iteration of the outermost output loop that remains (the outer part
// of a split)
bool always(const Plan&) { return true; }

bool add_group_threads(Plan& p) {
  for (const UOp* r : ranges_of(p.k))
    if (axis_type(r) == AxisType::LOOP && range_size(r) >= 2)
      return p.add_if_legal({OptOp::THREAD, axis_id(r), range_size(r)});
  return false;
}

}  // namespace

const std::vector<Rule>& work_group_rules() {
  static const std::vector<Rule> rules = {
      {"group reduce for few outputs", few_outputs_long_reduction, add_group},
      {"local tile of a reduction's outputs", reduction_with_two_loops, add_local_tile},
      {"local line along the innermost loop", one_loop_or_elementwise, add_local_line},
      {"a work-group per outer iteration", always, add_group_threads},
  };
  return rules;
}

}  // namespace kiln::codegen::heuristics
