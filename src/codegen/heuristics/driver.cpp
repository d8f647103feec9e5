// The driver of the hand-written heuristics: walks the CPU's rules or, on targets that prefer
// work-groups, the work-group rules (rules.h), and at DEBUG=4 prints each rule that fired.
#include <cstdio>

#include "codegen/heuristics/rules.h"
#include "support/env.h"

namespace kiln::codegen {
namespace heuristics {

Plan::Plan(const UOpRef& ast, const Target& target) : ast(ast), target(target), k(ast) {
  for (const UOp* r : ranges_of(ast)) {
    work *= static_cast<double>(range_size(r));
    if (axis_type(r) == AxisType::LOOP) loops.push_back(r);
    reduces |= axis_type(r) == AxisType::REDUCE;
  }
}

bool Plan::add_if_legal(const Opt& opt) {
  UOpRef next = apply_opt(k, opt, target);
  if (!next) return false;
  opts.push_back(opt);
  k = next;
  return true;
}

std::string Plan::decisions() const {
  std::string out = "tile [";
  for (size_t i = 0; i < tile.size(); i++)
    out += (i ? ", axis=" : "axis=") + std::to_string(axis_id(tile[i].first)) + " amt=" +
           std::to_string(tile[i].second);
  out += "]";
  if (unroll) out += " unroll [axis=" + std::to_string(axis_id(unroll)) + " amt=" + std::to_string(unroll_amt) + "]";
  return out;
}

Choice choose_opts(const UOpRef& ast, const Target& target) {
  Choice choice;
  if (!target.optimize) return choice;
  Plan plan(ast, target);
  const bool work_groups = target.max_local_size > 1 && target.prefer_work_groups;
  for (const Rule& rule : work_groups ? work_group_rules() : cpu_rules()) {
    if (!rule.applies(plan)) continue;
    const size_t before = plan.opts.size();
    if (!rule.apply(plan)) continue;
    std::vector<Opt> added(plan.opts.begin() + static_cast<std::ptrdiff_t>(before), plan.opts.end());
    choice.fired.push_back({rule.name, std::move(added), plan.decisions()});
  }
  choice.opts = std::move(plan.opts);
  return choice;
}

}  // namespace heuristics

std::vector<Opt> hand_coded_opts(const UOpRef& ast, const Target& target) {
  heuristics::Choice choice = heuristics::choose_opts(ast, target);
  if (env::debug_level() >= 4)
    for (const heuristics::Firing& f : choice.fired) {
      std::string opts;
      for (const Opt& o : f.opts) opts += " " + o.str();
      fprintf(stderr, "heuristic rule \"%s\":%s %s\n", f.rule.c_str(), opts.c_str(), f.decisions.c_str());
    }
  return std::move(choice.opts);
}

}  // namespace kiln::codegen
