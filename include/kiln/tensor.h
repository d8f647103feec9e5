#pragma once
// Tensor: a lazy handle over a UOp graph. Operations build graph nodes; nothing runs until
// realize() or a readback. Copying a Tensor shares it (reference semantics, like torch::Tensor).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/ir/uop.h"
#include "kiln/schedule_item.h"

namespace kiln {

struct TensorImpl;

template <class T>
concept Scalar = std::is_arithmetic_v<T>;

// The dtype a C++ element type maps to (float → float32, int → int32, bool → bool, ...).
template <class T>
DType dtype_of();

class Tensor {
 public:
  // ---- creation
  Tensor(std::vector<float> values);  // 1-D float32, already in a device buffer
  explicit Tensor(UOpRef uop);         // wrap a tensor-graph node
  template <class T>
  static Tensor from_vector(std::vector<T> values, Shape shape);
  static Tensor zeros(Shape shape, DType dtype = dtypes::float32);
  static Tensor ones(Shape shape, DType dtype = dtypes::float32);
  static Tensor full(Shape shape, double value, DType dtype = dtypes::float32);
  static Tensor empty(Shape shape, DType dtype = dtypes::float32);
  static Tensor arange(double start, double stop, double step = 1, DType dtype = dtypes::int32);
  static Tensor eye(int64_t n, DType dtype = dtypes::float32);
  static Tensor rand(Shape shape, DType dtype = dtypes::float32);   // U[0,1)
  static Tensor randn(Shape shape, DType dtype = dtypes::float32);  // N(0,1)
  static void manual_seed(uint64_t seed);
  Tensor zeros_like() const;
  Tensor ones_like() const;
  Tensor full_like(double value) const;

  // ---- properties
  const Shape& shape() const;
  DType dtype() const;
  std::string device() const;
  int64_t numel() const;
  int64_t ndim() const;
  int64_t element_size() const { return dtype().itemsize(); }
  int64_t nbytes() const { return numel() * element_size(); }

  // ---- execution and readback (readback realizes first)
  Tensor& realize();
  template <class T>
  std::vector<T> to_vector() const;
  template <class T>
  T item() const;
  Tensor contiguous() const;  // materialize into its own buffer when realized

  // ---- elementwise (broadcasting like NumPy; dtypes promote like tinygrad)
  Tensor add(const Tensor& o) const;
  Tensor sub(const Tensor& o) const;
  Tensor mul(const Tensor& o) const;
  Tensor div(const Tensor& o) const;  // true division: integer inputs give a float result
  Tensor neg() const;
  Tensor relu() const, exp() const, exp2() const, log() const, log2() const, sqrt() const, rsqrt() const,
      sin() const, cos() const, tan() const, tanh() const, sigmoid() const, abs() const, reciprocal() const,
      square() const, sign() const, trunc() const, floor() const, ceil() const, round() const;
  Tensor pow(const Tensor& exponent) const;
  Tensor pow(double exponent) const;
  Tensor maximum(const Tensor& o) const;
  Tensor minimum(const Tensor& o) const;
  Tensor clip(double lo, double hi) const;
  Tensor lt(const Tensor& o) const, gt(const Tensor& o) const, le(const Tensor& o) const,
      ge(const Tensor& o) const, eq(const Tensor& o) const, ne(const Tensor& o) const;
  Tensor logical_not() const;
  Tensor where(const Tensor& if_true, const Tensor& if_false) const;  // this is the condition
  // The same with C++ scalars (converted as the arithmetic operators do).
  template <Scalar S> Tensor lt(S v) const;
  template <Scalar S> Tensor gt(S v) const;
  template <Scalar S> Tensor le(S v) const;
  template <Scalar S> Tensor ge(S v) const;
  template <Scalar S> Tensor eq(S v) const;
  template <Scalar S> Tensor ne(S v) const;
  template <Scalar S> Tensor maximum(S v) const;
  template <Scalar S> Tensor minimum(S v) const;
  template <Scalar S> Tensor where(const Tensor& if_true, S if_false) const;
  template <Scalar S> Tensor where(S if_true, const Tensor& if_false) const;
  template <Scalar A, Scalar B> Tensor where(A if_true, B if_false) const;
  Tensor cast(DType dtype) const;
  Tensor bitcast(DType dtype) const;  // same itemsize: reinterpret the bits

  // ---- reductions (axes may be negative; empty = all axes)
  Tensor sum(std::vector<int> axes = {}, bool keepdim = false) const;
  Tensor max(std::vector<int> axes = {}, bool keepdim = false) const;
  Tensor min(std::vector<int> axes = {}, bool keepdim = false) const;
  Tensor mean(std::vector<int> axes = {}, bool keepdim = false) const;
  Tensor prod(std::vector<int> axes = {}, bool keepdim = false) const;
  Tensor argmax(int axis, bool keepdim = false) const;
  Tensor argmin(int axis, bool keepdim = false) const;
  Tensor softmax(int axis = -1) const;
  Tensor log_softmax(int axis = -1) const;
  Tensor logsumexp(int axis, bool keepdim = false) const;

  // ---- movement: free views, no copy until a kernel needs one
  Tensor reshape(Shape shape) const;  // one dimension may be -1
  Tensor permute(std::vector<int> order) const;
  Tensor expand(Shape shape) const;   // -1 keeps a dimension
  Tensor pad(std::vector<std::pair<int64_t, int64_t>> padding) const;  // (before, after) per axis, zeros
  Tensor shrink(std::vector<std::pair<int64_t, int64_t>> bounds) const; // [begin, end) per axis
  Tensor flip(std::vector<int> axes) const;
  Tensor transpose(int a = 0, int b = 1) const;
  Tensor flatten(int start_dim = 0, int end_dim = -1) const;
  Tensor squeeze(int axis) const;
  Tensor unsqueeze(int axis) const;

  // ---- matrix ops
  Tensor matmul(const Tensor& o) const;
  Tensor dot(const Tensor& o) const { return matmul(o); }

  // ---- introspection: the kernels realize() would run now, in order; the graph behind this tensor
  std::vector<ScheduleItem> schedule() const;
  UOpRef uop() const;

  // ---- internals used by composites (public for the Python bindings and nn)
  Tensor broadcast_to(const Shape& shape) const;
  std::pair<Tensor, Tensor> broadcast_with(const Tensor& o) const;  // same shape and dtype, promoted
  Tensor const_like(double value) const;  // scalar of this dtype broadcast to this shape
  Tensor reduce(Ops op, std::vector<int> axes, bool keepdim) const;
  int normalize_axis(int axis) const;     // negative axes count from the end; bad axes throw

 private:
  Tensor alu(Ops op, std::vector<Tensor> srcs = {}) const;  // elementwise primitive, same shapes
  void set_uop(UOpRef uop) const;
  friend class TensorRegistry;
  std::shared_ptr<TensorImpl> impl_;
};

// ---- arithmetic operators, with tensors or C++ scalars on either side
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);

// A C++ scalar becomes a constant of the tensor's dtype unless it is a floating scalar on an
// integer/bool tensor, which gives float32 (tinygrad's rule): `i * 3` stays int32, `i * 0.5` is float.
template <Scalar S>
Tensor scalar_like(const Tensor& t, S value) {
  DType dt = t.dtype();
  if (std::is_floating_point_v<S> && !dt.is_float()) dt = dtypes::default_float;
  return Tensor::full(t.shape(), static_cast<double>(value), dt);
}
template <Scalar S> Tensor Tensor::lt(S v) const { return lt(scalar_like(*this, v)); }
template <Scalar S> Tensor Tensor::gt(S v) const { return gt(scalar_like(*this, v)); }
template <Scalar S> Tensor Tensor::le(S v) const { return le(scalar_like(*this, v)); }
template <Scalar S> Tensor Tensor::ge(S v) const { return ge(scalar_like(*this, v)); }
template <Scalar S> Tensor Tensor::eq(S v) const { return eq(scalar_like(*this, v)); }
template <Scalar S> Tensor Tensor::ne(S v) const { return ne(scalar_like(*this, v)); }
template <Scalar S> Tensor Tensor::maximum(S v) const { return maximum(scalar_like(*this, v)); }
template <Scalar S> Tensor Tensor::minimum(S v) const { return minimum(scalar_like(*this, v)); }
template <Scalar S> Tensor Tensor::where(const Tensor& t, S f) const { return where(t, scalar_like(t, f)); }
template <Scalar S> Tensor Tensor::where(S t, const Tensor& f) const { return where(scalar_like(f, t), f); }
template <Scalar A, Scalar B> Tensor Tensor::where(A t, B f) const {
  using C = std::common_type_t<A, B>;
  DType dt = std::is_floating_point_v<C> ? dtypes::default_float : std::is_same_v<C, bool> ? dtypes::bool_ : dtypes::default_int;
  return where(Tensor::full(shape(), static_cast<double>(t), dt), Tensor::full(shape(), static_cast<double>(f), dt));
}

template <Scalar S> Tensor operator+(const Tensor& a, S b) { return a + scalar_like(a, b); }
template <Scalar S> Tensor operator+(S a, const Tensor& b) { return scalar_like(b, a) + b; }
template <Scalar S> Tensor operator-(const Tensor& a, S b) { return a - scalar_like(a, b); }
template <Scalar S> Tensor operator-(S a, const Tensor& b) { return scalar_like(b, a) - b; }
template <Scalar S> Tensor operator*(const Tensor& a, S b) { return a * scalar_like(a, b); }
template <Scalar S> Tensor operator*(S a, const Tensor& b) { return scalar_like(b, a) * b; }
template <Scalar S> Tensor operator/(const Tensor& a, S b) { return a / scalar_like(a, b); }
template <Scalar S> Tensor operator/(S a, const Tensor& b) { return scalar_like(b, a) / b; }

}  // namespace kiln
