// Movement ops: checked here with clear messages, then recorded as UOps. They are free: the
// scheduler turns them into index arithmetic.
#include <algorithm>
#include <numeric>

#include "kiln/error.h"
#include "tensor/tensor_impl.h"

namespace kiln {

int axis_index(int axis, int64_t ndim, std::string_view op, const Shape& shape) {
  const int n = static_cast<int>(ndim);
  if (n == 0) throw_index_error(op, ": axis ", axis, " is out of range: shape () has no axes");
  if (axis < -n || axis >= n)
    throw_index_error(op, ": axis ", axis, " is out of range for shape ", shape_to_string(shape), ": expected ", -n,
                      " to ", n - 1);
  return axis < 0 ? axis + n : axis;
}

bool implicit_axis(const Tensor& t, int axis) { return t.ndim() == 0 && (axis == 0 || axis == -1); }

int Tensor::normalize_axis(int axis, std::string_view op) const { return axis_index(axis, ndim(), op, shape()); }

Shape resolve_shape(Shape shape, int64_t numel, const std::string& what) {
  const Shape requested = shape;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); i++) {
    if (shape[i] == -1 && infer < 0) infer = static_cast<int>(i);
    else if (shape[i] < 0) throw_error(what, " to ", shape_to_string(requested), ": at most one dimension may be -1, others >= 0");
    else known *= shape[i];
  }
  if (infer >= 0) shape[infer] = known != 0 && numel % known == 0 ? numel / known : -1;
  if ((infer >= 0 && shape[infer] < 0) || kiln::prod(shape) != numel)
    throw_value_error(what, " to ", shape_to_string(requested), ": the element counts differ");
  return shape;
}

Tensor Tensor::reshape(Shape to) const {
  to = resolve_shape(std::move(to), numel(),
                     "reshape: cannot reshape " + shape_to_string(shape()) + " (" + std::to_string(numel()) + " elements)");
  if (to == shape()) return *this;
  return Tensor(UOp::make(Ops::RESHAPE, dtype(), {uop()}, to));
}

Tensor Tensor::permute(std::vector<int> order) const {
  if (static_cast<int64_t>(order.size()) != ndim())
    throw_error("permute: expected ", ndim(), " axes for shape ", shape_to_string(shape()), ", got ", order.size());
  Shape perm;
  std::vector<bool> seen(order.size(), false);
  for (int a : order) {
    int axis = normalize_axis(a, "permute");
    if (seen[axis]) throw_error("permute: axis ", a, " appears twice");
    seen[axis] = true;
    perm.push_back(axis);
  }
  Shape identity(perm.size());
  std::iota(identity.begin(), identity.end(), 0);
  if (perm == identity) return *this;
  return Tensor(UOp::make(Ops::PERMUTE, dtype(), {uop()}, perm));
}

Tensor Tensor::expand(Shape to) const {
  if (to.size() < shape().size())
    throw_error("expand: cannot expand ", shape_to_string(shape()), " to fewer dims ", shape_to_string(to));
  const Shape requested = to;
  const size_t added = to.size() - shape().size();  // new leading axes, as NumPy broadcasting
  Shape from(added, 1);
  from.insert(from.end(), shape().begin(), shape().end());
  for (size_t i = 0; i < to.size(); i++) {
    if (to[i] == -1 && i >= added) to[i] = from[i];  // -1 keeps an existing axis; a new one has nothing to keep
    else if (to[i] < 0)
      throw_error("expand: cannot expand ", shape_to_string(shape()), " to ", shape_to_string(requested), ": axis ", i,
                  i < added ? " is new and needs a size >= 0" : " needs a size >= 0 (or -1 to keep it)", ", got ",
                  to[i]);
    if (from[i] != to[i] && from[i] != 1)
      throw_error("expand: cannot expand ", shape_to_string(shape()), " to ", shape_to_string(requested), " (axis ",
                  i, ": ", from[i], " is not 1)");
  }
  Tensor base = reshape(from);
  if (to == from) return base;
  return Tensor(UOp::make(Ops::EXPAND, dtype(), {base.uop()}, to));
}

Tensor Tensor::pad(std::vector<std::pair<int64_t, int64_t>> padding) const {
  if (static_cast<int64_t>(padding.size()) != ndim())
    throw_error("pad: expected ", ndim(), " (before, after) pairs for shape ", shape_to_string(shape()), ", got ",
                padding.size());
  bool any = false;
  for (auto [b, a] : padding) {
    if (b < 0 || a < 0) throw_error("pad: padding must be >= 0, got (", b, ", ", a, ")");
    any |= b > 0 || a > 0;
  }
  if (!any) return *this;
  return Tensor(UOp::make(Ops::PAD, dtype(), {uop()}, Pairs(padding.begin(), padding.end())));
}

Tensor Tensor::shrink(std::vector<std::pair<int64_t, int64_t>> bounds) const {
  if (static_cast<int64_t>(bounds.size()) != ndim())
    throw_error("shrink: expected ", ndim(), " [begin, end) pairs for shape ", shape_to_string(shape()), ", got ",
                bounds.size());
  bool any = false;
  for (size_t i = 0; i < bounds.size(); i++) {
    auto [b, e] = bounds[i];
    if (b < 0 || e > shape()[i] || b > e)
      throw_error("shrink: [", b, ", ", e, ") is out of bounds for axis ", i, " of size ", shape()[i]);
    any |= b != 0 || e != shape()[i];
  }
  if (!any) return *this;
  return Tensor(UOp::make(Ops::SHRINK, dtype(), {uop()}, Pairs(bounds.begin(), bounds.end())));
}

namespace {

// The sizes of shrink_to / pad_to, one per axis (nullopt: the axis's own), each checked by `fits`.
template <class Fits>
Shape sizes_to(const Tensor& x, const std::vector<std::optional<int64_t>>& sizes, std::string_view op,
               std::string_view direction, Fits fits) {
  if (static_cast<int64_t>(sizes.size()) != x.ndim())
    throw_error(op, ": expected ", x.ndim(), " sizes for shape ", shape_to_string(x.shape()), ", got ",
                sizes.size());
  Shape out;
  for (size_t i = 0; i < sizes.size(); i++) {
    const int64_t have = x.shape()[i], want = sizes[i].value_or(have);
    if (!fits(want, have))
      throw_error(op, ": size ", want, " for axis ", i, " of shape ", shape_to_string(x.shape()), " must be ",
                  direction, " ", have);
    out.push_back(want);
  }
  return out;
}

}  // namespace

Tensor Tensor::shrink_to(const std::vector<std::optional<int64_t>>& sizes) const {
  Shape to = sizes_to(*this, sizes, "shrink_to", "between 0 and", [](int64_t want, int64_t have) {
    return want >= 0 && want <= have;
  });
  Pairs bounds;
  for (int64_t n : to) bounds.push_back({0, n});
  return shrink(bounds);
}

Tensor Tensor::pad_to(const std::vector<std::optional<int64_t>>& sizes, double value) const {
  Shape to = sizes_to(*this, sizes, "pad_to", "at least", [](int64_t want, int64_t have) { return want >= have; });
  Pairs padding;
  for (size_t i = 0; i < to.size(); i++) padding.push_back({0, to[i] - shape()[i]});
  return pad(padding, PadMode::constant, value);
}

Tensor Tensor::flip(std::vector<int> axes) const {
  Shape flipped;
  for (int a : axes) {
    int axis = normalize_axis(a, "flip");
    if (std::find(flipped.begin(), flipped.end(), axis) != flipped.end())
      throw_error("flip: axis ", a, " appears twice");
    if (shape()[axis] > 1) flipped.push_back(axis);
  }
  if (flipped.empty()) return *this;
  std::sort(flipped.begin(), flipped.end());
  return Tensor(UOp::make(Ops::FLIP, dtype(), {uop()}, flipped));
}

Tensor Tensor::transpose(int a, int b) const {
  std::vector<int> order(static_cast<size_t>(ndim()));
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[normalize_axis(a, "transpose")], order[normalize_axis(b, "transpose")]);
  return permute(order);
}

Tensor Tensor::flatten(int start_dim, int end_dim) const {
  if (ndim() == 0) return reshape({1});
  int s = normalize_axis(start_dim, "flatten"), e = normalize_axis(end_dim, "flatten");
  if (s > e) throw_error("flatten: start_dim ", start_dim, " is after end_dim ", end_dim);
  Shape to(shape().begin(), shape().begin() + s);
  to.push_back(-1);
  to.insert(to.end(), shape().begin() + e + 1, shape().end());
  if (numel() == 0) {  // -1 can't be inferred from 0 elements
    int64_t p = 1;
    for (int i = s; i <= e; i++) p *= shape()[i];
    to[s] = p;
  }
  return reshape(to);
}

Tensor Tensor::squeeze(int axis) const {
  if (implicit_axis(*this, axis)) return *this;
  int a = normalize_axis(axis, "squeeze");
  if (shape()[a] != 1) return *this;  // as PyTorch: squeezing a non-1 axis does nothing
  Shape to = shape();
  to.erase(to.begin() + a);
  return reshape(to);
}

Tensor Tensor::unsqueeze(int axis) const {
  int a = axis_index(axis, ndim() + 1, "unsqueeze", shape());  // the new axis may also go last
  Shape to = shape();
  to.insert(to.begin() + a, 1);
  return reshape(to);
}

Tensor Tensor::contiguous() const { return Tensor(UOp::make(Ops::CONTIGUOUS, dtype(), {uop()})); }

}  // namespace kiln
