// The autograd face of Tensor: which tensors want gradients, backward() and gradient(), the
// in-place assignment optimizers use, and copies between devices. The rules themselves are in gradient.cpp.
// Realizing swaps a tensor's graph for its buffer; a tensor a gradient can flow through keeps the
// graph as its origin, so a backward() after reading intermediates (or the loss) still finds the path.
#include <mutex>
#include <unordered_set>

#include "engine/buffers.h"
#include "kiln/error.h"
#include "kiln/ir/pattern_matcher.h"
#include "tensor/gradient.h"
#include "tensor/tensor_impl.h"

namespace kiln {

bool Tensor::training = false;
bool Tensor::no_grad = false;

namespace {

// The nodes a gradient can flow back into from `root` (DETACH cuts the graph).
std::unordered_set<const UOp*> differentiable_nodes(const UOp* root) {
  std::unordered_set<const UOp*> seen{root};
  std::vector<const UOp*> stack{root};
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    if (u->op == Ops::DETACH) continue;
    for (const UOpRef& s : u->src)
      if (seen.insert(s.get()).second) stack.push_back(s.get());
  }
  return seen;
}

// Whether a gradient can flow from `root` into one of `targets`. Nodes of a walk that found none
// join `dead_ends`, which later walks skip.
bool reaches(const UOp* root, const std::unordered_set<const UOp*>& targets,
             std::unordered_set<const UOp*>& dead_ends) {
  std::unordered_set<const UOp*> seen{root};
  std::vector<const UOp*> stack{root};
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    if (targets.count(u)) return true;
    if (u->op == Ops::DETACH || dead_ends.count(u)) continue;
    for (const UOpRef& s : u->src)
      if (seen.insert(s.get()).second) stack.push_back(s.get());
  }
  dead_ends.merge(seen);
  return false;
}

// `root` with each realized tensor's node replaced by the graph it was computed from (origins refer
// to older realized nodes in turn, never to newer ones).
UOpRef through_origins(UOpRef root) {
  std::unordered_map<const UOp*, UOpRef> origin_of;
  for (const auto& t : TensorRegistry::get().tracked_for_gradients())
    if (t->origin && t->origin->realized.get() == t->uop().get())  // not assigned anew since
      origin_of.emplace(t->origin->realized.get(), t->origin->graph);
  if (origin_of.empty()) return root;
  for (UOpRef next = substitute(root, origin_of); next.get() != root.get(); next = substitute(root, origin_of))
    root = next;
  return root;
}

// Live tensors that asked for a gradient and that `root` (through origins) depends on; with
// `every_live`, every live float tensor it depends on that was not said to need none (tinygrad's rule).
std::vector<std::shared_ptr<TensorImpl>> tensors_needing_grad(const UOp* root, bool every_live = false) {
  std::unordered_set<const UOp*> nodes = differentiable_nodes(root);
  std::vector<std::shared_ptr<TensorImpl>> out;
  auto& registry = TensorRegistry::get();
  for (auto& t : every_live ? registry.live() : registry.tracked_for_gradients()) {
    const bool wanted = every_live ? t->dtype.is_float() && t->grad_enabled && !t->never_needs_grad : t->requires_grad;
    if (wanted && nodes.count(t->uop().get())) out.push_back(std::move(t));
  }
  return out;
}

void check_scalar_root(const Tensor& t, const char* what) {
  if (t.numel() != 1)
    throw_error(what, ": expected a tensor with one element (a loss), got shape ", shape_to_string(t.shape()),
                "; pass the gradient explicitly or reduce it first");
  if (!t.dtype().is_float()) throw_error(what, ": expected a float tensor, got ", t.dtype().name());
}

// d self / d each tensor backward() fills, added to its grad.
void accumulate_gradients(const Tensor& self, std::optional<Tensor> gradient, bool every_live) {
  if (!TensorRegistry::impl_of(self)->grad_enabled) throw_error("backward: this tensor was made under Tensor::no_grad");
  if (!gradient) {
    check_scalar_root(self, "backward");
    gradient = self.ones_like();
  } else if (gradient->shape() != self.shape()) {
    throw_error("backward: the gradient's shape ", shape_to_string(gradient->shape()), " differs from the tensor's ",
                shape_to_string(self.shape()));
  }
  std::lock_guard lock(realize_mutex());
  const Tensor root(through_origins(self.uop()));
  auto targets = tensors_needing_grad(root.uop().get(), every_live);
  if (targets.empty()) return;  // nothing to do (PyTorch's leaves without grad)
  std::vector<const UOp*> nodes;
  for (const auto& t : targets) nodes.push_back(t->uop().get());
  auto grads = autograd::compute_gradient(root, gradient->cast(self.dtype()), nodes);
  for (const auto& t : targets) {
    auto g = grads.find(t->uop().get());
    if (g == grads.end()) continue;  // reached only through integer ops
    // a gradient is data, as PyTorch's .grad: no graph back into the step that made it (an
    // optimizer state built from it would otherwise keep that step's graph)
    Tensor add = g->second.cast(t->dtype).detach();
    t->grad = t->grad ? *t->grad + add : add;
    // A leaf that got a gradient is one from now on: realizes keep the paths to it, so a later
    // backward through tensors read meanwhile reaches it again.
    if (every_live && !t->requires_grad && settled(t->uop().get())) {
      t->requires_grad = true;
      TensorRegistry::get().track_for_gradients(t);
    }
  }
}

}  // namespace

void keep_gradient_paths(const GraphChanges& changes) {
  std::vector<std::shared_ptr<TensorImpl>> tracked = TensorRegistry::get().tracked_for_gradients();
  if (tracked.empty()) return;
  std::unordered_set<const UOp*> targets, dead_ends;
  std::unordered_map<const UOp*, UOpRef> leaf_moves;  // leaves realized by this same realize
  for (const auto& t : tracked) targets.insert(t->uop().get());
  for (const auto& [t, u] : changes)
    if (t->requires_grad) leaf_moves.emplace(t->uop().get(), u);
  for (const auto& [t, u] : changes) {
    UOpRef old = t->uop();
    if (t->requires_grad || !t->grad_enabled || !t->dtype.is_float() || old.get() == u.get()) continue;
    if (t->origin && t->origin->realized.get() == old.get()) {  // realized further: same origin
      t->origin->realized = u;
      continue;
    }
    if (!reaches(old.get(), targets, dead_ends)) continue;
    const bool tracked_already = t->origin.has_value();
    t->origin = TensorImpl::Origin{u, leaf_moves.empty() ? old : substitute(old, leaf_moves)};
    if (!tracked_already) TensorRegistry::get().track_for_gradients(t);
  }
}

Tensor& Tensor::requires_grad_(bool on) {
  if (on && !dtype().is_float())
    throw_error("requires_grad_: only float tensors can require gradients, this one is ", dtype().name());
  std::lock_guard lock(realize_mutex());
  if (on && !impl_->requires_grad && !impl_->origin) TensorRegistry::get().track_for_gradients(impl_);
  impl_->requires_grad = on;
  return *this;
}

bool Tensor::requires_grad() const {
  if (impl_->requires_grad) return true;
  if (!impl_->grad_enabled || !dtype().is_float()) return false;
  std::lock_guard lock(realize_mutex());
  return !tensors_needing_grad(through_origins(uop()).get()).empty();
}

std::optional<Tensor> Tensor::grad() const { return impl_->grad; }

Tensor& Tensor::set_grad(std::optional<Tensor> g) {
  if (g && (g->shape() != shape()))
    throw_error("set_grad: the gradient's shape ", shape_to_string(g->shape()), " differs from the tensor's ",
                shape_to_string(shape()));
  impl_->grad = std::move(g);
  return *this;
}

Tensor& Tensor::backward(std::optional<Tensor> gradient) {
  accumulate_gradients(*this, std::move(gradient), false);
  return *this;
}

void backward_live(const Tensor& root, std::optional<Tensor> gradient) {
  accumulate_gradients(root, std::move(gradient), true);
}

std::vector<Tensor> Tensor::gradient(const std::vector<Tensor>& targets) const {
  check_scalar_root(*this, "gradient");
  std::lock_guard lock(realize_mutex());
  std::vector<UOpRef> target_graphs;  // realized targets stand for their origins, as in the root
  std::vector<const UOp*> nodes;
  for (const Tensor& t : targets) {
    if (!t.dtype().is_float()) throw_error("gradient: target of dtype ", t.dtype().name(), " carries no gradient");
    target_graphs.push_back(through_origins(t.uop()));
    nodes.push_back(target_graphs.back().get());
  }
  auto grads = autograd::compute_gradient(Tensor(through_origins(uop())), ones_like(), nodes);
  std::vector<Tensor> out;
  for (size_t i = 0; i < targets.size(); i++) {
    // a target this tensor does not depend on differentiably has gradient 0 (tinygrad's)
    auto g = grads.find(nodes[i]);
    out.push_back(g == grads.end() ? targets[i].zeros_like() : g->second.cast(targets[i].dtype()));
  }
  return out;
}

Tensor Tensor::detach() const { return Tensor(UOp::make(Ops::DETACH, dtype(), {uop()})); }

Tensor& Tensor::assign(const Tensor& value) {
  if (value.shape() != shape())
    throw_error("assign: expected a value of shape ", shape_to_string(shape()), ", got ", shape_to_string(value.shape()));
  if (value.dtype() != dtype())
    throw_error("assign: expected a value of dtype ", dtype().name(), ", got ", value.dtype().name());
  if (value.device() != device())
    throw_error("assign: expected a value on ", device(), ", got one on ", value.device(), "; copy it with .to(\"",
                device(), "\") first");
  // Functional update: this handle (and every copy of it) now reads the new value; graphs built
  // from the old value keep it alive until they are done with it.
  set_uop(value.uop());
  return *this;
}

Tensor Tensor::to(const std::string& dev) const {
  const std::string target = engine::canonical_device(dev);  // unknown devices fail here, eagerly
  if (target == device()) return *this;
  // Lazy like every op: the scheduler turns the COPY into a copy step between the two devices.
  return Tensor(UOp::make(Ops::COPY, dtype(), {uop()}, target));
}

Tensor& Tensor::to_(const std::string& dev) {
  Tensor moved = to(dev);
  // the gradient moves along, so an optimizer's update stays on one device (tinygrad's to_)
  if (std::optional<Tensor> g = grad()) set_grad(g->to(dev));
  set_uop(moved.uop());
  return *this;
}

}  // namespace kiln
