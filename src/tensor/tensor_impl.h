#pragma once
// What a Tensor handle points at, and the registry of live tensors that realize() updates.
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

struct TensorImpl : std::enable_shared_from_this<TensorImpl> {
  explicit TensorImpl(UOpRef u) : shape(*u->shape()), dtype(u->dtype), uop_(std::move(u)) {}
  ~TensorImpl();  // leaves the registry
  // The graph this tensor stands for. A realize in any thread may swap it for its result, so it is
  // read and written under a lock; the shape and dtype never change.
  UOpRef uop() const {
    std::lock_guard lock(mu_);
    return uop_;
  }
  // Lists the tensor with the registry's unsettled ones when its new graph is not settled.
  void set_uop(UOpRef u);

  const Shape shape;
  const DType dtype;
  bool requires_grad = false;  // set on leaves by requires_grad_()
  bool grad_enabled = true;    // false when made under Tensor::no_grad
  bool never_needs_grad = false;  // said not to need one (Python's requires_grad=False): backward_live skips it
  std::optional<Tensor> grad;
  // The graph a realize replaced by `realized` (this tensor's graph then), kept while a gradient can
  // flow through it: backward() reads the graph where the tensor's graph is still `realized`.
  struct Origin {
    UOpRef realized, graph;
  };
  std::optional<Origin> origin;

 private:
  friend class TensorRegistry;
  mutable std::mutex mu_;
  UOpRef uop_;
  bool listed_unsettled_ = false;  // in the registry's unsettled list (under mu_)
  // The registry's list of every tensor (under its lock): a tensor leaves it as it dies, so the
  // list holds no dead tensor's memory.
  bool registered_ = false;
  TensorImpl *prev_ = nullptr, *next_ = nullptr;
};

// Whether a graph is settled: RESHAPEs of a BUFFER. No realize replaces anything in it (what a
// realize replaces are computed nodes and CONTIGUOUS roots), so realize() skips such tensors.
bool settled(const UOp* u);

// Held while realizing and reading back: realize rewrites the live tensors' graphs, and two
// threads realizing one shared graph would otherwise compute it twice and race on the rewrite.
std::recursive_mutex& realize_mutex();

// Every live tensor, so that realizing one makes all tensors sharing its computation use the
// result (tinygrad's all_tensors). Realize looks only at the unsettled ones: a program holding
// thousands of realized tensors (parameters, optimizer state, data) would otherwise pay for each
// of them in every realize, even a cached a+b.
class TensorRegistry {
 public:
  static TensorRegistry& get();
  void add(const std::shared_ptr<TensorImpl>& t);
  std::vector<std::shared_ptr<TensorImpl>> live();
  // Points every live tensor whose graph contains a replaced node at the replacement.
  void apply(const std::unordered_map<const UOp*, UOpRef>& becomes);
  // The realized nodes (keys of `becomes`) that some live tensor's graph refers to.
  std::unordered_set<const UOp*> in_use(const std::unordered_map<const UOp*, UOpRef>& becomes);
  static const std::shared_ptr<TensorImpl>& impl_of(const Tensor& t) { return t.impl_; }
  // Tensors that require a gradient or keep an origin (autograd.cpp): what a realize must keep
  // gradient paths to. Empty in programs that never ask for gradients, which then pay nothing.
  void track_for_gradients(const std::shared_ptr<TensorImpl>& t);
  std::vector<std::shared_ptr<TensorImpl>> tracked_for_gradients();

 private:
  friend struct TensorImpl;
  void remove(TensorImpl* t);
  void list_unsettled(std::weak_ptr<TensorImpl> t);
  // The live tensors whose graphs are not settled; the list drops the dead and the settled.
  std::vector<std::shared_ptr<TensorImpl>> unsettled();

  std::mutex mu_;
  TensorImpl* first_ = nullptr;
  std::vector<std::weak_ptr<TensorImpl>> unsettled_;
  std::vector<std::weak_ptr<TensorImpl>> gradient_tracked_;
};

// Called by realize with each tensor's graph before and after: tensors a gradient can flow through
// keep their old graph as their origin (autograd.cpp).
using GraphChanges = std::vector<std::pair<std::shared_ptr<TensorImpl>, UOpRef>>;
void keep_gradient_paths(const GraphChanges& changes);

// tinygrad's backward (the Python package's): as Tensor::backward, but into every live float tensor
// of root's graph, requires_grad or not, except those marked never_needs_grad (autograd.cpp).
void backward_live(const Tensor& root, std::optional<Tensor> gradient);

// `axis` as an index into `ndim` axes (negative ones count from the end). Out of range, it throws
// an IndexError that starts with `op` and shows `shape`, the tensor the axis refers to.
int axis_index(int axis, int64_t ndim, std::string_view op, const Shape& shape);

// Whether `axis` names a 0-d tensor's one implicit axis (0 or -1, as PyTorch): ops along it see the
// tensor as shape (1,).
bool implicit_axis(const Tensor& t, int axis);

// The axes a reduction named `op` works on: each normalized, sorted, none twice; none given means
// all. Public reductions call it first, so a bad axis is reported under the name the user called.
std::vector<int> reduce_axes(const Tensor& t, const std::vector<int>& axes, std::string_view op);

// An order-reversing bijection of the dtype's values, so min(x) is its inverse of max of it:
// -x for floats, ~x for integers (-x overflows at a signed type's minimum), not for bools.
Tensor reverse_order(const Tensor& x);

// `shape` with its one -1 (if any) inferred so it holds `numel` elements; errors start with `what`.
Shape resolve_shape(Shape shape, int64_t numel, const std::string& what);

// Host data → a new buffer on the default device, as a tensor of `shape`.
Tensor tensor_from_bytes(const void* data, size_t bytes, DType dtype, Shape shape);
// A tensor over host memory kiln does not own, without a copy (engine::adopt_host_memory): it reads
// the memory in place each time it is used; `release` runs when kiln is done with it. Default
// device only, which must compute on host memory (the CPU).
Tensor tensor_over_host_memory(void* data, DType dtype, Shape shape, std::function<void()> release);
// The reverse: realizes `t` and copies its elements (row-major, in the device's byte order) into
// `dst`, which holds exactly `bytes` == t.nbytes() bytes.
void tensor_to_bytes(const Tensor& t, void* dst, size_t bytes);

}  // namespace kiln
