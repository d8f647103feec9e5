// The schedule cache: a training loop builds the same graph every step over new buffers (the
// batch, the updated weights), and scheduling it again each time would cost tens of milliseconds.
// The graph with every input BUFFER replaced by a numbered placeholder is the key: nodes are
// hash-consed, so equal structures are the same node. A hit reuses the kernels and gives the
// schedule's own buffers fresh ids: only the CALLs and the `becomes` map are rebuilt.
#include <list>
#include <string>
#include <tuple>
#include <mutex>
#include <unordered_map>

#include "kiln/ir/pattern_matcher.h"
#include "schedule/schedule.h"
#include "support/env.h"

namespace kiln::schedule {
namespace {

// Graphs kept: a training step, its evaluation and a few others, without growing without bound
// when shapes vary.
constexpr size_t kMaxEntries = 64;

bool is_placeholder(const UOp* u) { return u->op == Ops::BUFFER && u->arg_as<BufferArg>().id < 0; }

class ScheduleCache {
 public:
  Schedule get(const std::vector<UOpRef>& roots, const std::string& device, const TargetOf& target_of) {
    // inputs -> placeholders, numbered in graph order
    std::unordered_map<const UOp*, UOpRef> to_placeholder, to_input;
    UOpRef sink = UOp::sink(roots);
    for (const UOp* u : sink->toposort())
      if (u->op == Ops::BUFFER && !to_placeholder.count(u)) {
        const auto& b = u->arg_as<BufferArg>();
        UOpRef p = UOp::make(Ops::BUFFER, u->dtype, {}, BufferArg{-1 - static_cast<int64_t>(to_placeholder.size()), b.size, b.device});
        to_placeholder[u] = p;
        to_input[p.get()] = u->ref();
      }
    UOpRef graph = substitute(sink, to_placeholder);
    // the settings that change what the scheduler builds are part of the key
    const Key key{graph.get(), env::get_int("SPLIT_REDUCEOP", 1) != 0, device};
    std::lock_guard lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      if (entries_.size() >= kMaxEntries) {
        entries_.erase(lru_.back());
        lru_.pop_back();
      }
      std::vector<UOpRef> normalized(graph->src.begin(), graph->src.end());
      it = entries_.emplace(key, Entry{graph, build_schedule(normalized, device, target_of)}).first;
      lru_.push_front(key);
    } else {
      hits++;
      lru_.remove(key);
      lru_.push_front(key);
    }
    return instantiate(it->second.schedule, to_input);
  }

  int64_t hits = 0;

 private:
  using Key = std::tuple<const UOp*, bool, std::string>;
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return (std::hash<const UOp*>()(std::get<0>(k)) * 2 + std::get<1>(k)) ^ std::hash<std::string>()(std::get<2>(k));
    }
  };
  struct Entry {
    UOpRef graph;  // keeps the key's node alive
    Schedule schedule;
  };

  // The cached schedule over the real inputs, with fresh buffers for everything it computes.
  static Schedule instantiate(const Schedule& cached, std::unordered_map<const UOp*, UOpRef> buffers) {
    auto buffer = [&](const UOpRef& b) -> const UOpRef& {
      auto [it, fresh] = buffers.try_emplace(b.get());
      if (fresh) {
        const auto& arg = b->arg_as<BufferArg>();
        it->second = UOp::make(Ops::BUFFER, b->dtype, {}, BufferArg{next_buffer_id(), arg.size, arg.device});
      }
      return it->second;
    };
    Schedule out;
    std::vector<UOpRef> calls;
    for (const UOpRef& call : cached.linear->src) {
      std::vector<UOpRef> src{call->src[0]};
      for (size_t i = 1; i < call->src.size(); i++) src.push_back(buffer(call->src[i]));
      calls.push_back(call->with_src(std::move(src)));
    }
    out.linear = UOp::make(Ops::LINEAR, dtypes::void_, std::move(calls));
    // the realized nodes and their views, over the real inputs and the fresh buffers
    std::vector<UOpRef> nodes, views;
    for (const auto& [node, view] : cached.becomes) {
      nodes.push_back(node->ref());
      views.push_back(view);
    }
    std::unordered_map<const UOp*, UOpRef> inputs;
    for (const auto& [from, to] : buffers)
      if (is_placeholder(from)) inputs[from] = to;
    UOpRef real_nodes = substitute(UOp::sink(nodes), inputs);
    for (size_t i = 0; i < views.size(); i++) {
      std::unordered_map<const UOp*, UOpRef> view_buffers;
      for (const UOp* u : views[i]->toposort())
        if (u->op == Ops::BUFFER) view_buffers[u] = buffer(u->ref());
      const UOpRef& node = real_nodes->src[i];
      out.becomes[node.get()] = substitute(views[i], view_buffers);
      out.keep_alive.push_back(node);
    }
    return out;
  }

  std::mutex mu_;
  std::unordered_map<Key, Entry, KeyHash> entries_;
  std::list<Key> lru_;  // most recently used first
};

ScheduleCache& cache() {
  static ScheduleCache* c = new ScheduleCache();  // schedules stay valid until exit
  return *c;
}

}  // namespace

Schedule create_schedule(const std::vector<UOpRef>& roots, const std::string& device, const TargetOf& target_of) {
  if (env::get_int("SCHEDULE_CACHE", 1) == 0) return build_schedule(roots, device, target_of);
  return cache().get(roots, device, target_of);
}

int64_t schedule_cache_hits() { return cache().hits; }

}  // namespace kiln::schedule
