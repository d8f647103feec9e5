#include "engine/dispatch_cache.h"

#include <algorithm>
#include <atomic>
#include <mutex>

#include "engine/buffers.h"
#include "engine/graph_walk.h"
#include "engine/realize.h"
#include "kiln/ir/pattern_matcher.h"
#include "runtime/device.h"
#include "support/env.h"
#include "support/profile.h"
#include "uop/rewrite_trace.h"

namespace kiln::engine {

// What a plan keeps of the graph it was recorded from, to tell a graph of the same structure: per
// node its op, dtype and arg (a BUFFER's with its input number in place of its id), and the edges.
// It holds no node of that graph, so the first realize's buffers are not kept alive.
struct GraphShape {
  struct Node {
    Ops op;
    DType dtype;
    uint32_t n_src;
    Arg arg;
  };
  std::vector<Node> nodes;
  std::vector<uint32_t> edges, roots;

  explicit GraphShape(const GraphWalk& w) : edges(w.edges), roots(w.roots) {
    nodes.reserve(w.nodes.size());
    for (const auto& [u, input] : w.nodes) {
      const auto n_src = static_cast<uint32_t>(u->src.size());
      if (input == GraphWalk::kNotInput) {
        nodes.push_back({u->op, u->dtype, n_src, u->arg});
      } else {
        const BufferArg& b = u->arg_as<BufferArg>();
        nodes.push_back({u->op, u->dtype, n_src, BufferArg{input, b.size, b.device}});
      }
    }
  }

  bool matches(const GraphWalk& w) const {
    if (nodes.size() != w.nodes.size() || edges != w.edges || roots != w.roots) return false;
    for (size_t i = 0; i < nodes.size(); i++) {
      const auto& [u, input] = w.nodes[i];
      const Node& n = nodes[i];
      if (u->op != n.op || u->dtype != n.dtype || u->src.size() != n.n_src) return false;
      if (input == GraphWalk::kNotInput) {
        if (u->arg != n.arg) return false;
      } else {
        const BufferArg &have = u->arg_as<BufferArg>(), &want = std::get<BufferArg>(n.arg);
        if (input != want.id || have.size != want.size || have.device != want.device) return false;
      }
    }
    return true;
  }
};

// A recorded realize. Slots number its buffers: the graph's inputs first, then the buffers its
// schedule makes (fresh for each realize).
struct DispatchPlan {
  struct NewBuffer {
    DType dtype;
    int64_t size;
    std::string device;
  };
  struct Launch {
    CompiledKernel* kernel;  // nullptr: a copy (slots: destination, source)
    runtime::Device* device;
    std::vector<uint32_t> slots;
  };
  // A realized node: its position in the walk and its view, over placeholder BUFFERs (id -1 - slot)
  // that stand for slots.
  struct Result {
    uint32_t node;
    bool is_root;
    UOpRef view;
    std::vector<std::pair<UOpRef, uint32_t>> stand_ins;  // placeholder, slot
  };

  GraphShape shape;
  std::string device;
  uint64_t generation;
  size_t n_inputs;
  std::vector<NewBuffer> made;  // slot n_inputs + i
  std::vector<Launch> launches;
  // The memory plan: per launch, the slots it is the last reader of and some launch writes. Those
  // not kept (no live tensor needs their realized node) are reused once it has run.
  std::vector<std::vector<uint32_t>> last_use;
  std::vector<Result> results;
};

namespace {

std::atomic<int64_t> hits{0};

// The plans, by structure hash; the least recently used goes when the cache is full.
class PlanCache {
 public:
  // Graphs kept: like the schedule cache, a training step, its evaluation and a few others.
  static constexpr size_t kMaxPlans = 64;

  // Whether the cache is on for the current settings (SCHEDULE_CACHE), read once per generation.
  bool enabled(uint64_t generation) {
    uint64_t read = enabled_in_.load(std::memory_order_acquire);
    if (read >> 1 != generation + 1) {
      read = (generation + 1) << 1 | (env::get_int("SCHEDULE_CACHE", 1) != 0);
      enabled_in_.store(read, std::memory_order_release);
    }
    return read & 1;
  }

  std::shared_ptr<const DispatchPlan> find(size_t hash) {
    std::lock_guard lock(mu_);
    auto it = plans_.find(hash);
    if (it == plans_.end()) return nullptr;
    it->second.last_used = ++tick_;
    return it->second.plan;
  }

  void insert(size_t hash, std::shared_ptr<const DispatchPlan> plan) {
    std::lock_guard lock(mu_);
    if (plans_.size() >= kMaxPlans && !plans_.count(hash)) {
      auto oldest = plans_.begin();
      for (auto it = plans_.begin(); it != plans_.end(); ++it)
        if (it->second.last_used < oldest->second.last_used) oldest = it;
      plans_.erase(oldest);
    }
    plans_[hash] = {std::move(plan), ++tick_};
  }

 private:
  struct Entry {
    std::shared_ptr<const DispatchPlan> plan;
    uint64_t last_used;
  };
  std::mutex mu_;
  std::unordered_map<size_t, Entry> plans_;
  uint64_t tick_ = 0;
  // (generation + 1) << 1 | SCHEDULE_CACHE != 0, as last read; 0: never. One word, so that every
  // realize checks it without a lock.
  std::atomic<uint64_t> enabled_in_{0};
};

PlanCache& plan_cache() {
  static PlanCache* c = new PlanCache();  // plans hold compiled kernels, which stay loaded until exit
  return *c;
}

// A slot's stand-in in a recorded view.
UOpRef placeholder(uint32_t slot, DType dtype, int64_t size, const std::string& device) {
  return UOp::make(Ops::BUFFER, dtype, {}, BufferArg{-1 - static_cast<int64_t>(slot), size, device});
}

}  // namespace

// What one dispatch fills; pooled between dispatches (Dispatch::ReturnScratch).
struct DispatchScratch {
  GraphWalk walk;
  std::vector<UOpRef> slots;  // on a hit: the inputs, then fresh buffers for what the plan makes
  std::unordered_map<const UOp*, UOpRef> becomes;
  std::vector<const UOp*> launch_buffers;  // run()'s, for one launch at a time
};

namespace {

// Scratch no dispatch uses, for the next ones. Not thread_local: a realize may run during static
// teardown, after the thread's objects are gone.
struct ScratchPool {
  std::mutex mu;
  std::vector<std::unique_ptr<DispatchScratch>> free;
};
ScratchPool& scratch_pool() {
  static ScratchPool* p = new ScratchPool();  // never destroyed, as above
  return *p;
}

}  // namespace

void Dispatch::ReturnScratch::operator()(DispatchScratch* s) const {
  // the buffers and views go now; a pooled scratch holds no node
  s->slots.clear();
  s->becomes.clear();
  s->launch_buffers.clear();
  ScratchPool& pool = scratch_pool();
  std::lock_guard lock(pool.mu);
  pool.free.emplace_back(s);
}

Dispatch::Dispatch(const std::vector<UOpRef>& roots, std::string device, uint64_t generation)
    : device_(std::move(device)), generation_(generation) {
  {
    ScratchPool& pool = scratch_pool();
    std::lock_guard lock(pool.mu);
    if (!pool.free.empty()) {
      scratch_.reset(pool.free.back().release());
      pool.free.pop_back();
    }
  }
  if (!scratch_) scratch_.reset(new DispatchScratch());
  scratch_->walk.read(roots);
}

std::optional<Dispatch> Dispatch::lookup(const std::vector<UOpRef>& roots) {
  if (env::debug_level() > 0 || trace::enabled() || profile::enabled() || capturing()) return std::nullopt;
  const uint64_t generation = env::generation();
  if (!plan_cache().enabled(generation)) return std::nullopt;
  Dispatch d(roots, default_device(), generation);
  const GraphWalk& walk = d.scratch_->walk;
  std::shared_ptr<const DispatchPlan> plan = plan_cache().find(walk.hash);
  if (plan && plan->generation == generation && plan->device == d.device_ && plan->shape.matches(walk))
    d.bind(std::move(plan));
  return d;
}

void Dispatch::bind(std::shared_ptr<const DispatchPlan> plan) {
  plan_ = std::move(plan);
  std::vector<UOpRef>& slots = scratch_->slots;
  slots.reserve(plan_->n_inputs + plan_->made.size());
  for (const UOp* input : scratch_->walk.inputs) slots.push_back(input->ref());
  for (const DispatchPlan::NewBuffer& b : plan_->made)
    slots.push_back(UOp::make(Ops::BUFFER, b.dtype, {}, BufferArg{schedule::next_buffer_id(), b.size, b.device}));
  for (const DispatchPlan::Result& r : plan_->results) {
    UOpRef view;
    if (r.view->op == Ops::BUFFER) {  // the common case: the node becomes its buffer
      view = slots[r.stand_ins[0].second];
    } else {
      std::unordered_map<const UOp*, UOpRef> bound;
      for (const auto& [stand_in, slot] : r.stand_ins) bound[stand_in.get()] = slots[slot];
      view = substitute(r.view, bound);
    }
    scratch_->becomes.emplace(scratch_->walk.nodes[r.node].uop, std::move(view));
  }
  hits++;
  engine_stats().schedules++;  // a hit is a schedule, as a schedule-cache hit is
}

const std::unordered_map<const UOp*, UOpRef>& Dispatch::becomes() const { return scratch_->becomes; }

bool Dispatch::realizes_beyond_roots() const {
  return std::any_of(plan_->results.begin(), plan_->results.end(), [](const auto& r) { return !r.is_root; });
}

void Dispatch::run(const std::unordered_set<const UOp*>& needed) const {
  const DispatchPlan& plan = *plan_;
  const std::vector<UOpRef>& slots = scratch_->slots;
  auto kept = [&](uint32_t slot) {
    for (const DispatchPlan::Result& r : plan.results)
      for (const auto& stand_in : r.stand_ins)
        if (stand_in.second == slot && (r.is_root || needed.count(scratch_->walk.nodes[r.node].uop))) return true;
    return false;
  };
  std::vector<const UOp*>& buffers = scratch_->launch_buffers;
  for (size_t c = 0; c < plan.launches.size(); c++) {
    const DispatchPlan::Launch& l = plan.launches[c];
    buffers.clear();
    for (uint32_t s : l.slots) buffers.push_back(slots[s].get());
    run_call(l.kernel, *l.device, buffers);
    for (uint32_t s : plan.last_use[c])
      if (!kept(s)) release_memory(*slots[s]);
  }
}

void Dispatch::record(const schedule::Schedule& s) const {
  const GraphWalk& walk = scratch_->walk;
  auto plan = std::make_shared<DispatchPlan>(
      DispatchPlan{GraphShape(walk), device_, generation_, walk.inputs.size(), {}, {}, {}, {}});
  std::unordered_map<const UOp*, uint32_t> slot_of;
  for (size_t i = 0; i < walk.inputs.size(); i++) slot_of[walk.inputs[i]] = static_cast<uint32_t>(i);
  // the schedule's own buffers become the made slots, in order of first use
  auto slot = [&](const UOp* b) {
    auto [it, fresh] = slot_of.try_emplace(b, static_cast<uint32_t>(slot_of.size()));
    if (fresh) plan->made.push_back({b->dtype, b->arg_as<BufferArg>().size, b->arg_as<BufferArg>().device});
    return it->second;
  };
  std::unordered_map<uint32_t, size_t> last_reader;
  std::unordered_set<uint32_t> written;
  for (const UOpRef& call : s.linear->src) {
    runtime::Device* dev = &runtime::get_device(call->src[1]->arg_as<BufferArg>().device);
    CompiledKernel* kernel = call->src[0]->op == Ops::COPY ? nullptr : &compiled_kernel(call->src[0], *dev);
    DispatchPlan::Launch launch{kernel, dev, {}};
    for (size_t i = 1; i < call->src.size(); i++) launch.slots.push_back(slot(call->src[i].get()));
    const KernelCall as_call{kernel, dev, {}};
    for (size_t i = 0; i < launch.slots.size(); i++) {
      last_reader[launch.slots[i]] = plan->launches.size();
      if (as_call.writes(i)) written.insert(launch.slots[i]);
    }
    plan->launches.push_back(std::move(launch));
  }
  plan->last_use.resize(plan->launches.size());
  for (uint32_t w : written) plan->last_use[last_reader[w]].push_back(w);
  // what each realized node becomes, over placeholders for the slots
  std::unordered_map<const UOp*, uint32_t> position;
  for (size_t i = 0; i < walk.nodes.size(); i++) position[walk.nodes[i].uop] = static_cast<uint32_t>(i);
  for (const auto& [node, view] : s.becomes) {
    auto at = position.find(node);
    if (at == position.end()) return;  // not a node of this graph: no plan
    const bool is_root = std::find(walk.roots.begin(), walk.roots.end(), at->second) != walk.roots.end();
    DispatchPlan::Result r{at->second, is_root, {}, {}};
    std::unordered_map<const UOp*, UOpRef> stand_ins;
    for (const UOp* u : view->toposort()) {
      if (u->op != Ops::BUFFER) continue;
      auto known = slot_of.find(u);
      if (known == slot_of.end()) return;  // a buffer no launch touches and no input: no plan
      const BufferArg& b = u->arg_as<BufferArg>();
      stand_ins[u] = placeholder(known->second, u->dtype, b.size, b.device);
      r.stand_ins.push_back({stand_ins[u], known->second});
    }
    r.view = substitute(view, stand_ins);
    plan->results.push_back(std::move(r));
  }
  plan_cache().insert(walk.hash, std::move(plan));
}

int64_t dispatch_cache_hits() { return hits.load(); }

}  // namespace kiln::engine
