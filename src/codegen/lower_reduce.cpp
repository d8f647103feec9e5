// REDUCE → an accumulator register, the way a C programmer writes a reduction:
//   acc = identity;                      (inside the loops the result depends on)
//   for (r...) acc = acc <op> x;
//   ... acc ...                          (read after the loops close)
// Ordering is carried by data edges: the reduce RANGEs depend on the initializing STORE, the
// update reads the accumulator AFTER its ranges open, and the result reads it AFTER the END.
#include <set>
#include <unordered_map>

#include "codegen/codegen.h"
#include "codegen/live_ranges.h"
#include "kiln/error.h"
#include "kiln/ir/pattern_matcher.h"

namespace kiln::codegen {
namespace {

struct ReduceCtx : RewriteCtx {
  int64_t next_acc = 0;
};

UOpRef scalar_index(const UOpRef& buf) {
  return UOp::make(Ops::INDEX, buf->dtype, {buf, UOp::const_(dtypes::index, 0)});
}

UOpRef after(const UOpRef& buf, std::vector<UOpRef> deps) {
  if (deps.empty()) return buf;
  deps.insert(deps.begin(), buf);
  return UOp::make(Ops::AFTER, buf->dtype, std::move(deps));
}

UOpRef lower_one(ReduceCtx& ctx, const UOpRef& red) {
  const Ops op = red->arg_as<ReduceArg>().op;
  const UOpRef& value = red->src[0];
  std::vector<UOpRef> ranges(red->src.begin() + 1, red->src.end());
  // The loops outside the reduction that its value depends on: the accumulator lives in them.
  std::vector<UOpRef> outer;
  std::set<const UOp*> own;
  for (const UOpRef& r : ranges) own.insert(r.get());
  for (const UOpRef& r : live_ranges(value))
    if (!own.count(r.get())) outer.push_back(r);

  UOpRef acc = UOp::make(Ops::BUFFER, red->dtype.as_ptr(), {}, BufferArg{ctx.next_acc++, 1, "REG"});
  UOpRef init = UOp::make(Ops::STORE, dtypes::void_,
                          {scalar_index(after(acc, outer)), UOp::const_(red->dtype, reduce_identity(op, red->dtype))});
  std::unordered_map<const UOp*, UOpRef> reopened;
  std::vector<UOpRef> loops;
  for (const UOpRef& r : ranges) {
    loops.push_back(UOp::make(Ops::RANGE, r->dtype, {r->src[0], init}, r->arg));
    reopened[r.get()] = loops.back();
  }
  UOpRef x = substitute(value, reopened);
  UOpRef current = UOp::make(Ops::LOAD, red->dtype, {scalar_index(after(acc, loops))});
  UOpRef update = UOp::make(Ops::STORE, dtypes::void_,
                            {scalar_index(acc), UOp::make(op, red->dtype, {current, x})});
  std::vector<UOpRef> end_src{update};
  end_src.insert(end_src.end(), loops.begin(), loops.end());
  UOpRef end = UOp::make(Ops::END, dtypes::void_, end_src);
  return UOp::make(Ops::LOAD, red->dtype, {scalar_index(after(acc, {end}))});
}

}  // namespace

UOpRef lower_reduces(const UOpRef& ast) {
  static const PatternMatcher pm{{
      {UPat(Ops::REDUCE).named("red"),
       [](RewriteCtx* ctx, const Match& m) { return lower_one(ctx->as<ReduceCtx>(), m["red"]); }},
  }};
  ReduceCtx ctx;
  return graph_rewrite(ast, pm, {.ctx = &ctx});
}

}  // namespace kiln::codegen
