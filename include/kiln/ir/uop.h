#pragma once
// UOp: the one IR node of every stage. Immutable and hash-consed: making a UOp equal to a live one
// returns that one, so equal computations are the same pointer and equality is pointer equality.
// Nodes are reference counted (UOpRef) and freed, iteratively, when the last reference goes.
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/ir/ops.h"

namespace kiln {

using Shape = std::vector<int64_t>;
using Pairs = std::vector<std::pair<int64_t, int64_t>>;

// What a loop variable is for; codegen opts retype ranges (an opt is a split, retyped range).
// LOCAL: an output loop whose iterations are the work-items of a work-group (get_local_id);
// GROUP_REDUCE: a reduced loop whose iterations are work-items that reduce together through local memory.
enum class AxisType : uint8_t { LOOP, THREAD, REDUCE, UPCAST, UNROLL, LOCAL, GROUP_REDUCE };
std::string_view axis_type_name(AxisType);
char axis_type_letter(AxisType);

struct RangeArg {  // RANGE: loop variable number `id` of kind `type`
  int64_t id;
  AxisType type;
  bool operator==(const RangeArg&) const = default;
  // A reduced loop (REDUCE, or GROUP_REDUCE shared among a work-group's items).
  bool reduces() const { return type == AxisType::REDUCE || type == AxisType::GROUP_REDUCE; }
  // Where the loop sits in a kernel's loop nest: output loops outside reduced ones, each kind
  // nested in id order (the order of the axes).
  std::pair<bool, int64_t> nest_rank() const { return {reduces(), id}; }
};
struct ReduceArg {  // REDUCE: tensor graph reduces `axes` (kept as size 1); kernels list ranges as srcs
  Ops op;
  std::vector<int64_t> axes;
  bool operator==(const ReduceArg&) const = default;
};
struct BufferArg {  // BUFFER: `size` elements on `device`; `id` makes each buffer unique
  int64_t id;
  int64_t size;
  std::string device;
  bool operator==(const BufferArg&) const = default;
};

// CONST values: doubles compare bitwise, so 0.0 and -0.0 stay distinct nodes and NaN dedupes.
struct ConstFloat {
  double v;
  bool operator==(const ConstFloat& o) const;
};

using Arg = std::variant<std::monostate, int64_t, ConstFloat, std::string, Shape, Pairs, ReduceArg, RangeArg,
                         BufferArg>;
size_t hash_arg(const Arg&);
std::string arg_to_string(const Arg&);

class UOp;

// Owning handle to an interned UOp. Cheap to copy; compares and hashes by pointer.
class UOpRef {
 public:
  UOpRef() = default;
  UOpRef(const UOpRef& o) : p_(o.p_) { retain(); }
  UOpRef(UOpRef&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  UOpRef& operator=(UOpRef o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~UOpRef() { release(); }

  const UOp* get() const { return p_; }
  const UOp* operator->() const { return p_; }
  const UOp& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  friend bool operator==(const UOpRef& a, const UOpRef& b) { return a.p_ == b.p_; }

  // Index-math builders used by the scheduler and codegen (int ops promote a C++ int to a CONST).
  friend UOpRef operator+(const UOpRef& a, const UOpRef& b);
  friend UOpRef operator-(const UOpRef& a, const UOpRef& b);
  friend UOpRef operator*(const UOpRef& a, const UOpRef& b);
  friend UOpRef operator/(const UOpRef& a, const UOpRef& b);  // IDIV (C semantics)
  friend UOpRef operator%(const UOpRef& a, const UOpRef& b);  // MOD (C semantics)
  friend UOpRef operator<(const UOpRef& a, const UOpRef& b);  // CMPLT
  friend UOpRef operator&(const UOpRef& a, const UOpRef& b);  // AND
  friend UOpRef operator+(const UOpRef& a, int64_t b);
  friend UOpRef operator-(const UOpRef& a, int64_t b);
  friend UOpRef operator*(const UOpRef& a, int64_t b);
  friend UOpRef operator/(const UOpRef& a, int64_t b);
  friend UOpRef operator%(const UOpRef& a, int64_t b);
  friend UOpRef operator<(const UOpRef& a, int64_t b);

 private:
  friend class UOp;
  friend class InternTable;
  explicit UOpRef(const UOp* adopted) : p_(adopted) {}  // takes over one reference
  void retain() const;
  void release();
  const UOp* p_ = nullptr;
};

struct UOpRefHash {
  size_t operator()(const UOpRef& u) const { return std::hash<const void*>()(u.get()); }
};

class UOp {
 public:
  const Ops op;
  const DType dtype;
  const std::vector<UOpRef> src;
  const Arg arg;

  // The only way to create a UOp: returns the live node with this (op, dtype, src, arg) if any.
  static UOpRef make(Ops op, DType dtype, std::vector<UOpRef> src = {}, Arg arg = {});
  static UOpRef const_(DType dtype, double value);   // CONST scalar (value converted to dtype)
  static UOpRef const_int(DType dtype, int64_t value);  // the same, exact for 64-bit integers
  static UOpRef sink(std::vector<UOpRef> src);

  UOpRef ref() const;                                 // a new handle to this node
  UOpRef with_src(std::vector<UOpRef> new_src) const;
  UOpRef with_arg(Arg new_arg) const;
  UOpRef alu(Ops op, std::vector<UOpRef> others) const;  // elementwise op; dtype from this (bool for compares)
  UOpRef cast(DType to) const;
  UOpRef const_like(double value) const;              // a CONST of this dtype

  size_t hash() const { return hash_; }
  // Tensor-graph shape (computed and checked at creation); nullopt for codegen nodes.
  const std::optional<Shape>& shape() const { return shape_; }
  const Shape& shape_or_throw() const;
  // Value range of integer/bool nodes, computed at creation (doubles; ±inf when unknown).
  double vmin() const { return vmin_; }
  double vmax() const { return vmax_; }

  // Typed views of arg.
  template <class T>
  const T& arg_as() const { return std::get<T>(arg); }
  double const_value() const;                         // CONST only
  bool is_const(double v) const { return op == Ops::CONST && const_value() == v; }

  // Every node reachable from here, sources before users (iterative: safe on deep graphs).
  std::vector<const UOp*> toposort() const;
  // Cache key stable across processes: a content hash of the whole graph.
  std::string key() const;

  UOp(const UOp&) = delete;
  UOp& operator=(const UOp&) = delete;

 private:
  friend class UOpRef;
  friend class InternTable;
  friend class NodeSet;
  UOp(Ops op, DType dtype, std::vector<UOpRef> src, Arg arg, size_t hash);
  void compute_shape();
  void compute_shape_unchecked();
  void compute_range();
  size_t hash_;
  std::optional<Shape> shape_;
  double vmin_, vmax_;
  mutable std::atomic<int64_t> refs_{1};
  mutable const UOp* next_interned_ = nullptr;  // the intern table's chain (its lock guards it)
};

// Call `hook(node)` just before any node with `op` is freed (used to free realized device memory).
void on_uop_release(Ops op, std::function<void(const UOp&)> hook);
// Number of live interned nodes (for tests of graph freeing).
size_t live_uop_count();

int64_t prod(const Shape& s);
// The axis groups a reshape of `in` (no zero-size axis) to `out` maps onto each other: runs of
// non-1 axes with equal products (a split, a merge, or an axis left alone).
struct ReshapeGroup {
  std::vector<size_t> in_axes, out_axes;
};
std::vector<ReshapeGroup> reshape_groups(const Shape& in, const Shape& out);
// Kernels index with int32: the largest number of elements one tensor may have.
inline constexpr int64_t kMaxNumel = (int64_t{1} << 31) - 1;
// Throws kiln::Error unless every dimension is >= 0 and the shape has at most kMaxNumel elements.
void check_shape(const Shape& s, const char* what);
// The value a reduction starts from: 0 for ADD, 1 for MUL, the dtype's lowest value for MAX.
double reduce_identity(Ops op, DType dtype);
std::string shape_to_string(const Shape& s);

}  // namespace kiln
