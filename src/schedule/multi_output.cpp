// Multi-output kernels: realized nodes of one shape that read each other element for element
// (an optimizer's m, v and the parameter computed from them) are computed by one kernel that
// stores each, instead of one kernel per node that reads the others back. The kernel runs where
// its last member ran; it is only formed when no other kernel in between reads a member.
#include <algorithm>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "schedule/kernelize.h"

namespace kiln::schedule {
namespace {

// What u's own kernel computes: its reads of other realized nodes (whether each went through a
// movement op on the way) and whether it reduces.
struct Region {
  bool reduces = false;
  std::unordered_map<const UOp*, bool> reads;  // realized node -> read through a movement op
};

Region region_of(const UOp* u, const std::unordered_set<const UOp*>& realized) {
  Region r;
  std::vector<std::pair<const UOp*, bool>> stack{{u, false}};
  std::unordered_set<const UOp*> seen;
  while (!stack.empty()) {
    auto [x, moved] = stack.back();
    stack.pop_back();
    if (x != u && realized.count(x)) {
      r.reads[x] = r.reads[x] || moved;
      continue;
    }
    if (!seen.insert(x).second) continue;
    r.reduces |= x->op == Ops::REDUCE;
    // a GATHER reads its source at gathered addresses: not element for element
    for (size_t i = 0; i < x->src.size(); i++)
      stack.push_back({x->src[i].get(), moved || group::Movement.has(x->op) || (x->op == Ops::GATHER && i == 0)});
  }
  return r;
}

}  // namespace

std::vector<std::vector<const UOp*>> kernel_groups(const Plan& plan) {
  const auto& order = plan.realized;
  std::unordered_set<const UOp*> realized(order.begin(), order.end());
  std::unordered_map<const UOp*, size_t> pos;
  std::vector<Region> regions;
  for (size_t i = 0; i < order.size(); i++) {
    pos[order[i]] = i;
    regions.push_back(region_of(order[i], realized));
  }
  // union-find over positions: B joins every same-shaped, reduction-free node it reads as is
  std::vector<size_t> parent(order.size());
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  // CONTIGUOUS asks for a kernel boundary: its node keeps a kernel of its own; a COPY is no kernel
  auto groupable = [&](size_t i) {
    return !regions[i].reduces && order[i]->op != Ops::CONTIGUOUS && order[i]->op != Ops::COPY &&
           prod(order[i]->shape_or_throw()) != 0;
  };
  for (size_t b = 0; b < order.size(); b++) {
    if (!groupable(b)) continue;
    for (auto [a_node, moved] : regions[b].reads) {
      size_t a = pos.at(a_node);
      if (!moved && groupable(a) && a_node->shape_or_throw() == order[b]->shape_or_throw())
        parent[find(a)] = find(b);
    }
  }
  std::unordered_map<size_t, std::vector<size_t>> members;
  for (size_t i = 0; i < order.size(); i++) members[find(i)].push_back(i);
  // a group is kept only if no kernel between its first and last member reads a member
  std::vector<size_t> group_of(order.size());
  std::iota(group_of.begin(), group_of.end(), 0);
  for (auto& [root, m] : members) {
    if (m.size() < 2) continue;
    std::unordered_set<const UOp*> in_group;
    for (size_t i : m) in_group.insert(order[i]);
    bool safe = true;
    for (size_t x = m.front() + 1; x < m.back() && safe; x++)
      if (!in_group.count(order[x]))
        for (const auto& [read, moved] : regions[x].reads) safe &= !in_group.count(read);
    if (safe)
      for (size_t i : m) group_of[i] = m.back();
  }
  std::vector<std::vector<const UOp*>> groups;
  std::unordered_map<size_t, std::vector<const UOp*>> pending;
  for (size_t i = 0; i < order.size(); i++) {
    pending[group_of[i]].push_back(order[i]);
    if (group_of[i] == i) groups.push_back(std::move(pending[i]));
  }
  return groups;
}

}  // namespace kiln::schedule
