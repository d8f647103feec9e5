// Neural-network layers: normalizations, softmax family, Gemm/MatMul, Dropout, LRN.
#include "onnx/op.h"

namespace kiln::onnx {

namespace {

// A per-channel parameter (C,) shaped to broadcast against x's channel axis 1.
Tensor per_channel(const Tensor& p, const Tensor& x) {
  Shape shape(x.ndim(), 1);
  shape[1] = p.numel();
  return p.reshape(shape);
}

std::vector<Tensor> batch_norm(const Node& n) {
  const Tensor& x = n.in(0);
  Tensor mean = per_channel(n.in(3), x), var = per_channel(n.in(4), x);
  std::vector<Tensor> running;
  if (n.i("training_mode", 0)) {  // normalize with the batch's statistics, and update the running ones
    std::vector<int> axes{0};
    for (int d = 2; d < x.ndim(); d++) axes.push_back(d);
    auto [batch_var, batch_mean] = x.var_mean(axes, true, 0);
    Tensor momentum = mean.const_like(n.f("momentum", 0.9)), rest = mean.const_like(1 - n.f("momentum", 0.9));
    running = {(mean * momentum + batch_mean * rest).reshape({-1}), (var * momentum + batch_var * rest).reshape({-1})};
    mean = batch_mean, var = batch_var;
  }
  Tensor invstd = (var + var.const_like(n.f("epsilon", 1e-5))).rsqrt();
  Tensor y = (x - mean) * invstd * per_channel(n.in(1), x) + per_channel(n.in(2), x);
  running.insert(running.begin(), y);
  return running;
}
void check_batch_norm(const NodeAttrs& n) {
  if (n.opset() < 9 && n.i("spatial", 1) == 0) n.fail("spatial=0 is not supported");
  if (n.opset() < 14 && n.num_outputs() > 1) n.fail("the training outputs of opsets before 14 are not supported");
}

std::vector<Tensor> instance_norm(const Node& n) {
  const Tensor& x = n.in(0);
  std::vector<int> axes;
  for (int d = 2; d < x.ndim(); d++) axes.push_back(d);
  auto [var, mean] = x.var_mean(axes, true, 0);
  Tensor y = (x - mean) * (var + var.const_like(n.f("epsilon", 1e-5))).rsqrt();
  return {y * per_channel(n.in(1), x) + per_channel(n.in(2), x)};
}

std::vector<Tensor> layer_norm(const Node& n) {
  const Tensor& x = n.in(0);
  int axis = axis_of(n, n.i("axis", -1), x.ndim());
  std::vector<int> axes;
  for (int d = axis; d < x.ndim(); d++) axes.push_back(d);
  // stash_type 1: the statistics in float32 (ONNX's default), whatever x's dtype
  Tensor xs = n.i("stash_type", 1) == 1 && x.dtype() != dtypes::float64 ? x.cast(dtypes::float32) : x;
  auto [var, mean] = xs.var_mean(axes, true, 0);
  Tensor invstd = (var + var.const_like(n.f("epsilon", 1e-5))).rsqrt();
  Tensor y = ((xs - mean) * invstd).cast(x.dtype()) * n.in(1);
  if (n.opt(2)) y = y + *n.opt(2);
  return {y, mean, invstd};
}

std::vector<Tensor> mean_variance_norm(const Node& n) {
  const Tensor& x = n.in(0);
  std::vector<int> axes;
  for (auto a : n.ints("axes", {0, 2, 3})) axes.push_back(axis_of(n, a, x.ndim()));
  auto [var, mean] = x.var_mean(axes, true, 0);
  return {(x - mean) / (var.sqrt() + var.const_like(1e-9))};
}

// Softmax, LogSoftmax and Hardmax: before opset 13 the input is seen as 2-D, (axis's prefix, the
// rest), and normalized over the rest; since 13 along the one axis.
using AxisFn = Tensor (*)(const Tensor&, int);
OpFn softmax_like(AxisFn f) {
  return [f](const Node& n) {
    const Tensor& x = n.in(0);
    if (n.opset() >= 13) return std::vector<Tensor>{f(x, axis_of(n, n.i("axis", -1), x.ndim()))};
    int64_t axis = n.i("axis", 1);
    if (axis < 0) axis += x.ndim();
    if (axis < 0 || axis > x.ndim()) n.fail("axis ", n.i("axis", 1), " is out of range for rank ", x.ndim());
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; d++) outer *= x.shape()[d];
    return std::vector<Tensor>{f(x.reshape({outer, x.numel() / std::max<int64_t>(outer, 1)}), 1).reshape(x.shape())};
  };
}
Tensor hardmax(const Tensor& x, int axis) {  // one-hot of the first maximum
  Shape class_shape(x.ndim(), 1);
  class_shape[axis] = x.shape()[axis];
  Tensor classes = Tensor::arange(0, static_cast<double>(x.shape()[axis]), 1, dtypes::int32).reshape(class_shape);
  return x.argmax(axis, true).cast(dtypes::int32).eq(classes).cast(x.dtype());
}

std::vector<Tensor> gemm(const Node& n) {
  Tensor a = n.i("transA", 0) ? n.in(0).transpose(0, 1) : n.in(0);
  Tensor b = n.i("transB", 0) ? n.in(1).transpose(0, 1) : n.in(1);
  Tensor y = a.matmul(b);
  double alpha = n.f("alpha", 1), beta = n.f("beta", 1);
  if (alpha != 1) y = y * y.const_like(alpha);
  if (auto c = n.opt(2)) y = y + (beta == 1 ? *c : *c * c->const_like(beta));
  return {y};
}

std::vector<Tensor> matmul(const Node& n) { return {n.in(0).matmul(n.in(1))}; }

// Inference only: the input passes through, the mask is all true.
std::vector<Tensor> dropout(const Node& n) {
  const Tensor& x = n.in(0);
  if (n.opset() >= 12 && n.opt(2) && n.scalar_of(2) != 0 && (!n.opt(1) || n.scalar_of(1) != 0))
    n.fail("training_mode with a nonzero ratio is not supported");
  return {x, Tensor::full(x.shape(), true, dtypes::bool_)};
}

std::vector<Tensor> lrn(const Node& n) {
  const Tensor& x = n.in(0);
  int64_t size = n.i("size", 1), before = (size - 1) / 2, after = size - 1 - before;
  double alpha = n.f("alpha", 1e-4), beta = n.f("beta", 0.75), bias = n.f("bias", 1);
  Pairs pad(x.ndim(), {0, 0});
  pad[1] = {before, after};
  Tensor sq = (x * x).pad(pad);
  Pairs window(x.ndim());
  for (int64_t d = 0; d < x.ndim(); d++) window[d] = {0, x.shape()[d]};
  Tensor sum = x.zeros_like();
  for (int64_t k = 0; k < size; k++) {  // the channel window, one shifted slice at a time
    window[1] = {k, k + x.shape()[1]};
    sum = sum + sq.shrink(window);
  }
  return {x / (sum * x.const_like(alpha / static_cast<double>(size)) + x.const_like(bias)).pow(beta)};
}

}  // namespace

OpTable nn_ops() {
  return {
      {"BatchNormalization", batch_norm, check_batch_norm},
      {"InstanceNormalization", instance_norm},
      {"LayerNormalization", layer_norm},
      {"MeanVarianceNormalization", mean_variance_norm},
      {"Softmax", softmax_like([](const Tensor& x, int axis) { return x.softmax(axis); })},
      {"LogSoftmax", softmax_like([](const Tensor& x, int axis) { return x.log_softmax(axis); })},
      {"Hardmax", softmax_like(hardmax)},
      {"Gemm", gemm},
      {"MatMul", matmul},
      {"Dropout", dropout},
      {"LRN", lrn},
  };
}

}  // namespace kiln::onnx
