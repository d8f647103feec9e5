#pragma once
// The hand-written heuristics (hand_coded_opts) as an ordered list of named rules, as tinygrad's
// hand_coded_optimizations is a readable sequence of decisions. The driver (driver.cpp) walks the
// CPU's list or, on targets that prefer work-groups, the work-group list; each rule whose
// precondition holds looks at the kernel and the decisions before it (a Plan) and adds opts or
// shapes the register tile that a later rule turns into opts. DEBUG=4 prints each rule that fired.
#include <string>
#include <utility>
#include <vector>

#include "codegen/codegen.h"

namespace kiln::codegen::heuristics {

// One kernel's optimization in progress.
struct Plan {
  Plan(const UOpRef& ast, const Target& target);

  UOpRef ast;             // the kernel as given
  const Target& target;
  UOpRef k;               // the kernel with the opts applied that later rules build on (THREAD, work-group opts)
  std::vector<Opt> opts;  // chosen so far, in the order they apply
  // facts about the kernel as given
  std::vector<const UOp*> loops;  // its output (LOOP) ranges, outermost first
  bool reduces = false;
  double work = 1;                // iterations of all its loops together
  // decisions
  int64_t threads = 1;   // cores the THREAD rule shares the kernel among
  bool tiled = false;    // an elementwise rule chose the kernel's tile (the others are then skipped)
  // a reduction's register tile: output loops to UPCAST and by how much, the first one applied last
  std::vector<std::pair<const UOp*, int64_t>> tile;
  const UOp* unroll = nullptr;  // a reduced loop accumulated in vectors (UNROLL), and by how much
  int64_t unroll_amt = 0;

  // Appends `opt` and applies it to k when it is legal there (work-group rules); whether it was.
  bool add_if_legal(const Opt& opt);
  // The tile and unroll, as text (DEBUG output of the rules that shape them).
  std::string decisions() const;
};

struct Rule {
  const char* name;
  bool (*applies)(const Plan&);  // the rule's precondition: which kernels it is for
  bool (*apply)(Plan&);          // adds its opts or shapes the tile; whether it decided anything
};

// In the order the driver walks them: cpu_rules (cpu_rules.cpp) are THREAD, the elementwise
// kernels' tiles and then cpu_reduce_rules (cpu_reduce_rules.cpp), the reductions' register tiles.
const std::vector<Rule>& cpu_rules();
const std::vector<Rule>& cpu_reduce_rules();
const std::vector<Rule>& work_group_rules();

// A rule that fired: its name, the opts it added, and the plan's tile and unroll after it.
struct Firing {
  std::string rule;
  std::vector<Opt> opts;
  std::string decisions;
};

struct Choice {
  std::vector<Opt> opts;
  std::vector<Firing> fired;
};

// hand_coded_opts with the rules that chose them.
Choice choose_opts(const UOpRef& ast, const Target& target);

}  // namespace kiln::codegen::heuristics
