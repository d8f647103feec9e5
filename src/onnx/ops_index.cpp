// Indexing ops: gathers and scatters, one-hot, top-k, nonzero, compress, einsum.
#include "onnx/op.h"

namespace kiln::onnx {

namespace {

// ONNX indices may count from the end of the axis they index.
Tensor wrap_negative(const Tensor& idx, int64_t dim) {
  return idx.lt(idx.const_like(0)).where(idx + idx.const_like(static_cast<double>(dim)), idx);
}

std::vector<Tensor> gather(const Node& n) {
  const Tensor &x = n.in(0), &idx = n.in(1);
  int axis = axis_of(n, n.i("axis", 0), x.ndim());
  Tensor flat = wrap_negative(idx, x.shape()[axis]).reshape({-1});
  Shape shape(x.shape().begin(), x.shape().begin() + axis);
  shape.insert(shape.end(), idx.shape().begin(), idx.shape().end());
  shape.insert(shape.end(), x.shape().begin() + axis + 1, x.shape().end());
  return {x.index_select(axis, flat).reshape(shape)};
}

std::vector<Tensor> gather_elements(const Node& n) {
  const Tensor &x = n.in(0), &idx = n.in(1);
  int axis = axis_of(n, n.i("axis", 0), x.ndim());
  return {x.gather(axis, wrap_negative(idx, x.shape()[axis]))};
}

// src placed into x at index along axis, combined as the reduction attribute says.
Tensor scatter(const Node& n, const Tensor& x, int axis, const Tensor& index, const Tensor& src) {
  std::string reduction = n.s("reduction", "none");
  if (reduction == "none") return x.scatter(axis, index, src);
  std::string_view reduce = reduction == "add"   ? "sum"
                            : reduction == "mul" ? "prod"
                            : reduction == "max" ? "amax"
                                                 : "amin";
  return x.scatter_reduce(axis, index, src, reduce);
}

std::vector<Tensor> scatter_elements(const Node& n) {
  const Tensor &x = n.in(0), &idx = n.in(1), &src = n.in(2);
  int axis = axis_of(n, n.i("axis", 0), x.ndim());
  Tensor index = wrap_negative(idx, x.shape()[axis]);
  return {scatter(n, x, axis, index, src)};
}
void check_scatter(const NodeAttrs& n) { check_string(n, "reduction", "none", {"none", "add", "mul", "max", "min"}); }

// GatherND/ScatterND: the last axis of `indices` (k long) addresses data's axes batch_dims ...
// batch_dims + k - 1; returned as one index into data reshaped to (batch * addressed, rest...).
std::pair<Tensor, Shape> nd_rows(const Node& n, const Tensor& data, const Tensor& indices, int64_t batch_dims) {
  int64_t k = indices.shape().back();
  if (batch_dims + k > data.ndim()) n.fail("indices address ", k, " axes past ", batch_dims, " of rank ", data.ndim());
  Tensor idx = indices.cast(dtypes::int64);
  Tensor row = idx.zeros_like().sum(-1);
  int64_t addressed = 1;
  for (int64_t j = k - 1; j >= 0; j--) {  // row-major over the addressed axes
    int64_t dim = data.shape()[batch_dims + j];
    Pairs pick(idx.ndim());
    for (int64_t d = 0; d < idx.ndim(); d++) pick[d] = {0, idx.shape()[d]};
    pick.back() = {j, j + 1};
    row = row + wrap_negative(idx.shrink(pick).squeeze(-1), dim) * addressed;
    addressed *= dim;
  }
  int64_t batch = 1;
  for (int64_t d = 0; d < batch_dims; d++) batch *= data.shape()[d];
  if (batch_dims > 0) {  // each batch's rows follow the previous batch's
    Shape batch_shape(idx.shape().begin(), idx.shape().begin() + batch_dims);
    batch_shape.resize(row.ndim(), 1);
    row = row + Tensor::arange(0, static_cast<double>(batch), 1, dtypes::int64).reshape(batch_shape) * addressed;
  }
  Shape flat{batch * addressed};
  flat.insert(flat.end(), data.shape().begin() + batch_dims + k, data.shape().end());
  return {row, flat};
}

std::vector<Tensor> gather_nd(const Node& n) {
  const Tensor &data = n.in(0), &indices = n.in(1);
  int64_t batch_dims = n.i("batch_dims", 0);
  auto [row, flat] = nd_rows(n, data, indices, batch_dims);
  Shape out(indices.shape().begin(), indices.shape().end() - 1);
  out.insert(out.end(), flat.begin() + 1, flat.end());
  return {data.reshape(flat).index_select(0, row.reshape({-1})).reshape(out)};
}

std::vector<Tensor> scatter_nd(const Node& n) {
  const Tensor &data = n.in(0), &indices = n.in(1), &updates = n.in(2);
  auto [row, flat] = nd_rows(n, data, indices, 0);
  Shape src_shape{row.numel()};
  src_shape.insert(src_shape.end(), flat.begin() + 1, flat.end());
  Shape row_shape(src_shape.size(), 1);
  row_shape[0] = row.numel();
  Tensor index = row.reshape(row_shape).expand(src_shape), src = updates.reshape(src_shape);
  return {scatter(n, data.reshape(flat), 0, index, src).reshape(data.shape())};
}

std::vector<Tensor> one_hot(const Node& n) {
  const Tensor &idx = n.in(0), &values = n.in(2);
  auto depth = static_cast<int64_t>(n.scalar_of(1));
  int64_t rank = idx.ndim() + 1;
  int axis = axis_of(n, n.i("axis", -1), rank);
  Shape class_shape(rank, 1);
  class_shape[axis] = depth;
  Tensor classes = Tensor::arange(0, static_cast<double>(depth), 1, dtypes::int64).reshape(class_shape);
  Tensor hot = wrap_negative(idx.cast(dtypes::int64), depth).unsqueeze(axis).eq(classes);
  Tensor flat = values.reshape({-1});
  Tensor off = flat.shrink({{0, 1}}).reshape({}), on = flat.shrink({{1, 2}}).reshape({});
  return {hot.where(on, off)};
}

std::vector<Tensor> topk(const Node& n) {
  const Tensor& x = n.in(0);
  int64_t k = n.opset() < 10 ? n.i("k", 1) : n.ints_of(1).at(0);
  int axis = axis_of(n, n.i("axis", -1), x.ndim());
  auto [values, indices] = x.topk(k, axis, n.i("largest", 1) != 0, true);
  return {values, indices.cast(dtypes::int64)};
}

std::vector<Tensor> nonzero(const Node& n) {
  const Tensor& x = n.in(0);
  if (x.ndim() == 0) n.fail("a 0-d input is not supported");
  return {x.nonzero().cast(dtypes::int64).transpose(0, 1)};
}

std::vector<Tensor> compress(const Node& n) {
  Tensor x = n.in(0);
  auto keep = n.in(1).cast(dtypes::bool_).reshape({-1}).to_vector<bool>();
  int axis = 0;
  if (n.has("axis")) {
    axis = axis_of(n, n.i("axis", 0), x.ndim());
  } else {
    x = x.reshape({-1});
  }
  std::vector<int64_t> chosen;
  for (size_t k = 0; k < keep.size() && static_cast<int64_t>(k) < x.shape()[axis]; k++)
    if (keep[k]) chosen.push_back(static_cast<int64_t>(k));
  auto count = static_cast<int64_t>(chosen.size());
  return {x.index_select(axis, Tensor::from_vector<int64_t>(chosen, {count}))};
}

// Each batch entry's first seq_lens[b] elements along the time axis reversed, the rest kept.
std::vector<Tensor> reverse_sequence(const Node& n) {
  const Tensor& x = n.in(0);
  int time = axis_of(n, n.i("time_axis", 0), x.ndim()), batch = axis_of(n, n.i("batch_axis", 1), x.ndim());
  int64_t steps = x.shape()[time];
  Shape t_shape(x.ndim(), 1), b_shape(x.ndim(), 1);
  t_shape[time] = steps, b_shape[batch] = x.shape()[batch];
  Tensor t = Tensor::arange(0, static_cast<double>(steps), 1, dtypes::int64).reshape(t_shape);
  Tensor len = n.in(1).cast(dtypes::int64).reshape(b_shape);
  Tensor source = t.lt(len).where(len - t - 1, t).expand(x.shape());
  return {x.gather(time, source)};
}

std::vector<Tensor> einsum(const Node& n) {
  std::string eq;
  for (char ch : n.s("equation", ""))
    if (ch != ' ') eq += ch;
  std::vector<Tensor> operands;
  for (const auto& t : n.all()) operands.push_back(*t);
  return {Tensor::einsum(eq, operands)};
}

}  // namespace

OpTable index_ops() {
  return {
      {"Gather", gather},
      {"GatherElements", gather_elements},
      {"ScatterElements", scatter_elements, check_scatter},
      {"Scatter", scatter_elements, check_scatter},
      {"GatherND", gather_nd},
      {"ScatterND", scatter_nd, check_scatter},
      {"OneHot", one_hot},
      {"TopK", topk},
      {"NonZero", nonzero},
      {"Compress", compress},
      {"ReverseSequence", reverse_sequence},
      {"Einsum", einsum},
  };
}

}  // namespace kiln::onnx
