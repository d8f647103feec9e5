#include "uop/rewrite_trace.h"

#include <mutex>

#include "support/env.h"

namespace kiln::trace {

std::atomic<int8_t> detail::state{-1};

bool detail::read_setting() {
  int8_t on = env::get_int("VIZ", 0) >= 1 ? 1 : 0;
  int8_t unread = -1;
  state.compare_exchange_strong(unread, on);  // set_enabled may have won the race
  return state.load() > 0;
}

void set_enabled(bool on) { detail::state.store(on ? 1 : 0); }

namespace {

struct Store {
  std::mutex mu;
  std::vector<Trace> traces;
};
Store& trace_store() {
  static Store* s = new Store();  // never destroyed: the VIZ server reads it while the process exits
  return *s;
}

thread_local std::vector<std::string> t_contexts;
thread_local int t_depth = 0;  // recorders alive on this thread

// Turns the UOps reachable from the given roots into plain nodes, sources before users.
class Snapshot {
 public:
  explicit Snapshot(std::vector<Node>& nodes) : nodes_(nodes) {}

  int add(const UOpRef& root) {
    if (auto it = ids_.find(root.get()); it != ids_.end()) return it->second;
    std::vector<std::pair<const UOp*, bool>> stack{{root.get(), false}};
    while (!stack.empty()) {
      auto [u, expanded] = stack.back();
      if (ids_.count(u)) {
        stack.pop_back();
        continue;
      }
      if (!expanded) {
        stack.back().second = true;
        for (const UOpRef& s : u->src)
          if (!ids_.count(s.get())) stack.push_back({s.get(), false});
        continue;
      }
      stack.pop_back();
      Node n{u->op, u->dtype.name(), "", "", {}};
      if (!std::holds_alternative<std::monostate>(u->arg)) n.arg = arg_to_string(u->arg);
      if (u->shape() && u->op != Ops::CONST) n.shape = shape_to_string(*u->shape());
      for (const UOpRef& s : u->src) n.src.push_back(ids_.at(s.get()));
      ids_[u] = static_cast<int>(nodes_.size());
      nodes_.push_back(std::move(n));
    }
    return ids_.at(root.get());
  }

 private:
  std::vector<Node>& nodes_;
  std::unordered_map<const UOp*, int> ids_;
};

}  // namespace

void Context::push(std::string name) {
  t_contexts.push_back(std::move(name));
  pushed_ = true;
}

void Context::pop() { t_contexts.pop_back(); }

std::string current_context() {
  std::string out;
  for (const std::string& c : t_contexts) out += (out.empty() ? "" : " / ") + c;
  return out;
}

Recorder::Recorder(std::string_view name, const UOpRef& root)
    : name_(name), context_(current_context()), depth_(t_depth++), root_(root) {}

Recorder::~Recorder() {
  t_depth--;
  if (!stored_) store();  // the rewrite threw: keep what it did until then
}

void Recorder::step(const UOpRef& before, const UOpRef& after, SourceLoc where) {
  replaced_.emplace_back(before, after);
  where_.push_back(where);
}

void Recorder::finish(const UOpRef& result) {
  result_ = result;
  store();
}

void Recorder::store() {
  stored_ = true;
  Trace t{name_, context_, depth_, {}, -1, {}, -1, ""};
  Snapshot snap(t.nodes);
  t.root = snap.add(root_);
  for (size_t i = 0; i < replaced_.size(); i++)
    t.steps.push_back({snap.add(replaced_[i].first), snap.add(replaced_[i].second), where_[i]});
  if (result_) t.result = snap.add(result_);
  else t.error = "the rewrite threw an exception after " + std::to_string(t.steps.size()) + " steps";
  std::lock_guard lock(trace_store().mu);
  trace_store().traces.push_back(std::move(t));
}

void record_pass_now(std::string_view name, const UOpRef& before, const UOpRef& after, SourceLoc where) {
  Recorder r(name, before);
  if (after != before) r.step(before, after, where);
  r.finish(after);
}

void visit(const std::function<void(const std::vector<Trace>&)>& fn) {
  std::lock_guard lock(trace_store().mu);
  fn(trace_store().traces);
}

void clear() {
  std::lock_guard lock(trace_store().mu);
  trace_store().traces.clear();
}

}  // namespace kiln::trace
