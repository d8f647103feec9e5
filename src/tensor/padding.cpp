// Tensor::pad with a mode, as tinygrad's: constant fill, reflect, replicate and circular. Each is
// movement ops (shrink, flip, expand) and one cat per padded axis, so it costs index math, not a
// kernel of its own, and its gradient is derived like any other view's.
#include <algorithm>
#include <cmath>

#include "kiln/error.h"
#include "tensor/tensor_impl.h"

namespace kiln {
namespace {

const char* mode_name(PadMode mode) {
  switch (mode) {
    case PadMode::constant: return "constant";
    case PadMode::reflect: return "reflect";
    case PadMode::replicate: return "replicate";
    case PadMode::circular: return "circular";
  }
  return "?";
}

// [begin, end) of one axis, the others whole.
Tensor slice_axis(const Tensor& x, size_t axis, int64_t begin, int64_t end) {
  Pairs bounds;
  for (int64_t n : x.shape()) bounds.push_back({0, n});
  bounds[axis] = {begin, end};
  return x.shrink(bounds);
}

// The `amount` elements that go before (front) or after the data along `axis`.
Tensor border(const Tensor& x, size_t axis, int64_t amount, bool front, PadMode mode) {
  const int64_t n = x.shape()[axis];
  const int flip_axis = static_cast<int>(axis);
  switch (mode) {
    case PadMode::reflect:  // x[amount], ..., x[1] before; x[n-2], ..., x[n-1-amount] after
      return (front ? slice_axis(x, axis, 1, amount + 1) : slice_axis(x, axis, n - 1 - amount, n - 1)).flip({flip_axis});
    case PadMode::replicate: {
      Shape to = x.shape();
      to[axis] = amount;
      return (front ? slice_axis(x, axis, 0, 1) : slice_axis(x, axis, n - 1, n)).expand(to);
    }
    case PadMode::circular:  // the other end
      return front ? slice_axis(x, axis, n - amount, n) : slice_axis(x, axis, 0, amount);
    case PadMode::constant: break;
  }
  throw_error("pad: no border for mode ", mode_name(mode));
}

}  // namespace

Tensor Tensor::pad(const Pairs& padding, PadMode mode, double value) const {
  if (static_cast<int64_t>(padding.size()) != ndim())
    throw_error("pad: expected ", ndim(), " (before, after) pairs for shape ", shape_to_string(shape()), ", got ",
                padding.size());
  if (mode != PadMode::constant && value != 0)
    throw_error("pad: a fill value only goes with mode constant, got mode ", mode_name(mode), " and value ", value);
  // A fill an integer or bool tensor cannot hold (0.5, -inf) makes the result float, as tinygrad's.
  if (mode == PadMode::constant && !dtype().is_float() && !(std::isfinite(value) && value == std::trunc(value)))
    return cast(dtypes::default_float).pad(padding, mode, value);
  // Negative amounts crop. A circular border comes from the far end, which PyTorch crops first; the
  // other modes grow by the positive amounts first, then cut.
  Pairs grow, cut;
  for (auto [b, a] : padding) grow.push_back({std::max<int64_t>(b, 0), std::max<int64_t>(a, 0)});
  if (mode == PadMode::circular && grow != padding) {
    for (size_t axis = 0; axis < padding.size(); axis++)
      cut.push_back({padding[axis].first - grow[axis].first, padding[axis].second - grow[axis].second});
    return pad(cut, PadMode::constant).pad(grow, mode);  // the negative amounts alone: a crop
  }
  Tensor x = *this;
  if (mode == PadMode::constant) {
    x = x.pad(grow);
    if (value != 0 && x.shape() != shape())  // the fill in this tensor's dtype, as PyTorch's (ints stay ints)
      x = Tensor::ones(shape(), dtypes::bool_).pad(grow).where(x, Tensor::full(x.shape(), value, dtype()));
  } else {
    for (size_t axis = 0; axis < padding.size(); axis++) {
      auto [b, a] = grow[axis];
      const int64_t n = shape()[axis];
      if (mode == PadMode::reflect && (b >= n || a >= n))
        throw_error("pad: reflect padding (", b, ", ", a, ") must be less than the size ", n, " of axis ", axis);
      if (mode == PadMode::circular && (b > n || a > n))
        throw_error("pad: circular padding (", b, ", ", a, ") wraps around axis ", axis, " of size ", n, " more than once");
      std::vector<Tensor> parts;
      if (b > 0) parts.push_back(border(x, axis, b, true, mode));
      parts.push_back(x);
      if (a > 0) parts.push_back(border(x, axis, a, false, mode));
      if (parts.size() > 1) x = Tensor::cat(parts, static_cast<int>(axis));
    }
  }
  for (size_t axis = 0; axis < padding.size(); axis++) {
    auto [b, a] = padding[axis];
    const int64_t begin = -std::min<int64_t>(b, 0), end = x.shape()[axis] + std::min<int64_t>(a, 0);
    if (begin > end)
      throw_error("pad: cropping (", b, ", ", a, ") removes more than axis ", axis, "'s ", shape()[axis], " elements");
    cut.push_back({begin, end});
  }
  return x.shrink(cut);
}

}  // namespace kiln
