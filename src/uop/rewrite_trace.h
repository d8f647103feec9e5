#pragma once
// VIZ recording. With VIZ=1, every named graph_rewrite leaves a trace: its input graph and each step
// (the node a rule replaced, the replacement, the rule's file:line), under the contexts the caller's
// thread has pushed ("schedule 3", "kernel r_16_16"). Passes that are not pattern rewrites (rangeify,
// opts, ...) record their input and output as one step. src/viz/ serves what is recorded here.
// Off (the default), each hook costs one predictable branch and allocates nothing.
#include <atomic>
#include <concepts>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kiln/ir/pattern_matcher.h"

namespace kiln::trace {

namespace detail {
extern std::atomic<int8_t> state;  // -1 not read yet, 0 off, 1 on
bool read_setting();               // reads VIZ once, sets `state`
}  // namespace detail

// Whether rewrites are recorded: VIZ >= 1, read once (set_enabled overrides it, for tests).
inline bool enabled() {
  int8_t s = detail::state.load(std::memory_order_relaxed);
  if (s == 0) [[likely]] return false;
  return s > 0 || detail::read_setting();
}
void set_enabled(bool on);

// A graph as plain data, so a trace outlives the UOps it shows. Node ids index Trace::nodes.
struct Node {
  Ops op;
  std::string dtype;
  std::string arg;    // empty when the node has none
  std::string shape;  // tensor-graph shape, empty for codegen nodes
  std::vector<int> src;
};
struct Step {
  int before, after;
  SourceLoc where;  // the rule (or the pass) that made the step
};
struct Trace {
  std::string name;     // "simplify", "rangeify", ...
  std::string context;  // the pushed contexts, outermost first, joined by " / "
  int depth = 0;        // > 0: ran inside a rule of another recorded rewrite
  std::vector<Node> nodes;
  int root = -1;  // the input graph
  std::vector<Step> steps;
  int result = -1;    // -1 when the rewrite threw
  std::string error;  // why it did not finish
};

// Names the traces recorded on this thread while it lives. Pass a function to build the name only
// when recording is on.
class Context {
 public:
  explicit Context(std::string_view name) {
    if (enabled()) [[unlikely]] push(std::string(name));
  }
  template <std::invocable F>
  explicit Context(F&& make_name) {
    if (enabled()) [[unlikely]] push(std::string(make_name()));
  }
  ~Context() {
    if (pushed_) pop();
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

 private:
  void push(std::string name);
  void pop();
  bool pushed_ = false;
};
// This thread's contexts, outermost first, joined by " / " (empty when none).
std::string current_context();

// One graph_rewrite's recording; graph_rewrite makes one only when enabled(). Stored when finished,
// or, if the rewrite throws, when destroyed (marked unfinished).
class Recorder {
 public:
  Recorder(std::string_view name, const UOpRef& root);
  ~Recorder();
  void step(const UOpRef& before, const UOpRef& after, SourceLoc where);
  void finish(const UOpRef& result);
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

 private:
  void store();
  std::string name_;
  std::string context_;
  int depth_;
  UOpRef root_, result_;
  // The steps' nodes stay alive until stored, so their addresses name them uniquely.
  std::vector<std::pair<UOpRef, UOpRef>> replaced_;
  std::vector<SourceLoc> where_;
  bool stored_ = false;
};

// Records a pass that is not a graph_rewrite as one step from `before` to `after`.
void record_pass_now(std::string_view name, const UOpRef& before, const UOpRef& after, SourceLoc where);
inline void record_pass(std::string_view name, const UOpRef& before, const UOpRef& after,
                        SourceLoc where = SourceLoc::current()) {
  if (enabled()) [[unlikely]] record_pass_now(name, before, after, where);
}

// Calls fn with every trace recorded so far, in order (under the store's lock: keep fn short).
void visit(const std::function<void(const std::vector<Trace>&)>& fn);
void clear();

}  // namespace kiln::trace
