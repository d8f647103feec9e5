// Kernel optimizations. An optimization is a retyped range: here the outermost loop becomes a
// THREAD range whose iterations are split over the CPU's cores.
#include <algorithm>

#include "codegen/codegen.h"
#include "kiln/ir/pattern_matcher.h"

namespace kiln::codegen {
namespace {

// Below this many inner-loop iterations a kernel runs faster on one core than it takes to wake others.
constexpr double kMinWorkPerThreadSplit = 1 << 16;

int64_t range_size(const UOp* r) { return static_cast<int64_t>(r->src[0]->const_value()); }

}  // namespace

UOpRef apply_opts(const UOpRef& ast, const Target& target, std::vector<std::string>& applied, int64_t& threads) {
  threads = 1;
  if (!target.optimize || target.max_threads <= 1) return ast;
  const UOp* outer = nullptr;
  double work = 1;
  for (const UOp* u : ast->toposort()) {
    if (u->op != Ops::RANGE) continue;
    work *= static_cast<double>(range_size(u));
    const RangeArg& a = u->arg_as<RangeArg>();
    if (a.type == AxisType::LOOP && (!outer || a.id < outer->arg_as<RangeArg>().id)) outer = u;
  }
  if (!outer || range_size(outer) < 2 || work < kMinWorkPerThreadSplit) return ast;
  threads = std::min<int64_t>(target.max_threads, range_size(outer));
  const RangeArg& a = outer->arg_as<RangeArg>();
  applied.push_back("THREAD(axis=" + std::to_string(a.id) + ", amt=" + std::to_string(threads) + ")");
  return substitute(ast, {{outer, outer->with_arg(RangeArg{a.id, AxisType::THREAD})}});
}

}  // namespace kiln::codegen
