// Shape and movement ops: constants, reshapes, permutes, concatenation and splitting, slicing, padding.
#include <algorithm>
#include <cmath>

#include "onnx/op.h"
#include "onnx/tensor_proto.h"

namespace kiln::onnx {

namespace {

Tensor int64_tensor(const std::vector<int64_t>& values, Shape shape) {
  return Tensor::from_vector<int64_t>(values, std::move(shape));
}

std::vector<Tensor> constant(const Node& n) {
  if (const auto* t = n.tensor("value")) return {tensor_from_proto(*t, "")};
  if (n.has("value_float")) return {Tensor::full({}, n.f("value_float", 0))};
  if (n.has("value_floats")) {
    auto v = n.floats("value_floats");
    return {Tensor::from_vector<float>(v, {static_cast<int64_t>(v.size())})};
  }
  if (n.has("value_int")) return {Tensor::full({}, n.i("value_int", 0), dtypes::int64)};
  auto v = n.ints("value_ints");
  return {int64_tensor(v, {static_cast<int64_t>(v.size())})};
}
void check_constant(const NodeAttrs& n) {
  for (const char* a : {"value", "value_float", "value_floats", "value_int", "value_ints"})
    if (n.has(a)) return;
  n.fail("only numeric values (value, value_float(s), value_int(s)) are supported");
}

std::vector<Tensor> reshape(const Node& n) {
  const Tensor& x = n.in(0);
  Shape shape = n.opset() < 5 ? n.ints("shape") : n.ints_of(1);
  bool allow_zero = n.i("allowzero", 0) != 0;
  for (size_t d = 0; d < shape.size(); d++)
    if (shape[d] == 0 && !allow_zero) {
      if (static_cast<int64_t>(d) >= x.ndim()) n.fail("shape ", shape_to_string(shape), " copies a missing dim ", d);
      shape[d] = x.shape()[d];
    }
  return {x.reshape(shape)};
}

std::vector<Tensor> transpose(const Node& n) {
  const Tensor& x = n.in(0);
  std::vector<int64_t> perm = n.ints("perm");
  std::vector<int> order;
  for (auto p : perm) order.push_back(axis_of(n, p, x.ndim()));
  if (perm.empty())
    for (int64_t d = x.ndim() - 1; d >= 0; d--) order.push_back(static_cast<int>(d));
  return {x.permute(order)};
}

std::vector<Tensor> concat(const Node& n) {
  std::vector<Tensor> parts;
  for (const auto& t : n.all())
    if (t) parts.push_back(*t);
  return {Tensor::cat(parts, axis_of(n, n.i("axis", 0), n.in(0).ndim()))};
}

std::vector<Tensor> split(const Node& n) {
  const Tensor& x = n.in(0);
  int axis = axis_of(n, n.i("axis", 0), x.ndim());
  std::vector<int64_t> sizes = n.opset() < 13 ? n.ints("split") : (n.opt(1) ? n.ints_of(1) : std::vector<int64_t>{});
  if (sizes.empty()) {  // equal parts, one per output; the last one smaller if they do not divide
    int64_t parts = n.has("num_outputs") ? n.i("num_outputs", 1) : n.num_outputs();
    int64_t dim = x.shape()[axis], each = (dim + parts - 1) / parts;
    for (int64_t k = 0; k < parts; k++) sizes.push_back(std::max<int64_t>(0, std::min(each, dim - k * each)));
  }
  return x.split(sizes, axis);
}

// x[begin:end:step] along one axis, with begin and end already clamped as ONNX's Slice says.
Tensor slice_axis(Tensor x, int axis, int64_t begin, int64_t end, int64_t step) {
  int64_t dim = x.shape()[axis];
  if (step < 0) {  // walk the flipped axis forward
    x = x.flip({axis});
    begin = dim - 1 - begin, end = dim - 1 - end, step = -step;
  }
  int64_t count = end > begin ? (end - begin + step - 1) / step : 0;
  Pairs bounds(x.ndim());
  for (int64_t d = 0; d < x.ndim(); d++) bounds[d] = {0, x.shape()[d]};
  bounds[axis] = {begin, std::min(dim, begin + count * step)};
  x = x.shrink(bounds);
  if (step == 1 || count == 0) return x;
  // every step-th element: pad the axis to count * step, split it into (count, step), keep column 0
  std::vector<std::optional<int64_t>> to(x.ndim());
  to[axis] = count * step;
  x = x.pad_to(to);
  Shape split_shape = x.shape();
  split_shape[axis] = count;
  split_shape.insert(split_shape.begin() + axis + 1, step);
  x = x.reshape(split_shape);
  Pairs keep(x.ndim());
  for (int64_t d = 0; d < x.ndim(); d++) keep[d] = {0, x.shape()[d]};
  keep[axis + 1] = {0, 1};
  return x.shrink(keep).squeeze(axis + 1);
}

std::vector<Tensor> slice(const Node& n) {
  Tensor x = n.in(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (n.opset() < 10) {
    starts = n.ints("starts"), ends = n.ints("ends"), axes = n.ints("axes");
  } else {
    starts = n.ints_of(1), ends = n.ints_of(2);
    if (n.opt(3)) axes = n.ints_of(3);
    if (n.opt(4)) steps = n.ints_of(4);
  }
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); k++) axes.push_back(static_cast<int64_t>(k));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    n.fail("starts, ends, axes and steps must have one value per sliced axis");
  for (size_t k = 0; k < starts.size(); k++) {
    int axis = axis_of(n, axes[k], x.ndim());
    int64_t dim = x.shape()[axis], step = steps[k];
    if (step == 0) n.fail("a step is 0");
    auto clamp = [&](int64_t v, int64_t lo, int64_t hi) { return std::clamp(v < 0 ? v + dim : v, lo, hi); };
    int64_t begin = step > 0 ? clamp(starts[k], 0, dim) : clamp(starts[k], 0, dim - 1);
    int64_t end = step > 0 ? clamp(ends[k], 0, dim) : clamp(ends[k], -1, dim - 1);
    x = slice_axis(x, axis, begin, end, step);
  }
  return {x};
}

// Axes of Squeeze/Unsqueeze: an attribute before opset 13, then input 1.
std::vector<int64_t> squeeze_axes(const Node& n) {
  if (n.opset() < 13) return n.ints("axes");
  return n.opt(1) ? n.ints_of(1) : std::vector<int64_t>{};
}

std::vector<Tensor> squeeze(const Node& n) {
  const Tensor& x = n.in(0);
  std::vector<bool> drop(x.ndim());
  auto axes = squeeze_axes(n);
  for (auto a : axes) drop[axis_of(n, a, x.ndim())] = true;
  Shape shape;
  for (int64_t d = 0; d < x.ndim(); d++) {
    if (axes.empty() && x.shape()[d] == 1) continue;
    if (drop[d] && x.shape()[d] != 1) n.fail("axis ", d, " has size ", x.shape()[d], ", not 1");
    if (!drop[d]) shape.push_back(x.shape()[d]);
  }
  return {x.reshape(shape)};
}

std::vector<Tensor> unsqueeze(const Node& n) {
  const Tensor& x = n.in(0);
  auto axes = squeeze_axes(n);
  int64_t rank = x.ndim() + static_cast<int64_t>(axes.size());
  std::vector<bool> added(rank);
  for (auto a : axes) added[axis_of(n, a, rank)] = true;
  Shape shape;
  for (int64_t d = 0, src = 0; d < rank; d++) shape.push_back(added[d] ? 1 : x.shape()[src++]);
  return {x.reshape(shape)};
}

std::vector<Tensor> expand(const Node& n) {
  const Tensor& x = n.in(0);
  Shape want = n.ints_of(1), have = x.shape();
  size_t rank = std::max(want.size(), have.size());
  want.insert(want.begin(), rank - want.size(), 1);
  have.insert(have.begin(), rank - have.size(), 1);
  Shape out(rank);
  for (size_t d = 0; d < rank; d++) {  // broadcast both ways, as NumPy's
    if (want[d] != have[d] && want[d] != 1 && have[d] != 1)
      n.fail("cannot broadcast ", shape_to_string(x.shape()), " to ", shape_to_string(n.ints_of(1)));
    out[d] = have[d] == 1 ? want[d] : have[d];
  }
  return {x.reshape(have).expand(out)};
}

std::vector<Tensor> pad(const Node& n) {
  const Tensor& x = n.in(0);
  std::vector<int64_t> pads = n.opset() < 11 ? n.ints("pads") : n.ints_of(1);
  double value = n.opset() < 11 ? n.f("value", 0) : (n.opt(2) ? n.scalar_of(2) : 0.0);
  std::vector<int64_t> axes;
  if (n.opt(3)) {
    for (auto a : n.ints_of(3)) axes.push_back(axis_of(n, a, x.ndim()));
  } else {
    for (int64_t d = 0; d < x.ndim(); d++) axes.push_back(d);
  }
  if (pads.size() != 2 * axes.size()) n.fail("pads has ", pads.size(), " values, expected ", 2 * axes.size());
  Pairs padding(x.ndim(), {0, 0});
  for (size_t k = 0; k < axes.size(); k++) padding[axes[k]] = {pads[k], pads[k + axes.size()]};
  std::string mode = n.s("mode", "constant");
  PadMode m = mode == "reflect" ? PadMode::reflect : mode == "edge" ? PadMode::replicate : PadMode::constant;
  return {x.pad(padding, m, value)};
}
void check_pad(const NodeAttrs& n) { check_string(n, "mode", "constant", {"constant", "reflect", "edge"}); }

std::vector<Tensor> tile(const Node& n) { return {n.in(0).repeat(n.ints_of(1))}; }

std::vector<Tensor> flatten(const Node& n) {
  const Tensor& x = n.in(0);
  int64_t axis = n.i("axis", 1);
  if (axis < 0) axis += x.ndim();
  if (axis < 0 || axis > x.ndim()) n.fail("axis ", n.i("axis", 1), " is out of range for rank ", x.ndim());
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; d++) outer *= x.shape()[d];
  return {x.reshape({outer, outer == 0 ? 0 : x.numel() / outer})};
}

std::vector<Tensor> shape(const Node& n) {
  const Shape& s = n.in(0).shape();
  int64_t rank = static_cast<int64_t>(s.size());
  auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  int64_t start = clamp(n.i("start", 0)), end = clamp(n.i("end", rank));
  std::vector<int64_t> dims(s.begin() + start, s.begin() + std::max(start, end));
  return {int64_tensor(dims, {static_cast<int64_t>(dims.size())})};
}

std::vector<Tensor> size(const Node& n) { return {int64_tensor({n.in(0).numel()}, {})}; }

std::vector<Tensor> constant_of_shape(const Node& n) {
  Shape shape = n.ints_of(0);
  const auto* value = n.tensor("value");
  if (!value) return {Tensor::zeros(shape)};
  Tensor v = tensor_from_proto(*value, "");
  if (v.numel() != 1) n.fail("value must hold one element");
  return {v.reshape({}).expand(shape).contiguous()};
}

std::vector<Tensor> range(const Node& n) {
  DType dt = n.in(0).dtype();
  double start = n.scalar_of(0), limit = n.scalar_of(1), delta = n.scalar_of(2);
  int64_t count = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((limit - start) / delta)));
  if (count == 0) return {Tensor::zeros({0}, dt)};
  return {Tensor::arange(0, static_cast<double>(count), 1, dt) * n.in(2).reshape({}) + n.in(0).reshape({})};
}

std::vector<Tensor> trilu(const Node& n) {
  int64_t k = n.opt(1) ? n.ints_of(1).at(0) : 0;
  return {n.i("upper", 1) ? n.in(0).triu(k) : n.in(0).tril(k)};
}

std::vector<Tensor> depth_to_space(const Node& n) {
  const Tensor& x = n.in(0);
  if (x.ndim() != 4) n.fail("expects a 4-D input, got shape ", shape_to_string(x.shape()));
  int64_t b = n.i("blocksize", 1), N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  bool crd = n.s("mode", "DCR") == "CRD";
  Tensor t = crd ? x.reshape({N, C / (b * b), b, b, H, W}).permute({0, 1, 4, 2, 5, 3})
                 : x.reshape({N, b, b, C / (b * b), H, W}).permute({0, 3, 4, 1, 5, 2});
  return {t.reshape({N, C / (b * b), H * b, W * b})};
}
void check_depth_to_space(const NodeAttrs& n) { check_string(n, "mode", "DCR", {"DCR", "CRD"}); }

std::vector<Tensor> space_to_depth(const Node& n) {
  const Tensor& x = n.in(0);
  if (x.ndim() != 4) n.fail("expects a 4-D input, got shape ", shape_to_string(x.shape()));
  int64_t b = n.i("blocksize", 1), N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  return {x.reshape({N, C, H / b, b, W / b, b}).permute({0, 3, 5, 1, 2, 4}).reshape({N, C * b * b, H / b, W / b})};
}

std::vector<Tensor> eye_like(const Node& n) {
  const Tensor& x = n.in(0);
  if (x.ndim() != 2) n.fail("expects a 2-D input, got shape ", shape_to_string(x.shape()));
  DType dt = n.has("dtype") ? dtype_from_onnx(static_cast<int>(n.i("dtype", 1))).value_or(x.dtype()) : x.dtype();
  Tensor rows = Tensor::arange(0, static_cast<double>(x.shape()[0]), 1, dtypes::int64).reshape({-1, 1});
  rows = rows + n.i("k", 0);
  Tensor cols = Tensor::arange(0, static_cast<double>(x.shape()[1]), 1, dtypes::int64).reshape({1, -1});
  return {rows.eq(cols).cast(dt)};
}

}  // namespace

OpTable shape_ops() {
  return {
      {"Constant", constant, check_constant},
      {"Reshape", reshape},
      {"Transpose", transpose},
      {"Concat", concat},
      {"Split", split},
      {"Slice", slice},
      {"Squeeze", squeeze},
      {"Unsqueeze", unsqueeze},
      {"Expand", expand},
      {"Pad", pad, check_pad},
      {"Tile", tile},
      {"Flatten", flatten},
      {"Shape", shape},
      {"Size", size},
      {"ConstantOfShape", constant_of_shape},
      {"Range", range},
      {"Trilu", trilu},
      {"DepthToSpace", depth_to_space, check_depth_to_space},
      {"SpaceToDepth", space_to_depth},
      {"EyeLike", eye_like},
  };
}

}  // namespace kiln::onnx
