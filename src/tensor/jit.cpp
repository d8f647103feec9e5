// TinyJit's capture and replay. A capture is the list of kernel launches (and copies between
// devices, replayed as copies) of one call; each buffer those launches touch gets a source that
// says where its replay value comes from:
//   input     — the buffer of the call's k-th tensor argument,
//   state     — a tensor that was realized before the call (a weight): its buffer at replay time,
//   produced  — written by a captured kernel: a fresh buffer at each replay,
//   constant  — anything else (data made inside the function, results of input-independent kernels).
// After the call, live tensors that hold produced buffers (weights after assign, optimizer state)
// are bound to them, and a replay points them at the new ones.
#include "kiln/jit.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "engine/buffers.h"
#include "engine/realize.h"
#include "kiln/error.h"
#include "kiln/ir/pattern_matcher.h"
#include "schedule/schedule.h"
#include "support/env.h"
#include "tensor/tensor_impl.h"

namespace kiln::jit {
namespace {

// The BUFFER under a realized tensor's view (RESHAPEs over a BUFFER), or null when it is lazy.
const UOp* base_buffer(const UOp* u) {
  if (!schedule::is_buffer_view(u)) return nullptr;
  UOpRef view = schedule::strip_contiguous(u->ref());
  const UOp* b = view.get();
  while (b->op != Ops::BUFFER) b = b->src[0].get();
  return b;
}

std::string describe(const Tensor& t) { return shape_to_string(t.shape()) + " " + t.dtype().name() + " on " + t.device(); }

}  // namespace

struct Core::Plan {
  enum class Kind { Input, State, Produced, Constant };
  struct Source {
    Kind kind;
    // A constant's buffer; for the others a placeholder BUFFER (negative id, never allocated) of
    // the same dtype and size, so the plan holds no memory of the captured call.
    UOpRef buffer;
    size_t input = 0;                  // Input: which argument
    std::weak_ptr<TensorImpl> tensor;  // State: whose buffer
  };
  struct InputSpec {
    Shape shape;
    DType dtype;
    std::string device;
  };
  struct Call {
    engine::CompiledKernel* kernel;  // null for a copy
    runtime::Device* device;
    std::vector<size_t> sources;  // per PARAM
  };
  struct Binding {
    std::weak_ptr<TensorImpl> tensor;
    UOpRef view;  // over captured buffers
  };

  // capture state
  std::vector<Tensor> inputs;
  std::unordered_map<const UOp*, std::weak_ptr<TensorImpl>> state;  // realized before the call
  std::vector<UOpRef> state_buffers;                                // keeps the keys alive
  std::vector<engine::KernelCall> launched;

  // the replay
  std::vector<Source> sources;
  std::vector<Call> calls;
  std::vector<UOpRef> outputs;  // views over captured buffers
  std::vector<Binding> bindings;
  std::unordered_set<size_t> escaping;  // produced sources that outputs or bindings hold
  std::vector<InputSpec> specs;

  void build(const std::vector<Tensor>& results);
};

void Core::Plan::build(const std::vector<Tensor>& results) {
  std::unordered_map<const UOp*, size_t> source_of;
  std::unordered_map<const UOp*, size_t> input_of;
  for (size_t i = 0; i < inputs.size(); i++) input_of.emplace(base_buffer(inputs[i].uop().get()), i);
  std::unordered_map<const UOp*, UOpRef> to_placeholder;
  auto placeholder = [&](const UOpRef& b) {
    const auto& arg = b->arg_as<BufferArg>();
    UOpRef p = UOp::make(Ops::BUFFER, b->dtype, {}, BufferArg{-1 - static_cast<int64_t>(sources.size()), arg.size, arg.device});
    to_placeholder[b.get()] = p;
    return p;
  };
  auto external = [&](const UOpRef& b) {
    Source s{Kind::Constant, b, 0, {}};
    if (auto it = input_of.find(b.get()); it != input_of.end()) s = {Kind::Input, placeholder(b), it->second, {}};
    else if (auto st = state.find(b.get()); st != state.end()) s = {Kind::State, placeholder(b), 0, st->second};
    sources.push_back(s);
    return sources.size() - 1;
  };
  // Which launches depend on an input or on state: the others ran once and are dropped, their
  // outputs kept as constants.
  std::vector<bool> produced_here;
  for (const engine::KernelCall& k : launched) {
    Call call{k.kernel, k.device, {}};
    bool dependent = false;
    for (size_t p = 0; p < k.buffers.size(); p++) {
      const bool writes = k.writes(p);
      if (writes) continue;
      auto it = source_of.find(k.buffers[p].get());
      size_t s = it != source_of.end() ? it->second : source_of[k.buffers[p].get()] = external(k.buffers[p]);
      dependent |= sources[s].kind == Kind::Input || sources[s].kind == Kind::State || sources[s].kind == Kind::Produced;
    }
    for (size_t p = 0; p < k.buffers.size(); p++) {
      const bool writes = k.writes(p);
      if (!writes) {
        call.sources.push_back(source_of.at(k.buffers[p].get()));
        continue;
      }
      sources.push_back({dependent ? Kind::Produced : Kind::Constant, dependent ? placeholder(k.buffers[p]) : k.buffers[p], 0, {}});
      source_of[k.buffers[p].get()] = sources.size() - 1;
      call.sources.push_back(sources.size() - 1);
    }
    if (dependent) calls.push_back(std::move(call));
  }
  auto note_escaping = [&](const UOpRef& view) {
    for (const UOp* u : view->toposort())
      if (auto it = source_of.find(u); it != source_of.end() && sources[it->second].kind == Kind::Produced)
        escaping.insert(it->second);
  };
  std::unordered_set<const TensorImpl*> returned;
  for (const Tensor& r : results) {
    if (!base_buffer(r.uop().get())) throw_error("TinyJit: result ", outputs.size(), " was not realized");
    note_escaping(r.uop());
    outputs.push_back(substitute(r.uop(), to_placeholder));
    returned.insert(TensorRegistry::impl_of(r).get());
  }
  for (const auto& t : TensorRegistry::get().live()) {
    if (returned.count(t.get())) continue;
    UOpRef u = t->uop();
    const UOp* b = base_buffer(u.get());
    if (!b) continue;
    auto it = source_of.find(b);
    if (it == source_of.end() || sources[it->second].kind != Kind::Produced) continue;
    note_escaping(u);
    bindings.push_back({t, substitute(u, to_placeholder)});
  }
  for (const Tensor& t : inputs) specs.push_back({t.shape(), t.dtype(), t.device()});
  inputs.clear();
  launched.clear();
  state.clear();
  state_buffers.clear();
}

Core::Core() = default;
Core::~Core() { abort_capture(); }
Core::Core(Core&&) noexcept = default;
Core& Core::operator=(Core&&) noexcept = default;

bool Core::enabled() { return env::get_int("JIT", 1) != 0; }

size_t Core::kernels() const {
  if (!plan_) return 0;
  return std::count_if(plan_->calls.begin(), plan_->calls.end(), [](const Plan::Call& c) { return c.kernel != nullptr; });
}

void Core::begin_capture(const std::vector<Tensor>& inputs) {
  capture_lock_ = std::make_unique<std::unique_lock<std::recursive_mutex>>(realize_mutex());
  plan_ = std::make_unique<Plan>();
  plan_->inputs = inputs;
  for (const auto& t : TensorRegistry::get().live()) {
    UOpRef u = t->uop();
    if (const UOp* b = base_buffer(u.get())) {
      plan_->state.emplace(b, t);
      plan_->state_buffers.push_back(b->ref());
    }
  }
  engine::set_capture(&plan_->launched);
}

void Core::end_capture(const std::vector<Tensor>& outputs) {
  engine::set_capture(nullptr);
  try {
    plan_->build(outputs);
  } catch (...) {
    abort_capture();
    throw;
  }
  capture_lock_.reset();
}

void Core::abort_capture() {
  if (!capture_lock_) return;
  engine::set_capture(nullptr);
  plan_.reset();
  capture_lock_.reset();
  calls_ = 1;  // the next call captures again
}

std::vector<Tensor> Core::replay(const std::vector<Tensor>& inputs) {
  if (!plan_) throw_error("TinyJit: nothing was captured (the capturing call failed)");
  Plan& p = *plan_;
  if (inputs.size() != p.specs.size())
    throw_error("TinyJit: expected ", p.specs.size(), " tensor arguments as when captured, got ", inputs.size());
  for (size_t i = 0; i < inputs.size(); i++) {
    const Plan::InputSpec& want = p.specs[i];
    if (inputs[i].shape() != want.shape || inputs[i].dtype() != want.dtype || inputs[i].device() != want.device)
      throw_error("TinyJit: argument ", i, " is ", describe(inputs[i]), ", but the captured call had ",
                  shape_to_string(want.shape), " ", want.dtype.name(), " on ", want.device);
  }
  std::lock_guard lock(realize_mutex());
  // each source's buffer for this replay
  std::vector<UOpRef> buffers(p.sources.size());
  std::unordered_map<const UOp*, UOpRef> replace;
  for (size_t s = 0; s < p.sources.size(); s++) {
    const Plan::Source& src = p.sources[s];
    const auto& arg = src.buffer->arg_as<BufferArg>();
    switch (src.kind) {
      case Plan::Kind::Input: buffers[s] = base_buffer(inputs[src.input].uop().get())->ref(); break;
      case Plan::Kind::State: {
        std::shared_ptr<TensorImpl> t = src.tensor.lock();
        if (!t)
          throw_error("TinyJit: a tensor the captured kernels read (", src.buffer->dtype.name(), ", ", arg.size,
                      " elements) no longer exists");
        if (!base_buffer(t->uop().get())) Tensor(t->uop()).realize();  // assigned lazily since the last call
        const UOp* b = base_buffer(t->uop().get());
        if (!b || b->dtype != src.buffer->dtype || b->arg_as<BufferArg>().size != arg.size)
          throw_error("TinyJit: a tensor the captured kernels read changed its size or dtype (was ",
                      src.buffer->dtype.name(), ", ", arg.size, " elements)");
        buffers[s] = b->ref();
        break;
      }
      case Plan::Kind::Produced: buffers[s] = engine::new_buffer(src.buffer->dtype, arg.size, arg.device); break;
      case Plan::Kind::Constant: buffers[s] = src.buffer; break;
    }
    replace[src.buffer.get()] = buffers[s];
  }
  std::vector<engine::KernelCall> calls;
  calls.reserve(p.calls.size());
  for (const Plan::Call& c : p.calls) {
    std::vector<UOpRef> bufs;
    for (size_t s : c.sources) bufs.push_back(buffers[s]);
    calls.push_back({c.kernel, c.device, std::move(bufs)});
  }
  std::unordered_set<const UOp*> keep;
  for (size_t s : p.escaping) keep.insert(buffers[s].get());
  engine::run_calls(calls, keep);
  for (const Plan::Binding& b : p.bindings)
    if (std::shared_ptr<TensorImpl> t = b.tensor.lock()) t->set_uop(substitute(b.view, replace));
  std::vector<Tensor> out;
  for (const UOpRef& view : p.outputs) out.emplace_back(substitute(view, replace));
  return out;
}

}  // namespace kiln::jit
