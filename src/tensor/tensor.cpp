// Tensor core: handles, the live-tensor registry, realize and readback.
#include "tensor/tensor_impl.h"

#include <cstdint>
#include <cstring>

#include "engine/buffers.h"
#include "engine/dispatch_cache.h"
#include "engine/realize.h"
#include "kiln/device.h"
#include "kiln/error.h"
#include "kiln/ir/pattern_matcher.h"
#include "schedule/devices.h"
#include "schedule/schedule.h"
#include "uop/rewrite_trace.h"

namespace kiln {

// ---- registry

TensorRegistry& TensorRegistry::get() {
  static TensorRegistry* r = new TensorRegistry();  // tensors may die during static teardown
  return *r;
}

void TensorRegistry::add(const std::shared_ptr<TensorImpl>& t) {
  const bool unsettled = !settled(t->uop_.get());  // no other thread has the new tensor yet
  std::lock_guard lock(mu_);
  t->registered_ = true;
  t->next_ = first_;
  if (first_) first_->prev_ = t.get();
  first_ = t.get();
  if (unsettled) {
    t->listed_unsettled_ = true;
    unsettled_.push_back(t);
  }
}

void TensorRegistry::remove(TensorImpl* t) {
  std::lock_guard lock(mu_);
  (t->prev_ ? t->prev_->next_ : first_) = t->next_;
  if (t->next_) t->next_->prev_ = t->prev_;
}

TensorImpl::~TensorImpl() {
  if (registered_) TensorRegistry::get().remove(this);
}

void TensorRegistry::list_unsettled(std::weak_ptr<TensorImpl> t) {
  std::lock_guard lock(mu_);
  unsettled_.push_back(std::move(t));
}

std::vector<std::shared_ptr<TensorImpl>> TensorRegistry::unsettled() {
  // Handles let go only after the lock: a tensor another thread gave up meanwhile dies with the
  // last one, and its destructor takes the lock.
  std::vector<std::shared_ptr<TensorImpl>> out, dropped;
  std::lock_guard lock(mu_);
  std::erase_if(unsettled_, [&](const std::weak_ptr<TensorImpl>& w) {
    std::shared_ptr<TensorImpl> t = w.lock();
    if (!t) return true;
    std::lock_guard tensor_lock(t->mu_);
    const bool now_settled = settled(t->uop_.get());
    t->listed_unsettled_ = !now_settled;
    (now_settled ? dropped : out).push_back(std::move(t));
    return now_settled;
  });
  return out;
}

std::vector<std::shared_ptr<TensorImpl>> TensorRegistry::live() {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<TensorImpl>> out;
  for (TensorImpl* t = first_; t; t = t->next_)
    if (auto alive = t->weak_from_this().lock()) out.push_back(std::move(alive));  // not one dying now
  return out;
}

void TensorRegistry::apply(const std::unordered_map<const UOp*, UOpRef>& becomes) {
  if (becomes.empty()) return;
  GraphChanges changes;
  for (auto& t : unsettled()) {
    UOpRef u = t->uop();
    if (auto it = becomes.find(u.get()); it != becomes.end()) changes.emplace_back(std::move(t), it->second);
    else if (!schedule::is_buffer_view(u.get())) changes.emplace_back(std::move(t), substitute(u, becomes));
  }
  keep_gradient_paths(changes);
  for (auto& [t, u] : changes) t->set_uop(std::move(u));
}

void TensorRegistry::track_for_gradients(const std::shared_ptr<TensorImpl>& t) {
  std::lock_guard lock(mu_);
  gradient_tracked_.push_back(t);
}

std::vector<std::shared_ptr<TensorImpl>> TensorRegistry::tracked_for_gradients() {
  std::vector<std::shared_ptr<TensorImpl>> out, dropped;  // let go after the lock, as in unsettled()
  std::unordered_set<const TensorImpl*> seen;  // requires_grad_ off and on again lists a tensor twice
  std::lock_guard lock(mu_);
  std::erase_if(gradient_tracked_, [&](const std::weak_ptr<TensorImpl>& w) {
    std::shared_ptr<TensorImpl> t = w.lock();
    if (!t) return true;
    const bool tracked = (t->requires_grad || t->origin) && seen.insert(t.get()).second;
    (tracked ? out : dropped).push_back(std::move(t));
    return !tracked;
  });
  return out;
}

std::unordered_set<const UOp*> TensorRegistry::in_use(const std::unordered_map<const UOp*, UOpRef>& becomes) {
  std::unordered_set<const UOp*> used, seen;
  std::vector<const UOp*> stack;
  std::vector<UOpRef> graphs;  // kept alive while walked
  for (const auto& t : unsettled()) {
    graphs.push_back(t->uop());
    stack.push_back(graphs.back().get());
  }
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    if (!seen.insert(u).second || u->op == Ops::BUFFER) continue;
    if (becomes.count(u)) {
      used.insert(u);  // the tensor will read its buffer; what it was computed from is not needed
      continue;
    }
    for (const UOpRef& s : u->src) stack.push_back(s.get());
  }
  return used;
}

bool settled(const UOp* u) {
  while (u->op == Ops::RESHAPE) u = u->src[0].get();
  return u->op == Ops::BUFFER;
}

void TensorImpl::set_uop(UOpRef u) {
  bool list;
  {
    std::lock_guard lock(mu_);
    std::swap(uop_, u);  // the old graph is released after the lock
    list = !listed_unsettled_ && !settled(uop_.get());
    listed_unsettled_ |= list;
  }
  if (list) TensorRegistry::get().list_unsettled(weak_from_this());
}

std::recursive_mutex& realize_mutex() {
  static std::recursive_mutex* m = new std::recursive_mutex();  // tensors may be read during static teardown
  return *m;
}

// ---- handles

template <>
DType dtype_of<bool>() { return dtypes::bool_; }
template <> DType dtype_of<int8_t>() { return dtypes::int8; }
template <> DType dtype_of<int16_t>() { return dtypes::int16; }
template <> DType dtype_of<int32_t>() { return dtypes::int32; }
template <> DType dtype_of<int64_t>() { return dtypes::int64; }
template <> DType dtype_of<uint8_t>() { return dtypes::uint8; }
template <> DType dtype_of<uint16_t>() { return dtypes::uint16; }
template <> DType dtype_of<uint32_t>() { return dtypes::uint32; }
template <> DType dtype_of<uint64_t>() { return dtypes::uint64; }
template <> DType dtype_of<float>() { return dtypes::float32; }
template <> DType dtype_of<double>() { return dtypes::float64; }

namespace {
UOpRef checked(UOpRef uop) {
  if (!uop || !uop->shape()) throw_error("Tensor: expected a tensor-graph UOp with a shape");
  // Under no_grad no gradient graph is recorded: what is computed is detached (data read from
  // buffers and constants carries no graph anyway).
  const bool computed = uop->op != Ops::BUFFER && uop->op != Ops::CONST && uop->op != Ops::DETACH &&
                        !schedule::is_buffer_view(uop.get());
  if (Tensor::no_grad && computed) uop = UOp::make(Ops::DETACH, uop->dtype, {uop});
  return uop;
}
}  // namespace

Tensor::Tensor(UOpRef uop) : impl_(std::make_shared<TensorImpl>(checked(std::move(uop)))) {
  impl_->grad_enabled = !no_grad;
  TensorRegistry::get().add(impl_);
}

Tensor::Tensor(std::vector<float> values) : Tensor(from_vector(std::move(values), Shape{-1})) {}

void Tensor::set_uop(UOpRef uop) const { impl_->set_uop(std::move(uop)); }
UOpRef Tensor::uop() const { return impl_->uop(); }
const Shape& Tensor::shape() const { return impl_->shape; }
DType Tensor::dtype() const { return impl_->dtype; }
int64_t Tensor::numel() const { return kiln::prod(shape()); }
int64_t Tensor::ndim() const { return static_cast<int64_t>(shape().size()); }

std::string Tensor::device() const { return schedule::device_of(uop().get(), engine::default_device()); }

namespace {

// A flat buffer on the default device for `shape`'s elements, and the tensor of that shape over it.
std::pair<UOpRef, Tensor> new_flat_tensor(DType dtype, const Shape& shape) {
  const int64_t n = kiln::prod(shape);
  UOpRef buf = engine::new_buffer(dtype, n, engine::default_device());
  return {buf, shape == Shape{n} ? Tensor(buf) : Tensor(UOp::make(Ops::RESHAPE, dtype, {buf}, shape))};
}

}  // namespace

Tensor tensor_from_bytes(const void* data, size_t bytes, DType dtype, Shape shape) {
  auto [buf, t] = new_flat_tensor(dtype, shape);
  engine::copyin(*buf, data, bytes);
  return t;
}

Tensor tensor_over_host_memory(void* data, DType dtype, Shape shape, std::function<void()> release) {
  auto [buf, t] = new_flat_tensor(dtype, shape);
  engine::adopt_host_memory(*buf, data, std::move(release));
  return t;
}

Tensor Tensor::from_blob(const void* ptr, Shape shape, DType dtype) {
  for (int64_t d : shape)
    if (d < 0) throw_error("from_blob: expected a shape of sizes >= 0, got ", shape_to_string(shape));
  const int64_t n = kiln::prod(shape);
  if (n > 0 && ptr == nullptr) throw_error("from_blob: null pointer for ", n, " elements of ", dtype.name());
  const size_t bytes = static_cast<size_t>(n) * static_cast<size_t>(dtype.itemsize());
  const bool aligned = reinterpret_cast<uintptr_t>(ptr) % static_cast<uintptr_t>(dtype.itemsize()) == 0;
  if (n == 0) return Tensor::empty(std::move(shape), dtype);
  if (!aligned || !runtime::get_device(engine::default_device()).allocator().host_memory())
    return tensor_from_bytes(ptr, bytes, dtype, std::move(shape));
  // kiln never writes a buffer it reads from; the memory stays its owner's, so nothing to give back
  return tensor_over_host_memory(const_cast<void*>(ptr), dtype, std::move(shape), [] {});
}

void tensor_to_bytes(const Tensor& t, void* dst, size_t bytes) {
  std::lock_guard lock(realize_mutex());
  if (engine::capturing())
    throw_error("TinyJit: reading tensor data (to_vector, item) inside a captured call is not allowed: a replay "
                "would not read it again; return the tensor instead");
  Tensor realized = t;
  realized.realize();
  const UOp* base = realized.uop().get();
  while (base->op == Ops::RESHAPE) base = base->src[0].get();
  engine::copyout(*base, dst, bytes);
}

template <class T>
Tensor Tensor::from_vector(std::vector<T> values, Shape shape) {
  shape = resolve_shape(std::move(shape), static_cast<int64_t>(values.size()),
                        "from_vector: cannot shape " + std::to_string(values.size()) + " values");
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(values.begin(), values.end());  // std::vector<bool> packs bits
    return tensor_from_bytes(bytes.data(), bytes.size(), dtypes::bool_, shape);
  } else {
    return tensor_from_bytes(values.data(), values.size() * sizeof(T), dtype_of<T>(), shape);
  }
}

// ---- execution

namespace {

// Realizes the graphs of tensors read under realize_mutex(), which the caller holds.
void realize_graphs(std::vector<UOpRef> roots) {
  // already a view of its buffer: nothing to schedule (a JIT replay realizes its arguments)
  std::erase_if(roots, [](const UOpRef& u) {
    return schedule::is_buffer_view(u.get()) && schedule::strip_contiguous(u) == u;
  });
  if (roots.empty()) return;
  std::optional<engine::Dispatch> dispatch = engine::Dispatch::lookup(roots);
  if (dispatch && dispatch->hit()) {
    dispatch->run(dispatch->realizes_beyond_roots() ? TensorRegistry::get().in_use(dispatch->becomes())
                                                    : std::unordered_set<const UOp*>{});
    TensorRegistry::get().apply(dispatch->becomes());
    return;
  }
  static std::atomic<int64_t> realizes{0};
  trace::Context viz_context([&] { return "schedule " + std::to_string(++realizes); });
  schedule::Schedule s = engine::schedule(roots);
  engine::run_schedule(s, TensorRegistry::get().in_use(s.becomes));
  if (dispatch) dispatch->record(s);
  TensorRegistry::get().apply(s.becomes);
}

}  // namespace

Tensor& Tensor::realize() {
  std::lock_guard lock(realize_mutex());
  realize_graphs({uop()});  // not through realize(tensors): no vector of handles to build
  return *this;
}

void Tensor::realize(const std::vector<Tensor>& tensors) {
  std::lock_guard lock(realize_mutex());
  std::vector<UOpRef> roots;
  roots.reserve(tensors.size());
  for (const Tensor& t : tensors) roots.push_back(t.uop());
  realize_graphs(std::move(roots));
}

std::vector<ScheduleItem> Tensor::schedule() const {
  return schedule::schedule_items(engine::schedule({uop()}).linear);
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  if (dtype_of<T>() != dtype())
    throw_error("to_vector: the tensor is ", dtype().name(), " but ", dtype_of<T>().name(),
                " was asked for; cast() it first");
  std::vector<T> out(static_cast<size_t>(numel()));
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(out.size());
    tensor_to_bytes(*this, bytes.data(), bytes.size());
    std::copy(bytes.begin(), bytes.end(), out.begin());
  } else {
    tensor_to_bytes(*this, out.data(), out.size() * sizeof(T));
  }
  return out;
}

template <class T>
T Tensor::item() const {
  if (numel() != 1) throw_error("item: expected a tensor with one element, got shape ", shape_to_string(shape()));
  return to_vector<T>()[0];
}

#define KILN_INSTANTIATE(T)                                        \
  template Tensor Tensor::from_vector<T>(std::vector<T>, Shape);   \
  template std::vector<T> Tensor::to_vector<T>() const;            \
  template T Tensor::item<T>() const;
KILN_INSTANTIATE(bool)
KILN_INSTANTIATE(int8_t)
KILN_INSTANTIATE(int16_t)
KILN_INSTANTIATE(int32_t)
KILN_INSTANTIATE(int64_t)
KILN_INSTANTIATE(uint8_t)
KILN_INSTANTIATE(uint16_t)
KILN_INSTANTIATE(uint32_t)
KILN_INSTANTIATE(uint64_t)
KILN_INSTANTIATE(float)
KILN_INSTANTIATE(double)
#undef KILN_INSTANTIATE

}  // namespace kiln
