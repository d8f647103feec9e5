// The codegen pipeline, in order. Each step's output is printable (DEBUG=5 AST, 6 linear UOps).
#include <algorithm>
#include <set>
#include <unordered_map>

#include "codegen/codegen.h"
#include "kiln/ir/spec.h"
#include "kiln/ir/symbolic.h"
#include "support/env.h"

namespace kiln::codegen {
namespace {

const char* axis_color(AxisType t) {
  switch (t) {
    case AxisType::THREAD: return "\033[34m";  // blue: parallel over cores
    case AxisType::LOOP: return "\033[36m";    // cyan: a plain loop
    case AxisType::REDUCE: return "\033[31m";  // red: reduction
    case AxisType::UPCAST: return "\033[33m";  // yellow: vectorized
    case AxisType::UNROLL: return "\033[35m";  // magenta: unrolled reduction
  }
  return "";
}

}  // namespace

std::string kernel_name(const UOpRef& ast, bool colored) {
  std::vector<const UOp*> ranges;
  for (const UOp* u : ast->toposort())
    if (u->op == Ops::RANGE) ranges.push_back(u);
  std::stable_sort(ranges.begin(), ranges.end(), [](const UOp* a, const UOp* b) {
    return a->arg_as<RangeArg>().id < b->arg_as<RangeArg>().id;
  });
  bool reduces = std::any_of(ranges.begin(), ranges.end(),
                             [](const UOp* r) { return r->arg_as<RangeArg>().type == AxisType::REDUCE; });
  std::string name = reduces ? "r" : "E";
  std::set<int64_t> seen;
  for (const UOp* r : ranges) {
    if (!seen.insert(r->arg_as<RangeArg>().id).second) continue;  // a reopened loop appears once
    std::string size = std::to_string(static_cast<int64_t>(r->src[0]->const_value()));
    name += "_";
    name += colored ? axis_color(r->arg_as<RangeArg>().type) + size + "\033[0m" : size;
  }
  if (ranges.empty()) name += "_1";
  return name;
}

double estimate_flops(const std::vector<UOpRef>& linear) {
  double flops = 0, trips = 1;
  std::vector<double> stack;
  for (const UOpRef& u : linear) {
    if (u->op == Ops::RANGE) {
      stack.push_back(trips);
      trips *= u->src[0]->const_value();
    } else if (u->op == Ops::END) {
      for (size_t i = 1; i < u->src.size(); i++) {
        trips = stack.back();
        stack.pop_back();
      }
    } else if (group::ALU.has(u->op) && !u->dtype.is_bool() && u->dtype.scalar != dtypes::index.scalar) {
      flops += trips;  // index arithmetic and comparisons are not counted, as in tinygrad
    }
  }
  return flops;
}

Program to_program(const UOpRef& ast, const Target& target) {
  Program p;
  const bool check = env::get_int("SPEC", 0) > 0;
  if (check) spec::verify_kernel(ast);
  UOpRef k = simplify(ast);
  k = apply_opts(k, target, p.opts, p.threads);
  p.name = kernel_name(k, false);
  p.display_name = kernel_name(k, true);
  k = simplify(lower_reduces(k));
  p.linear = linearize(k);
  if (check) spec::verify_linear(p.linear);
  p.flops = estimate_flops(p.linear);
  p.source = target.renderer->render({p.name, p.linear, p.threads});
  return p;
}

}  // namespace kiln::codegen
