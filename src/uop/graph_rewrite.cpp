#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "kiln/error.h"
#include "kiln/ir/pattern_matcher.h"
#include "uop/rewrite_trace.h"

namespace kiln {
namespace {

// Memo of what each visited node became. Keys are held alive by `keep` so pointers stay unique.
struct Memo {
  std::unordered_map<const UOp*, UOpRef> done;
  std::vector<UOpRef> keep;
  const UOpRef* find(const UOp* u) const {
    auto it = done.find(u);
    return it == done.end() ? nullptr : &it->second;
  }
  void put(const UOpRef& from, UOpRef to) {
    keep.push_back(from);
    done[from.get()] = std::move(to);
  }
};

// Guard against rule sets that never reach a fixed point.
constexpr int kMaxRewritesPerNode = 1000;

// Iterative post-order rewrite. Each node: rewrite its sources, rebuild it if they changed, then
// apply the rules; a rule's result is itself fully rewritten before it becomes the node's answer.
// In bottom-up mode the rules are applied to a node before its sources are visited. `memo` ends
// with the answer of every node visited.
UOpRef rewrite(Memo& memo, const UOpRef& root, const PatternMatcher& pm, RewriteOpts opts) {
  std::optional<trace::Recorder> rec;  // VIZ=1: every step of a named rewrite is recorded
  if (trace::enabled() && !opts.name.empty()) [[unlikely]] rec.emplace(opts.name, root);
  SourceLoc rule{};
  SourceLoc* fired = rec ? &rule : nullptr;
  struct Frame {
    UOpRef node;     // the node whose answer this frame computes
    UOpRef current;  // what it has been rewritten to so far
    int stage;       // 0: maybe bottom-up rewrite, 1: sources pushed, 2: waiting on a rewrite result
    int rewrites;
  };
  std::vector<Frame> stack{{root, root, 0, 0}};
  std::unordered_set<const UOp*> waiting;  // nodes whose rewrite result is being rewritten
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.stage == 0) {
      if (memo.find(f.node.get())) {
        stack.pop_back();
        continue;
      }
      if (opts.bottom_up) {
        if (UOpRef r = pm.rewrite(f.current, opts.ctx, fired)) {
          if (rec) rec->step(f.current, r, rule);
          if (++f.rewrites > kMaxRewritesPerNode) throw_error("graph_rewrite: no fixed point for ", op_name(r->op));
          f.current = r;
          continue;  // rewrite again until nothing matches, then descend
        }
      }
      f.stage = 1;
      std::vector<UOpRef> pending;
      for (const UOpRef& s : f.current->src) {
        // a source still waiting on its own rewrite: a rule rewrote a node into a graph containing it
        if (waiting.count(s.get())) throw_error("graph_rewrite: a rule rewrote ", op_name(s->op), " into a graph containing it");
        if (!memo.find(s.get())) pending.push_back(s);
      }
      for (auto it = pending.rbegin(); it != pending.rend(); ++it) stack.push_back({*it, *it, 0, 0});
      continue;
    }
    if (f.stage == 1) {
      std::vector<UOpRef> new_src;
      bool changed = false;
      for (const UOpRef& s : f.current->src) {
        const UOpRef* r = memo.find(s.get());
        new_src.push_back(r ? *r : s);
        changed |= new_src.back() != s;
      }
      UOpRef rebuilt = changed ? f.current->with_src(std::move(new_src)) : f.current;
      UOpRef r = opts.bottom_up && !changed ? UOpRef() : pm.rewrite(rebuilt, opts.ctx, fired);
      if (r && rec) rec->step(rebuilt, r, rule);
      if (!r) {
        memo.put(f.node, rebuilt);
        if (f.current != f.node) memo.put(f.current, rebuilt);
        stack.pop_back();
        continue;
      }
      if (++f.rewrites > kMaxRewritesPerNode) throw_error("graph_rewrite: no fixed point for ", op_name(r->op));
      // A result that is already being rewritten further down the stack means the rules cycle.
      if (waiting.count(r.get())) throw_error("graph_rewrite: rules rewrite ", op_name(r->op), " in a cycle");
      f.stage = 2;
      f.current = r;
      waiting.insert(f.node.get());
      if (!memo.find(r.get())) stack.push_back({r, r, 0, 0});
      continue;
    }
    // stage 2: the rewrite result has its answer now
    UOpRef answer = *memo.find(f.current.get());
    waiting.erase(f.node.get());
    memo.put(f.node, answer);
    stack.pop_back();
  }
  UOpRef result = *memo.find(root.get());
  if (rec) rec->finish(result);
  return result;
}

}  // namespace

UOpRef graph_rewrite(const UOpRef& root, const PatternMatcher& pm, RewriteOpts opts) {
  Memo memo;
  return rewrite(memo, root, pm, opts);
}

std::unordered_map<const UOp*, UOpRef> graph_rewrite_map(const UOpRef& root, const PatternMatcher& pm, RewriteOpts opts) {
  if (opts.bottom_up) throw_error("graph_rewrite_map: a bottom-up rewrite does not visit every node of the graph");
  Memo memo;
  rewrite(memo, root, pm, opts);
  std::unordered_map<const UOp*, UOpRef> out;
  for (const UOp* u : root->toposort()) out.emplace(u, *memo.find(u));
  return out;
}

UOpRef substitute(const UOpRef& root, const std::unordered_map<const UOp*, UOpRef>& map) {
  Memo memo;
  std::vector<std::pair<UOpRef, bool>> stack{{root, false}};
  while (!stack.empty()) {
    auto [node, expanded] = stack.back();
    if (memo.find(node.get())) {
      stack.pop_back();
      continue;
    }
    if (auto it = map.find(node.get()); it != map.end()) {
      memo.put(node, it->second);
      stack.pop_back();
      continue;
    }
    if (!expanded) {
      stack.back().second = true;
      for (const UOpRef& s : node->src)
        if (!memo.find(s.get())) stack.push_back({s, false});
      continue;
    }
    std::vector<UOpRef> new_src;
    bool changed = false;
    for (const UOpRef& s : node->src) {
      new_src.push_back(*memo.find(s.get()));
      changed |= new_src.back() != s;
    }
    memo.put(node, changed ? node->with_src(std::move(new_src)) : node);
    stack.pop_back();
  }
  return *memo.find(root.get());
}

}  // namespace kiln
