// Sliding-window ops: Conv, ConvTranspose and the pools, with ONNX's padding rules (pads, auto_pad).
#include "onnx/op.h"

namespace kiln::onnx {

namespace {

// kernel_shape, strides, dilations and (before, after) pads of a node over `x`'s spatial axes.
struct Window {
  Shape kernel, strides, dilations;
  Pairs pads;
};

Window window(const Node& n, const Tensor& x, Shape kernel) {
  size_t k = kernel.size();
  if (x.ndim() != static_cast<int64_t>(k) + 2)
    n.fail("expects an input of rank ", k + 2, ", got shape ", shape_to_string(x.shape()));
  Window w{kernel, n.ints("strides", Shape(k, 1)), n.ints("dilations", Shape(k, 1)), Pairs(k, {0, 0})};
  std::vector<int64_t> pads = n.ints("pads", std::vector<int64_t>(2 * k, 0));
  std::string auto_pad = n.s("auto_pad", "NOTSET");
  for (size_t d = 0; d < k; d++) {
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t in = x.shape()[d + 2], out = (in + w.strides[d] - 1) / w.strides[d];
      int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[d] + (kernel[d] - 1) * w.dilations[d] + 1 - in);
      int64_t small = total / 2;
      w.pads[d] = auto_pad == "SAME_UPPER" ? std::pair{small, total - small} : std::pair{total - small, small};
    } else if (auto_pad == "NOTSET") {
      w.pads[d] = {pads[d], pads[d + k]};
    }
  }
  return w;
}
void check_auto_pad(const NodeAttrs& n) {
  check_string(n, "auto_pad", "NOTSET", {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"});
}

Shape spatial(const Tensor& t) { return Shape(t.shape().begin() + 2, t.shape().end()); }

std::vector<Tensor> conv(const Node& n) {
  const Tensor &x = n.in(0), &weight = n.in(1);
  Window w = window(n, x, n.ints("kernel_shape", spatial(weight)));
  return {x.conv2d(weight, n.opt(2), w.strides, w.pads, w.dilations, static_cast<int>(n.i("group", 1)))};
}

std::vector<Tensor> conv_transpose(const Node& n) {
  const Tensor &x = n.in(0), &weight = n.in(1);
  Shape kernel = n.ints("kernel_shape", spatial(weight));
  size_t k = kernel.size();
  Window w = window(n, x, kernel);
  Shape out_pad = n.ints("output_padding", Shape(k, 0));
  Shape out_shape = n.ints("output_shape");
  std::string auto_pad = n.s("auto_pad", "NOTSET");
  if (out_shape.empty() && (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER"))
    for (size_t d = 0; d < k; d++) out_shape.push_back(x.shape()[d + 2] * w.strides[d]);
  if (out_shape.size() > k) out_shape.erase(out_shape.begin(), out_shape.end() - static_cast<int64_t>(k));
  for (size_t d = 0; d < out_shape.size(); d++) {  // pads that give the output shape asked for
    int64_t full = w.strides[d] * (x.shape()[d + 2] - 1) + out_pad[d] + (kernel[d] - 1) * w.dilations[d] + 1;
    int64_t total = full - out_shape[d];
    if (total < 0) {  // a longer output than the windows cover: extra output padding
      w.pads[d] = {0, 0};
      out_pad[d] -= total;
      continue;
    }
    int64_t small = total / 2;
    w.pads[d] = auto_pad == "SAME_UPPER" ? std::pair{small, total - small} : std::pair{total - small, small};
  }
  return {x.conv_transpose2d(weight, n.opt(2), w.strides, w.pads, w.dilations, static_cast<int>(n.i("group", 1)),
                             out_pad)};
}

std::vector<Tensor> max_pool(const Node& n) {
  const Tensor& x = n.in(0);
  Window w = window(n, x, n.ints("kernel_shape"));
  bool ceil_mode = n.i("ceil_mode", 0) != 0;
  if (!n.output_wanted(1)) return {x.max_pool2d(w.kernel, w.strides, w.pads, w.dilations, ceil_mode)};
  auto [values, idx] = x.max_pool2d_with_indices(w.kernel, w.strides, w.pads, w.dilations, ceil_mode);
  // ONNX's indices run over the whole (N, C, spatial...) tensor, kiln's over the spatial axes
  int64_t plane = prod(spatial(x)), N = x.shape()[0], C = x.shape()[1];
  Shape offset_shape(x.ndim(), 1);
  offset_shape[0] = N, offset_shape[1] = C;
  Tensor offset = (Tensor::arange(0, static_cast<double>(N * C), 1, dtypes::int64) * plane).reshape(offset_shape);
  return {values, idx.cast(dtypes::int64) + offset};
}
void check_max_pool(const NodeAttrs& n) {
  check_auto_pad(n);
  if (n.i("storage_order", 0) != 0 && n.output_wanted(1))
    n.fail("storage_order=1 (column-major indices) is not supported");
}

std::vector<Tensor> max_unpool(const Node& n) {
  const Tensor &x = n.in(0), &idx = n.in(1);
  Window w = window(n, x, n.ints("kernel_shape"));
  // ONNX's indices run over the whole (N, C, spatial...) output, kiln's over its spatial axes
  Shape out_size = n.opt(2) ? n.ints_of(2) : Shape{};
  Shape out_spatial(out_size.begin() + (out_size.empty() ? 0 : 2), out_size.end());
  if (out_spatial.empty())
    for (size_t d = 0; d < w.kernel.size(); d++)
      out_spatial.push_back((x.shape()[d + 2] - 1) * w.strides[d] + w.kernel[d] - w.pads[d].first - w.pads[d].second);
  Tensor local = idx.cast(dtypes::int64).mod(idx.const_like(static_cast<double>(prod(out_spatial))));
  return {x.max_unpool2d(local.cast(dtypes::int32), w.kernel, w.strides, w.pads, w.dilations, out_spatial)};
}

std::vector<Tensor> average_pool(const Node& n) {
  const Tensor& x = n.in(0);
  Window w = window(n, x, n.ints("kernel_shape"));
  return {x.avg_pool2d(w.kernel, w.strides, w.pads, w.dilations, n.i("ceil_mode", 0) != 0,
                       n.i("count_include_pad", 0) != 0)};
}

std::vector<int> spatial_axes(const Tensor& x) {
  std::vector<int> axes;
  for (int d = 2; d < x.ndim(); d++) axes.push_back(d);
  return axes;
}
std::vector<Tensor> global_average_pool(const Node& n) { return {n.in(0).mean(spatial_axes(n.in(0)), true)}; }
std::vector<Tensor> global_max_pool(const Node& n) { return {n.in(0).max(spatial_axes(n.in(0)), true)}; }

}  // namespace

OpTable conv_ops() {
  return {
      {"Conv", conv, check_auto_pad},
      {"ConvTranspose", conv_transpose, check_auto_pad},
      {"MaxPool", max_pool, check_max_pool},
      {"MaxUnpool", max_unpool},
      {"AveragePool", average_pool, check_auto_pad},
      {"GlobalAveragePool", global_average_pool},
      {"GlobalMaxPool", global_max_pool},
  };
}

}  // namespace kiln::onnx
