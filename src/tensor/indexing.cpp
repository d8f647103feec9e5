// Indexing with integer tensors. gather and index_select are GATHER nodes: the kernel loads the
// index and reads the source at it (O(index), not O(source)); its gradient is a masked sum
// (gradient.cpp). Elsewhere comparisons against an arange make one-hot masks (tinygrad's way).
#include "kiln/error.h"
#include "tensor/tensor_impl.h"

namespace kiln {
namespace {

void check_index_dtype(const Tensor& index, const char* op) {
  if (!index.dtype().is_int()) throw_error(op, ": index tensors must be integers, got ", index.dtype().name());
}

// index == arange(n) along a new last axis: (..., n) bool
Tensor one_hot_mask(const Tensor& index, int64_t n) {
  check_index_dtype(index, "one_hot");
  Shape s(static_cast<size_t>(index.ndim()), 1);
  s.push_back(n);
  return index.unsqueeze(-1).eq(Tensor::arange(0, static_cast<double>(n), 1, index.dtype()).reshape(s));
}

// The lower/upper-triangle mask of the last two axes: col - row >= diagonal (upper) or <= (lower).
Tensor triangle(const Tensor& x, int64_t diagonal, bool upper) {
  if (x.ndim() < 2) throw_error(upper ? "triu" : "tril", ": expected at least 2 dimensions, got ", shape_to_string(x.shape()));
  int64_t r = x.shape()[x.ndim() - 2], c = x.shape()[x.ndim() - 1];
  Tensor rows = Tensor::arange(0, static_cast<double>(r)).reshape({r, 1});
  Tensor cols = Tensor::arange(0, static_cast<double>(c)).reshape({1, c});
  Tensor diff = cols - rows;
  Tensor keep = upper ? diff.ge(static_cast<int32_t>(diagonal)) : diff.le(static_cast<int32_t>(diagonal));
  return keep.where(x, x.const_like(0));
}

}  // namespace

Tensor Tensor::one_hot(int64_t num_classes) const {
  if (num_classes < 0) throw_value_error("one_hot: num_classes must be >= 0, got ", num_classes);
  return one_hot_mask(*this, num_classes).cast(dtypes::int32);
}

Tensor Tensor::gather(int axis, const Tensor& index) const {
  const int a = normalize_axis(axis, "gather");
  if (index.ndim() != ndim())
    throw_error("gather: index ", shape_to_string(index.shape()), " must have as many dims as the input ",
                shape_to_string(shape()));
  check_index_dtype(index, "gather");
  Pairs keep;
  for (int64_t d = 0; d < ndim(); d++) {
    if (d != a && index.shape()[d] > shape()[d])
      throw_error("gather: index ", shape_to_string(index.shape()), " is larger than the input ",
                  shape_to_string(shape()), " along axis ", d);
    keep.push_back({0, d == a ? shape()[d] : index.shape()[d]});
  }
  // Indices outside [0, n) read 0: PyTorch raises, which a lazy kernel cannot, and a gated load
  // never reads out of bounds.
  return Tensor(UOp::make(Ops::GATHER, dtype(), {shrink(keep).uop(), index.uop()}, int64_t{a}));
}

Tensor Tensor::index_select(int axis, const Tensor& index) const {
  const int a = normalize_axis(axis, "index_select");
  if (index.ndim() != 1) throw_error("index_select: expected a 1-D index, got ", shape_to_string(index.shape()));
  check_index_dtype(index, "index_select");
  // negative indices count from the end, as Python's; the rest outside [0, n) read 0 (gather)
  const int64_t n = shape()[a];
  // (narrow indices widen first: index + n must not wrap around in int8)
  Tensor i = index.dtype().itemsize() < 4 ? index.cast(dtypes::int32) : index;
  Tensor wrapped = i.dtype().is_unsigned() ? i : i.lt(0).where(i + n, i);
  Shape along(static_cast<size_t>(ndim()), 1), out = shape();
  along[a] = out[a] = index.shape()[0];
  return gather(a, wrapped.reshape(along).expand(out));
}

Tensor Tensor::scatter(int axis, const Tensor& index, const Tensor& src) const {
  const int a = normalize_axis(axis, "scatter");
  if (index.ndim() != ndim() || src.ndim() != ndim())
    throw_error("scatter: input ", shape_to_string(shape()), ", index ", shape_to_string(index.shape()), " and src ",
                shape_to_string(src.shape()), " must have the same number of dims");
  if (src.dtype() != dtype())  // as PyTorch's: no silent cast of the values
    throw_error("scatter: src is ", src.dtype().name(), " but the input is ", dtype().name(), "; cast one of them");
  Pairs to_index, pad_to_self;
  for (int64_t d = 0; d < ndim(); d++) {
    if (index.shape()[d] > src.shape()[d] || (d != a && index.shape()[d] > shape()[d]))
      throw_error("scatter: index ", shape_to_string(index.shape()), " is larger than src ",
                  shape_to_string(src.shape()), " or the input ", shape_to_string(shape()), " along axis ", d);
    to_index.push_back({0, index.shape()[d]});
    pad_to_self.push_back({0, d == a ? 0 : shape()[d] - index.shape()[d]});
  }
  if (index.numel() == 0) return *this;  // nothing lands anywhere
  // (..., k at a, ..., n): which target position each source element goes to, and its value
  Tensor vals = src.shrink(to_index).pad(pad_to_self).unsqueeze(-1);
  pad_to_self.push_back({0, 0});
  Tensor mask = one_hot_mask(index, shape()[a]).pad(pad_to_self);
  vals = vals.expand(mask.shape());
  // Along a, a later index wins: fold the k sources in order.
  std::vector<Tensor> ms = mask.split(1, a), vs = vals.split(1, a);
  Tensor hit = ms[0], value = vs[0];
  for (size_t i = 1; i < ms.size(); i++) {
    value = ms[i].where(vs[i], value);
    hit = hit + ms[i];
  }
  // (..., 1 at a, ..., n) -> (..., n at a, ...)
  hit = hit.transpose(a, -1).squeeze(-1);
  value = value.transpose(a, -1).squeeze(-1);
  return hit.where(value, *this);
}

Tensor Tensor::masked_fill(const Tensor& mask, double value) const {
  return mask.cast(dtypes::bool_).where(scalar_like(*this, value), *this);
}
Tensor Tensor::masked_fill(const Tensor& mask, const Tensor& value) const {
  return mask.cast(dtypes::bool_).where(value.cast(dtype()), *this);
}

Tensor Tensor::tril(int64_t diagonal) const { return triangle(*this, diagonal, false); }
Tensor Tensor::triu(int64_t diagonal) const { return triangle(*this, diagonal, true); }

}  // namespace kiln
