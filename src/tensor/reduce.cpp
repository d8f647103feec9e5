// Reductions: one primitive (REDUCE over axes, kept as size 1) and compositions of it.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "kiln/error.h"
#include "tensor/tensor_impl.h"

namespace kiln {
namespace {

// Sums of bools and small integers accumulate in 32 bits, as tinygrad and NumPy do.
DType sum_dtype(DType d) {
  if (d.is_bool()) return dtypes::int32;
  if (d.is_unsigned() && d.itemsize() < 4) return dtypes::uint32;
  if (d.is_int() && d.itemsize() < 4) return dtypes::int32;
  return d;
}

// 16- and 8-bit floats accumulate in float32 and round once at the end (2048 + 1 is 2048 in float16).
Tensor accumulate(const Tensor& x, Ops op, std::vector<int> axes, bool keepdim) {
  DType d = x.dtype();
  if (d.is_float() && d.itemsize() < 4) return x.cast(dtypes::float32).reduce(op, std::move(axes), keepdim).cast(d);
  return x.cast(sum_dtype(d)).reduce(op, std::move(axes), keepdim);
}

}  // namespace

Tensor reverse_order(const Tensor& x) {
  if (x.dtype().is_bool()) return x.logical_not();
  if (x.dtype().is_float()) return x.neg();
  return x.bitwise_not();
}

std::vector<int> reduce_axes(const Tensor& t, const std::vector<int>& axes, std::string_view op) {
  std::vector<int> out;
  if (axes.empty())
    for (int i = 0; i < t.ndim(); i++) out.push_back(i);
  for (int a : axes) {
    if (implicit_axis(t, a)) continue;
    int axis = t.normalize_axis(a, op);
    if (std::find(out.begin(), out.end(), axis) != out.end())
      throw_error(op, ": axes ", shape_to_string(Shape(axes.begin(), axes.end())), " name axis ", axis, " twice");
    out.push_back(axis);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Tensor Tensor::reduce(Ops op, std::vector<int> axes, bool keepdim) const {
  std::vector<int> ax = reduce_axes(*this, axes, "reduce");
  Shape norm(ax.begin(), ax.end());
  Tensor r = norm.empty() ? *this : Tensor(UOp::make(Ops::REDUCE, dtype(), {uop()}, ReduceArg{op, norm}));
  if (keepdim) return r;
  Shape out;
  for (int64_t i = 0; i < ndim(); i++)
    if (!std::binary_search(norm.begin(), norm.end(), i)) out.push_back(shape()[i]);
  return r.reshape(out);
}

// Each public reduction normalizes its axes first, so a bad axis is reported under its own name.
Tensor Tensor::sum(std::vector<int> axes, bool keepdim) const {
  return accumulate(*this, Ops::ADD, reduce_axes(*this, axes, "sum"), keepdim);
}
Tensor Tensor::prod(std::vector<int> axes, bool keepdim) const {
  return accumulate(*this, Ops::MUL, reduce_axes(*this, axes, "prod"), keepdim);
}

Tensor Tensor::max(std::vector<int> axes, bool keepdim) const {
  return reduce(Ops::MAX, reduce_axes(*this, axes, "max"), keepdim);
}

Tensor Tensor::min(std::vector<int> axes, bool keepdim) const {
  axes = reduce_axes(*this, axes, "min");
  return reverse_order(reverse_order(*this).max(std::move(axes), keepdim));
}

Tensor Tensor::any(std::vector<int> axes, bool keepdim) const {
  return cast(dtypes::bool_).reduce(Ops::MAX, reduce_axes(*this, axes, "any"), keepdim);
}
Tensor Tensor::all(std::vector<int> axes, bool keepdim) const {
  return logical_not().reduce(Ops::MAX, reduce_axes(*this, axes, "all"), keepdim).logical_not();
}

Tensor Tensor::mean(std::vector<int> axes, bool keepdim) const {
  Tensor x = dtype().is_float() ? *this : cast(dtypes::default_float);
  // sum and divide in float32 for 16- and 8-bit floats, then round once
  DType out = x.dtype();
  if (out.itemsize() < 4) x = x.cast(dtypes::float32);
  Tensor s = x.sum(reduce_axes(*this, axes, "mean"), keepdim);
  int64_t count = s.numel() == 0 ? 0 : numel() / s.numel();
  return (s / static_cast<double>(count)).cast(out);
}

Tensor Tensor::argmax(int axis, bool keepdim) const {
  // The first index of the maximum: among positions equal to the max, the largest (n - index).
  int a = normalize_axis(axis, "argmax");
  int64_t n = shape()[a];
  if (n == 0) throw_error("argmax: axis ", axis, " has size 0");
  Shape idx_shape(static_cast<size_t>(ndim()), 1);
  idx_shape[a] = n;
  Tensor rev = arange(static_cast<double>(n), 0, -1, dtypes::int32).reshape(idx_shape);
  // NaN is the max of a row holding one (PyTorch): its positions count as maximal (x != x).
  Tensor is_max = eq(max({a}, true)).add(ne(*this));
  Tensor first = is_max.where(rev, rev.const_like(0)).max({a}, keepdim);
  return first.const_like(static_cast<double>(n)) - first;
}

Tensor Tensor::argmin(int axis, bool keepdim) const {
  int a = normalize_axis(axis, "argmin");
  return reverse_order(*this).argmax(a, keepdim);
}

namespace {
// x less its max along `axis`, as softmax and log_softmax take it (tinygrad's): the shift is for range
// and changes no result, so it is detached and no gradient (nor its rounding) flows through the max.
Tensor shifted_by_max(const Tensor& x, int axis) { return x - x.max({axis}, true).detach(); }
}  // namespace

Tensor Tensor::softmax(int axis) const {
  if (implicit_axis(*this, axis)) return reshape({1}).softmax(0).reshape({});
  int a = normalize_axis(axis, "softmax");
  Tensor x = dtype().is_float() ? *this : cast(dtypes::default_float);
  Tensor e = shifted_by_max(x, a).exp();
  return e * e.sum({a}, true).reciprocal();  // one division per row (as PyTorch), not per element
}

Tensor Tensor::softmin(int axis) const {
  if (implicit_axis(*this, axis)) return reshape({1}).softmin(0).reshape({});
  int a = normalize_axis(axis, "softmin");
  return (-(dtype().is_float() ? *this : cast(dtypes::default_float))).softmax(a);
}

Tensor Tensor::log_softmax(int axis) const {
  if (implicit_axis(*this, axis)) return reshape({1}).log_softmax(0).reshape({});
  int a = normalize_axis(axis, "log_softmax");
  Tensor x = dtype().is_float() ? *this : cast(dtypes::default_float);
  Tensor shifted = shifted_by_max(x, a);
  return shifted - shifted.exp().sum({a}, true).log();
}

Tensor Tensor::logsumexp(int axis, bool keepdim) const {
  if (implicit_axis(*this, axis)) return reshape({1}).logsumexp(0).reshape({});
  int a = normalize_axis(axis, "logsumexp");
  Tensor x = dtype().is_float() ? *this : cast(dtypes::default_float);
  // Shift by the max for range, but not by an infinite one: inf - inf would be NaN, where the
  // answer is +-inf (PyTorch).
  Tensor m = x.max({a}, true);
  m = m.abs().eq(INFINITY).where(0.0, m);
  Tensor lse = (x - m).exp().sum({a}, true).log() + m;
  return keepdim ? lse : lse.squeeze(a);
}

Tensor Tensor::matmul(const Tensor& o) const {
  if (ndim() == 0 || o.ndim() == 0)
    throw_error("matmul: both operands need at least 1 dimension, got ", shape_to_string(shape()), " and ",
                shape_to_string(o.shape()));
  // Vectors become matrices (and the added axis is dropped again), as NumPy does.
  Tensor a = ndim() == 1 ? unsqueeze(0) : *this;
  Tensor b = o.ndim() == 1 ? o.unsqueeze(1) : o;
  int64_t k = a.shape().back(), kb = b.shape()[b.ndim() - 2];
  if (k != kb)
    throw_error("matmul: shapes ", shape_to_string(shape()), " and ", shape_to_string(o.shape()),
                " do not match: inner dimensions ", k, " and ", kb, " must be equal");
  Shape batch_a(a.shape().begin(), a.shape().end() - 2), batch_b(b.shape().begin(), b.shape().end() - 2);
  for (size_t i = 1; i <= std::min(batch_a.size(), batch_b.size()); i++) {
    int64_t x = batch_a[batch_a.size() - i], y = batch_b[batch_b.size() - i];
    if (x != y && x != 1 && y != 1)
      throw_error("matmul: batch dimensions of ", shape_to_string(shape()), " and ", shape_to_string(o.shape()),
                  " do not broadcast (", x, " vs ", y, ")");
  }
  // (..., n, k) @ (..., k, m): broadcast (..., n, 1, k) * (..., 1, m, k) and sum over k. The same
  // graph on every device: the scheduler copies operands into its tiles (schedule/matmul_tiles.cpp).
  const Tensor products = a.unsqueeze(-2) * b.transpose(-1, -2).unsqueeze(-3);
  Tensor r = products.sum({-1});
  // as tinygrad's: small ints add up in a wider dtype, the result is the operands' promoted dtype
  if (r.dtype() != products.dtype()) r = r.cast(products.dtype());
  if (ndim() == 1) r = r.squeeze(-2);
  if (o.ndim() == 1) r = r.squeeze(-1);
  return r;
}

}  // namespace kiln
