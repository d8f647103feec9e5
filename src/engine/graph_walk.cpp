#include "engine/graph_walk.h"

#include <functional>
#include <string>

namespace kiln::engine {
namespace {

size_t combine(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

}  // namespace

void GraphWalk::read(const std::vector<UOpRef>& root_refs) {
  nodes.clear();
  edges.clear();
  roots.clear();
  inputs.clear();
  hash = 0;
  seen_.clear();
  stack_.clear();
  for (const UOpRef& root : root_refs) {
    if (seen_.find(root.get()) == PositionTable::kMissing) stack_.push_back({root.get(), 0});
    while (!stack_.empty()) {
      auto& [u, next] = stack_.back();
      if (next < u->src.size()) {
        const UOp* s = u->src[next++].get();
        if (seen_.find(s) == PositionTable::kMissing) stack_.push_back({s, 0});
        continue;
      }
      // every source has its position now: u takes the next one
      const UOp* node = u;
      stack_.pop_back();
      seen_.insert(node, static_cast<uint32_t>(nodes.size()));
      size_t h = combine(static_cast<size_t>(node->op), static_cast<size_t>(node->dtype.scalar) << 16 |
                                                            size_t{node->dtype.count} << 1 | node->dtype.ptr);
      for (const UOpRef& s : node->src) {
        edges.push_back(seen_.find(s.get()));
        h = combine(h, edges.back());
      }
      if (node->op == Ops::BUFFER) {
        const BufferArg& b = node->arg_as<BufferArg>();
        const auto input = static_cast<uint32_t>(inputs.size());
        nodes.push_back({node, input});
        inputs.push_back(node);
        h = combine(combine(combine(h, input), static_cast<size_t>(b.size)), std::hash<std::string>()(b.device));
      } else {
        nodes.push_back({node, kNotInput});
        h = combine(h, hash_arg(node->arg));
      }
      hash = combine(hash, h);
    }
    roots.push_back(seen_.find(root.get()));
  }
  hash = combine(hash, roots.size());
  for (uint32_t r : roots) hash = combine(hash, r);
}

}  // namespace kiln::engine
