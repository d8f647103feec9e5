#pragma once
// The codegen pipeline as data: an ordered list of named passes, as tinygrad's codegen is a list of
// named graph_rewrites. A pass is a graph_rewrite over a PatternMatcher where the step is local
// (each node's rewrite needs only the node, and what a context computed from the kernel once), or a
// walk over the whole kernel where it is not, with the reason. run_passes applies them in order,
// records each for VIZ and, at DEBUG>=5, prints each one's name and node counts.
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "kiln/ir/pattern_matcher.h"

namespace kiln::codegen {

struct Pass {
  std::string_view name;
  // A rewrite: its rules and, for rules that need one, the context they read, made from the kernel.
  const PatternMatcher* rules = nullptr;
  std::function<std::unique_ptr<RewriteCtx>(const UOpRef&)> make_ctx;
  // A walk: the function, and why the step is not a list of rules.
  std::function<UOpRef(const UOpRef&)> walk;
  std::string_view why_walk;
  // Runs only when the pass before it changed the kernel (a cleanup of what that pass made).
  bool after_change = false;
  SourceLoc where;  // where the pass is listed, shown by VIZ for a walk

  static Pass rewrite(std::string_view name, const PatternMatcher& rules,
                      std::function<std::unique_ptr<RewriteCtx>(const UOpRef&)> make_ctx = {},
                      SourceLoc where = SourceLoc::current()) {
    return {name, &rules, std::move(make_ctx), {}, {}, false, where};
  }
  static Pass walk_of(std::string_view name, std::function<UOpRef(const UOpRef&)> walk, std::string_view why,
                      SourceLoc where = SourceLoc::current()) {
    return {name, nullptr, {}, std::move(walk), why, false, where};
  }
  Pass if_changed() && {
    after_change = true;
    return std::move(*this);
  }
};

// Applies `passes` to `kernel` in order.
UOpRef run_passes(const UOpRef& kernel, const std::vector<Pass>& passes);

// symbolic() + simplify_valid_rules(): what simplify() rewrites with, as a pass's rules.
const PatternMatcher& simplify_rules();

}  // namespace kiln::codegen
