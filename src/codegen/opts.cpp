// Kernel optimizations. An optimization is a split, retyped range:
//   THREAD  the outermost loop's iterations are divided among the CPU's cores;
//   UPCAST  a loop of a reduction kernel is split as r = r_outer*amt + r_inner and r_inner becomes
//           amt copies of the body (expander.cpp), so one pass over the reduced data feeds amt
//           accumulators and the C compiler can keep them in vector registers.
#include <algorithm>
#include <unordered_map>

#include "codegen/codegen.h"
#include "kiln/ir/pattern_matcher.h"
#include "kiln/ir/symbolic.h"

namespace kiln::codegen {
namespace {

// Below this many inner-loop iterations a kernel runs faster on one core than it takes to wake others.
constexpr double kMinWorkPerThreadSplit = 1 << 16;
// Copies of a reduction body: enough accumulators for a vector register or two, few enough that
// they all stay in registers.
constexpr int64_t kInnerUpcast = 8, kOuterUpcast = 4;

int64_t range_size(const UOp* r) { return static_cast<int64_t>(r->src[0]->const_value()); }
const RangeArg& info(const UOp* r) { return r->arg_as<RangeArg>(); }

std::vector<const UOp*> ranges_of(const UOpRef& ast) {
  std::vector<const UOp*> out;
  for (const UOp* u : ast->toposort())
    if (u->op == Ops::RANGE) out.push_back(u);
  std::sort(out.begin(), out.end(), [](const UOp* a, const UOp* b) { return info(a).id < info(b).id; });
  return out;
}

// r (size n) → r_outer*amt + r_inner, with r_outer keeping r's id and kind (no r_outer when amt is n).
UOpRef split_range(const UOpRef& ast, const UOp* r, int64_t amt, AxisType inner_type, int64_t inner_id) {
  const bool whole = range_size(r) == amt;
  UOpRef outer = UOp::make(Ops::RANGE, r->dtype, {UOp::const_(r->dtype, double(range_size(r) / amt))}, r->arg);
  UOpRef inner = UOp::make(Ops::RANGE, r->dtype, {UOp::const_(r->dtype, double(amt))}, RangeArg{inner_id, inner_type});
  // An END closing r now closes both new loops; everywhere else r becomes the expression.
  std::unordered_map<const UOp*, UOpRef> ends;
  for (const UOp* u : ast->toposort()) {
    if (u->op != Ops::END || std::find(u->src.begin() + 1, u->src.end(), r->ref()) == u->src.end()) continue;
    std::vector<UOpRef> src{u->src[0]};
    for (size_t i = 1; i < u->src.size(); i++) {
      if (u->src[i].get() != r) src.push_back(u->src[i]);
      else if (whole) src.push_back(inner);
      else src.insert(src.end(), {outer, inner});
    }
    ends[u] = u->with_src(std::move(src));
  }
  return simplify(substitute(substitute(ast, ends), {{r, whole ? inner : outer * amt + inner}}));
}

}  // namespace

UOpRef apply_opts(const UOpRef& ast, const Target& target, std::vector<std::string>& applied, int64_t& threads) {
  threads = 1;
  if (!target.optimize) return ast;
  UOpRef k = ast;
  std::vector<const UOp*> ranges = ranges_of(k);
  double work = 1;
  for (const UOp* r : ranges) work *= static_cast<double>(range_size(r));
  std::vector<const UOp*> loops;
  for (const UOp* r : ranges)
    if (info(r).type == AxisType::LOOP) loops.push_back(r);
  bool reduces = std::any_of(ranges.begin(), ranges.end(), [](const UOp* r) { return info(r).type == AxisType::REDUCE; });

  // THREAD: the outermost loop, when there is enough work to share.
  if (target.max_threads > 1 && !loops.empty() && range_size(loops[0]) >= 2 && work >= kMinWorkPerThreadSplit) {
    threads = std::min<int64_t>(target.max_threads, range_size(loops[0]));
    applied.push_back("THREAD(axis=" + std::to_string(info(loops[0]).id) + ", amt=" + std::to_string(threads) + ")");
    k = substitute(k, {{loops[0], loops[0]->with_arg(RangeArg{info(loops[0]).id, AxisType::THREAD})}});
  }
  // UPCAST: reductions only (elementwise loops are vectorized by the C compiler as they are). The
  // innermost loop by 8, then the outermost by 4 if each thread keeps enough iterations.
  if (!reduces) return k;
  int64_t next_id = ranges.empty() ? 0 : info(ranges.back()).id + 1;
  std::vector<const UOp*> outputs;
  for (const UOp* r : ranges_of(k))
    if (info(r).type == AxisType::LOOP || info(r).type == AxisType::THREAD) outputs.push_back(r);
  auto upcast = [&](const UOp* r, int64_t amt) {
    applied.push_back("UPCAST(axis=" + std::to_string(info(r).id) + ", amt=" + std::to_string(amt) + ")");
    k = split_range(k, r, amt, AxisType::UPCAST, next_id++);
  };
  if (outputs.empty()) return k;
  const UOp* inner = outputs.back();
  int64_t inner_id = info(inner).id;
  if (range_size(inner) % kInnerUpcast == 0) upcast(inner, kInnerUpcast);
  const UOp* outer = nullptr;
  for (const UOp* r : ranges_of(k))
    if ((info(r).type == AxisType::LOOP || info(r).type == AxisType::THREAD) && info(r).id != inner_id) {
      outer = r;
      break;
    }
  if (outer && range_size(outer) % kOuterUpcast == 0 && range_size(outer) / kOuterUpcast >= threads)
    upcast(outer, kOuterUpcast);
  return k;
}

}  // namespace kiln::codegen
