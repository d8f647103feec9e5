// Device assignment: which device each node of a tensor graph is computed on.
#include "schedule/devices.h"

#include <unordered_set>
#include <vector>

#include "kiln/error.h"

namespace kiln::schedule {
namespace {

// The device `u` itself pins, if any.
const std::string* own_device(const UOp* u) {
  if (u->op == Ops::BUFFER) return &u->arg_as<BufferArg>().device;
  if (u->op == Ops::COPY) return &u->arg_as<std::string>();
  return nullptr;
}

}  // namespace

std::string device_of(const UOp* u, const std::string& fallback) {
  // In a valid graph every buffer reached without crossing a COPY is on one device: the first found
  // answers, so this usually walks one chain of first sources.
  std::unordered_set<const UOp*> seen{u};
  std::vector<const UOp*> stack{u};
  while (!stack.empty()) {
    const UOp* x = stack.back();
    stack.pop_back();
    if (const std::string* d = own_device(x)) return *d;
    for (auto s = x->src.rbegin(); s != x->src.rend(); ++s)
      if (seen.insert(s->get()).second) stack.push_back(s->get());
  }
  return fallback;
}

std::unordered_map<const UOp*, std::string> assign_devices(const UOpRef& sink, const std::string& fallback) {
  std::vector<const UOp*> topo = sink->toposort();
  std::unordered_map<const UOp*, std::string> device;  // "" while unknown
  // sources first: a node lives where its inputs do
  for (const UOp* u : topo) {
    if (u->op == Ops::SINK) continue;
    if (const std::string* d = own_device(u)) {
      device[u] = *d;
      continue;
    }
    std::string& mine = device[u];
    for (const UOpRef& s : u->src) {
      const std::string& theirs = device.at(s.get());
      if (mine.empty()) mine = theirs;
      else if (!theirs.empty() && theirs != mine)
        throw_error(op_name(u->op), ": expected inputs on one device, got ", mine, " and ", theirs,
                    "; copy one to the other's device with .to() first");
    }
  }
  // consumers first: what reads no buffer runs where its reader does (a COPY's source where it is read
  // from, which is nowhere in particular: the fallback)
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const UOp* u = *it;
    if (u->op == Ops::SINK || u->op == Ops::COPY) continue;
    std::string& mine = device.at(u);
    if (mine.empty()) mine = fallback;
    for (const UOpRef& s : u->src)
      if (std::string& theirs = device.at(s.get()); theirs.empty()) theirs = mine;
  }
  for (auto& [u, d] : device)
    if (d.empty()) d = fallback;
  return device;
}

}  // namespace kiln::schedule
