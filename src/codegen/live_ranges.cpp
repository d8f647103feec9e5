#include "codegen/live_ranges.h"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace kiln::codegen {

std::vector<UOpRef> live_ranges(const UOpRef& root) {
  std::unordered_map<const UOp*, std::set<const UOp*>> live;
  for (const UOp* u : root->toposort()) {
    std::set<const UOp*>& mine = live[u];
    for (const UOpRef& s : u->src) mine.insert(live[s.get()].begin(), live[s.get()].end());
    if (u->op == Ops::RANGE) mine.insert(u);
    if (u->op == Ops::END)
      for (size_t i = 1; i < u->src.size(); i++) mine.erase(u->src[i].get());
  }
  std::vector<UOpRef> out;
  for (const UOp* r : live[root.get()]) out.push_back(r->ref());
  std::sort(out.begin(), out.end(), [](const UOpRef& a, const UOpRef& b) {
    return a->arg_as<RangeArg>().id < b->arg_as<RangeArg>().id;
  });
  return out;
}

}  // namespace kiln::codegen
