#include "viz/step_graphs.h"

#include <string>
#include <unordered_map>

namespace kiln::viz {
namespace {

class Rebuilder {
 public:
  explicit Rebuilder(std::vector<trace::Node>& nodes) : nodes_(nodes) {
    for (size_t i = 0; i < nodes_.size(); i++) ids_.emplace(key(nodes_[i]), static_cast<int>(i));
  }

  void replace(int before, int after) { map_[before] = after; }

  // `root` with every replacement applied until none applies (a replacement's own nodes may have
  // been replaced later). Iterative: graphs can be deeper than the call stack.
  int apply(int root) {
    std::unordered_map<int, int> done;
    std::unordered_map<int, bool> on_stack;  // guards against cycles of replacements
    enum State { kNew, kSourcesDone, kWaiting };
    struct Frame {
      int node;
      State state;
      int waiting_on;  // kWaiting: the node whose answer is this one's
    };
    std::vector<Frame> stack{{root, kNew, -1}};
    auto answer = [&](int n) {
      auto d = done.find(n);
      return d == done.end() ? n : d->second;  // not done: on a cycle, keep it as it is
    };
    auto wait_for = [&](Frame& f, int other) {
      f.state = kWaiting;
      f.waiting_on = other;
      if (!done.count(other) && !on_stack[other]) stack.push_back({other, kNew, -1});
    };
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.state == kNew) {
        if (done.count(f.node)) {
          stack.pop_back();
          continue;
        }
        on_stack[f.node] = true;
        if (auto it = map_.find(f.node); it != map_.end()) {
          wait_for(f, it->second);
          continue;
        }
        f.state = kSourcesDone;
        const int node = f.node;  // pushing invalidates f
        for (int s : nodes_[node].src)
          if (!done.count(s) && !on_stack[s]) stack.push_back({s, kNew, -1});
        continue;
      }
      if (f.state == kSourcesDone) {
        trace::Node rebuilt = nodes_[f.node];
        bool changed = false;
        for (int& s : rebuilt.src) {
          int to = answer(s);
          changed |= to != s;
          s = to;
        }
        if (changed) {
          int id = intern(std::move(rebuilt));
          // graph_rewrite saw the node in this rebuilt form and may have replaced it
          if (map_.count(id)) {
            wait_for(f, id);
            continue;
          }
          done[f.node] = id;
        } else {
          done[f.node] = f.node;
        }
      } else {
        done[f.node] = answer(f.waiting_on);
      }
      on_stack[f.node] = false;
      stack.pop_back();
    }
    return done.at(root);
  }

 private:
  static std::string key(const trace::Node& n) {
    std::string k = std::to_string(static_cast<int>(n.op)) + '\x1f' + n.dtype + '\x1f' + n.arg;
    for (int s : n.src) k += '\x1f' + std::to_string(s);
    return k;
  }

  int intern(trace::Node n) {
    std::string k = key(n);
    if (auto it = ids_.find(k); it != ids_.end()) return it->second;
    int id = static_cast<int>(nodes_.size());
    ids_.emplace(std::move(k), id);
    nodes_.push_back(std::move(n));
    return id;
  }

  std::vector<trace::Node>& nodes_;
  std::unordered_map<std::string, int> ids_;
  std::unordered_map<int, int> map_;
};

}  // namespace

std::vector<int> step_roots(const trace::Trace& t, std::vector<trace::Node>& nodes) {
  Rebuilder r(nodes);
  std::vector<int> roots{t.root};
  for (const trace::Step& s : t.steps) {
    r.replace(s.before, s.after);
    roots.push_back(r.apply(t.root));
  }
  return roots;
}

}  // namespace kiln::viz
