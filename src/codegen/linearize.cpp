// Linearize: order a kernel's UOps into a flat program. A node is emitted inside exactly the
// loops it lives in (its live ranges): list scheduling that prefers nodes of the currently open
// loop nest, opens a loop only when nothing else can go, and closes loops with their END.
#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "codegen/codegen.h"
#include "kiln/error.h"
#include "kiln/ir/pattern_matcher.h"

namespace kiln::codegen {
namespace {

bool is_work_item_axis(const UOp* r) {
  const AxisType t = r->arg_as<RangeArg>().type;
  return t == AxisType::LOCAL || t == AxisType::GROUP_REDUCE;
}

}  // namespace

std::vector<UOpRef> linearize(const UOpRef& sink) {
  std::vector<const UOp*> topo = sink->toposort();
  std::unordered_map<const UOp*, size_t> order;
  std::unordered_map<const UOp*, std::vector<const UOp*>> users;
  // live: the loops a node's value depends on. block: the loop nest it is emitted in — an END is
  // emitted inside the loops it closes, and its users no longer live in them.
  std::unordered_map<const UOp*, std::set<const UOp*>> live, block;
  for (const UOp* u : topo) {
    order[u] = order.size();
    std::set<const UOp*> mine;
    for (const UOpRef& s : u->src) {
      mine.insert(live[s.get()].begin(), live[s.get()].end());
      users[s.get()].push_back(u);
    }
    block[u] = mine;
    if (u->op == Ops::RANGE) mine.insert(u);
    if (u->op == Ops::END)
      for (size_t i = 1; i < u->src.size(); i++) mine.erase(u->src[i].get());
    live[u] = std::move(mine);
  }
  // The statements an END closes belong inside its loops even when their values do not depend on
  // them (a loop whose index simplified away): outer ENDs first, so nested bodies inherit.
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const UOp* end = *it;
    if (end->op != Ops::END) continue;
    std::vector<const UOp*> body{end->src[0].get()};
    if (body[0]->op == Ops::GROUP)
      for (const UOpRef& s : body[0]->src) body.push_back(s.get());
    for (const UOp* stmt : body) {
      block[stmt].insert(block[end].begin(), block[end].end());
      for (size_t i = 1; i < end->src.size(); i++) block[stmt].insert(end->src[i].get());
    }
  }

  std::unordered_map<const UOp*, int> waiting;  // sources not yet emitted
  auto by_order = [&](const UOp* a, const UOp* b) { return order.at(a) < order.at(b); };
  std::set<const UOp*, decltype(by_order)> ready(by_order);
  for (const UOp* u : topo) {
    std::set<const UOp*> distinct;
    for (const UOpRef& s : u->src) distinct.insert(s.get());
    waiting[u] = static_cast<int>(distinct.size());
    if (distinct.empty()) ready.insert(u);
  }

  std::vector<const UOp*> open;  // the loop nest, outermost first
  std::set<const UOp*> open_set;
  std::vector<UOpRef> out;
  auto emit = [&](const UOp* u) {
    ready.erase(u);
    out.push_back(u->ref());
    if (u->op == Ops::RANGE) {
      open.push_back(u);
      open_set.insert(u);
    }
    if (u->op == Ops::END) {
      for (size_t i = 1; i < u->src.size(); i++) {
        auto it = std::find(open.begin(), open.end(), u->src[i].get());
        if (it == open.end()) throw_error("linearize: END closes a loop that is not open");
        open_set.erase(*it);
        open.erase(it);
      }
    }
    std::set<const UOp*> notified;
    for (const UOp* user : users[u])
      if (notified.insert(user).second && --waiting[user] == 0) ready.insert(user);
  };

  while (!ready.empty()) {
    const UOp* pick = nullptr;
    // 1. a node that belongs to the innermost open loop: its loops are open and include that one
    auto inside = [&](const UOp* u) {
      return std::includes(open_set.begin(), open_set.end(), block[u].begin(), block[u].end());
    };
    // Work-item axes (LOCAL, GROUP_REDUCE) are not loops (every work-item runs the body once):
    // nodes belong to the innermost open loop of the others.
    auto innermost = [&](const UOp* u) {
      auto loop = std::find_if(open.rbegin(), open.rend(), [](const UOp* r) { return !is_work_item_axis(r); });
      if (loop == open.rend()) return std::all_of(block[u].begin(), block[u].end(), is_work_item_axis);
      return block[u].count(*loop) > 0;
    };
    for (const UOp* u : ready)
      if (u->op != Ops::RANGE && inside(u) && innermost(u)) {
        pick = u;
        break;
      }
    // 2. else open the next loop whose dependencies are all open: one nested in the innermost open
    //    loop first, then the outermost (lowest id)
    if (!pick) {
      // A reduction loop opens exactly where its accumulators were initialized, and first: its
      // result is what the open nest is waiting for.
      auto reduces = [](const UOp* r) { return r->arg_as<RangeArg>().type == AxisType::REDUCE; };
      // Work-item axes open first, at the top: they are constants, and what depends only on them
      // is then computed once, outside the loops.
      auto rank = [&](const UOp* r) {
        return std::make_tuple(!is_work_item_axis(r), !reduces(r), !innermost(r), r->arg_as<RangeArg>().id);
      };
      auto loops_of = [](const std::set<const UOp*>& ranges) {
        std::set<const UOp*> out;
        std::copy_if(ranges.begin(), ranges.end(), std::inserter(out, out.end()), [](const UOp* r) { return !is_work_item_axis(r); });
        return out;
      };
      for (const UOp* u : ready)
        if (u->op == Ops::RANGE && inside(u) && (!reduces(u) || loops_of(block[u]) == loops_of(open_set)) && (!pick || rank(u) < rank(pick)))
          pick = u;
    }
    // 3. else a node of an enclosing nest (it is recomputed in the inner loop; only pure nodes
    //    can be here because stores and loops carry their ranges, and barriers their stores)
    if (!pick)
      for (const UOp* u : ready)
        if (u->op != Ops::RANGE && u->op != Ops::STORE && u->op != Ops::END && u->op != Ops::BARRIER && inside(u)) {
          pick = u;
          break;
        }
    if (!pick) {
      std::string stuck;
      for (const UOp* u : ready) stuck += " " + std::string(op_name(u->op)) + "(block of " + std::to_string(block[u].size()) + ")";
      throw_error("linearize: no node can be placed (inconsistent loop structure); ", open.size(),
                  " loops open, ready:", stuck, "\n", print_graph(sink));
    }
    emit(pick);
  }
  if (out.size() != topo.size()) throw_error("linearize: ", topo.size() - out.size(), " nodes were never ready");
  return out;
}

}  // namespace kiln::codegen
