// Scatters with a reduction and data-dependent selections (tinygrad's scatter_reduce,
// masked_select, nonzero). A scatter compares each index against every target position (a one-hot
// mask along the scattered axis) and reduces the masked sources, so it stays lazy and differentiable.
#include <cmath>
#include <cstdint>
#include <limits>

#include "kiln/error.h"
#include "tensor/tensor_impl.h"

namespace kiln {
namespace {

// The sources and the one-hot mask of where they land, both shaped as the target with one more
// axis: the source positions along `axis`, which the reduction folds.
struct Scattered {
  Tensor src, mask;
};

Scattered pre_scatter(const Tensor& self, int axis, const Tensor& index, const Tensor& src, const char* op) {
  const int a = self.normalize_axis(axis, op);
  if (index.ndim() != self.ndim() || src.ndim() != self.ndim())
    throw_error(op, ": input ", shape_to_string(self.shape()), ", index ", shape_to_string(index.shape()), " and src ",
                shape_to_string(src.shape()), " must have the same number of dims");
  if (index.dtype().is_float() || index.dtype().is_bool())
    throw_error(op, ": index must be an integer tensor, got ", index.dtype().name());
  if (src.dtype() != self.dtype())
    throw_error(op, ": src is ", src.dtype().name(), " but the input is ", self.dtype().name(), "; cast one of them");
  Pairs to_index, pad_to_self;
  for (int64_t d = 0; d < self.ndim(); d++) {
    if (index.shape()[d] > src.shape()[d] || (d != a && index.shape()[d] > self.shape()[d]))
      throw_error(op, ": index ", shape_to_string(index.shape()), " is larger than src ", shape_to_string(src.shape()),
                  " or the input ", shape_to_string(self.shape()), " along axis ", d);
    to_index.push_back({0, index.shape()[d]});
    pad_to_self.push_back({0, d == a ? 0 : self.shape()[d] - index.shape()[d]});
  }
  pad_to_self.push_back({0, 0});
  const int64_t n = self.shape()[a];
  Shape with_targets = index.shape();
  with_targets.push_back(n);
  // (..., index.shape[a], ...) + (n,), then the source axis last: (..., n at a, ..., index.shape[a])
  Tensor s = src.shrink(to_index).unsqueeze(-1).expand(with_targets).transpose(-1, a);
  Shape along(static_cast<size_t>(index.ndim()), 1);
  along.push_back(n);
  Tensor mask = index.unsqueeze(-1).eq(Tensor::arange(0, static_cast<double>(n), 1, index.dtype()).reshape(along));
  return {s.pad(pad_to_self), mask.transpose(-1, a).pad(pad_to_self)};
}

// The identity of max (lowest) or min (highest) in x's dtype, exact for 64-bit integers too.
Tensor extreme_like(const Tensor& x, bool highest) {
  const DType dt = x.dtype();
  if (dt.is_float()) return x.const_like(highest ? INFINITY : -INFINITY);
  if (dt == dtypes::int64)
    return Tensor::full(x.shape(), highest ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min(), dt);
  if (dt == dtypes::uint64) return Tensor::full(x.shape(), highest ? std::numeric_limits<uint64_t>::max() : 0, dt);
  return x.const_like(highest ? dt.max_value() : dt.min_value());
}

// rows (n, ...) picked where the flat mask (n,) is true, in order: `size` of them (padded with
// fill), or, without a size, as many as the mask has, counted by reading it.
Tensor select_rows(const Tensor& rows, const Tensor& mask, std::optional<int64_t> size, double fill, const char* op) {
  const int64_t n = mask.numel();
  if (!size) {
    std::vector<int32_t> positions;
    const std::vector<bool> m = mask.to_vector<bool>();
    for (int64_t i = 0; i < n; i++)
      if (m[static_cast<size_t>(i)]) positions.push_back(static_cast<int32_t>(i));
    const int64_t count = static_cast<int64_t>(positions.size());
    Tensor index = Tensor::from_vector(std::move(positions), {count});
    return rows.index_select(0, index.device() == rows.device() ? index : index.to(rows.device()));
  }
  if (*size < 0) throw_error(op, ": size must be >= 0, got ", *size);
  Shape out = rows.shape();
  out[0] = *size;
  if (n == 0) return Tensor::full(out, fill, rows.dtype());
  // The j-th true element sits after every element whose inclusive running count is <= j.
  Tensor running = mask.cast(dtypes::int32).cumsum(0).reshape({1, n});
  Tensor j = Tensor::arange(0, static_cast<double>(*size), 1, dtypes::int32).reshape({*size, 1});
  Tensor position = running.le(j).cast(dtypes::int32).sum({1}).cast(dtypes::int32);
  Tensor picked = rows.index_select(0, position.minimum(static_cast<int32_t>(n - 1)));
  Shape valid_shape(out.size(), 1);
  valid_shape[0] = *size;
  Tensor valid = j.reshape(valid_shape).lt(mask.cast(dtypes::int32).sum().cast(dtypes::int32));
  return valid.where(picked, picked.const_like(fill));
}

}  // namespace

Tensor Tensor::scatter_reduce(int axis, const Tensor& index, const Tensor& src, std::string_view reduce,
                              bool include_self) const {
  auto [s, mask] = pre_scatter(*this, axis, index, src, "scatter_reduce");
  if (index.numel() == 0) return *this;  // nothing lands anywhere
  // where no source lands, this's value, else `none` (include_self=false)
  Tensor untouched = mask.any({-1}).logical_not();
  auto own = [&](const Tensor& none) { return include_self ? *this : untouched.where(*this, none); };
  if (reduce == "sum") return (mask.where(s, s.const_like(0)).sum({-1}) + own(const_like(0))).cast(dtype());
  if (reduce == "prod") return (mask.where(s, s.const_like(1)).prod({-1}) * own(const_like(1))).cast(dtype());
  if (reduce == "amax") return mask.where(s, extreme_like(s, false)).max({-1}).maximum(own(extreme_like(*this, false)));
  if (reduce == "amin") return mask.where(s, extreme_like(s, true)).min({-1}).minimum(own(extreme_like(*this, true)));
  if (reduce == "mean") {
    Tensor total = (mask.where(s, s.const_like(0)).sum({-1}) + own(const_like(0))).cast(dtype());
    Tensor hits = mask.cast(dtypes::int32).sum({-1}).cast(dtypes::int32);
    Tensor count = hits + (include_self ? hits.const_like(1) : untouched.cast(dtypes::int32));
    // integers round down, as PyTorch's
    return dtype().is_float() ? total / count.cast(dtype()) : total.idiv(count.cast(dtype()));
  }
  throw_error("scatter_reduce: reduce must be 'sum', 'prod', 'mean', 'amax' or 'amin', got '", reduce, "'");
}

Tensor Tensor::scatter(int axis, const Tensor& index, const Tensor& src, std::string_view reduce) const {
  if (reduce == "add") return scatter_reduce(axis, index, src, "sum");
  if (reduce == "multiply") return scatter_reduce(axis, index, src, "prod");
  throw_type_error("scatter: reduce must be 'add' or 'multiply', got '", reduce, "'");
}

Tensor Tensor::masked_select(const Tensor& mask, std::optional<int64_t> size, double fill_value) const {
  if (!mask.dtype().is_bool()) throw_error("masked_select: expected a bool mask, got ", mask.dtype().name());
  bool fits = mask.ndim() <= ndim();
  for (int64_t d = 1; fits && d <= mask.ndim(); d++) {
    const int64_t m = mask.shape()[mask.ndim() - d];
    fits = m == 1 || m == shape()[ndim() - d];
  }
  if (!fits)
    throw_error("masked_select: the mask ", shape_to_string(mask.shape()), " does not broadcast to the input ",
                shape_to_string(shape()));
  return select_rows(flatten(), mask.broadcast_to(shape()).flatten(), size, fill_value, "masked_select");
}

Tensor Tensor::nonzero(std::optional<int64_t> size, int64_t fill_value) const {
  // every element's coordinates, (numel, ndim)
  std::vector<Tensor> axes;
  for (int64_t d = 0; d < ndim(); d++) {
    Shape s(static_cast<size_t>(ndim()), 1);
    s[static_cast<size_t>(d)] = shape()[d];
    axes.push_back(Tensor::arange(0, static_cast<double>(shape()[d]), 1, dtypes::int32).reshape(s).expand(shape()).flatten());
  }
  Tensor coordinates = axes.empty() ? Tensor::zeros({1, 0}, dtypes::int32) : Tensor::stack(axes, 1);
  return select_rows(coordinates, ne(0).flatten(), size, static_cast<double>(fill_value), "nonzero");
}

}  // namespace kiln
