#include "codegen/passes.h"

#include <cstdio>
#include <string>

#include "kiln/ir/symbolic.h"
#include "support/env.h"
#include "uop/rewrite_trace.h"

namespace kiln::codegen {

const PatternMatcher& simplify_rules() {
  static const PatternMatcher pm = symbolic() + simplify_valid_rules();
  return pm;
}

UOpRef run_passes(const UOpRef& kernel, const std::vector<Pass>& passes) {
  const bool debug = env::debug_level() >= 5;
  UOpRef k = kernel;
  bool changed = true;  // whether the last pass that ran changed the kernel
  for (const Pass& pass : passes) {
    if (pass.after_change && !changed) {
      if (debug)
        std::fprintf(stderr, "  pass %-28s skipped: the kernel did not change\n", std::string(pass.name).c_str());
      continue;
    }
    const UOpRef before = k;
    if (pass.rules) {
      std::unique_ptr<RewriteCtx> ctx = pass.make_ctx ? pass.make_ctx(k) : nullptr;
      k = graph_rewrite(k, *pass.rules, {.ctx = ctx.get(), .name = pass.name});
    } else {
      k = pass.walk(k);
      trace::record_pass(pass.name, before, k, pass.where);
    }
    changed = k != before;
    if (debug)
      std::fprintf(stderr, "  pass %-28s %6zu -> %6zu nodes%s%s\n", std::string(pass.name).c_str(),
                   before->toposort().size(), k->toposort().size(), pass.rules ? "" : "  walk: ",
                   std::string(pass.why_walk).c_str());
  }
  return k;
}

}  // namespace kiln::codegen
