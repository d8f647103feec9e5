// Resize and Upsample. Every mode is separable: along each resized axis an output element is a
// weighted sum of a few input elements (taps), found on the host from ONNX's coordinate rules and
// gathered with index_select.
#include <algorithm>
#include <cmath>

#include "onnx/op.h"

namespace kiln::onnx {

namespace {

struct Taps {
  std::vector<std::vector<int64_t>> index;  // [tap][output position]
  std::vector<std::vector<double>> weight;
  std::vector<bool> outside;                // output positions whose coordinate falls outside the input
};

struct ResizeAttrs {
  std::string mode, coord, nearest;
  double cubic_a;
  bool exclude_outside;
};

// Where output position x lies in input coordinates; `out` is the resized length in * scale,
// unrounded where scales were given (the reference's rule).
double source_coord(const ResizeAttrs& a, int64_t x, double scale, int64_t in, double out, double roi_start,
                    double roi_end) {
  if (a.coord == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (a.coord == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (a.coord == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0;
  if (a.coord == "align_corners") return out == 1 ? 0 : x * static_cast<double>(in - 1) / (out - 1);
  if (a.coord == "tf_crop_and_resize")
    return out > 1 ? roi_start * (in - 1) + x * (roi_end - roi_start) * (in - 1) / (out - 1)
                   : 0.5 * (roi_start + roi_end) * (in - 1);
  return x / scale;  // asymmetric
}

int64_t nearest_index(const std::string& mode, double c) {
  if (mode == "floor") return static_cast<int64_t>(std::floor(c));
  if (mode == "ceil") return static_cast<int64_t>(std::ceil(c));
  bool half = c - std::floor(c) == 0.5;
  if (half) return static_cast<int64_t>(mode == "round_prefer_ceil" ? std::ceil(c) : std::floor(c));
  return static_cast<int64_t>(std::round(c));
}

// Keys' cubic convolution weights of the taps at floor(c) - 1 ... floor(c) + 2.
std::vector<double> cubic_weights(double r, double A) {
  auto far = [A](double t) { return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A; };  // 1 < |t| < 2
  auto near = [A](double t) { return ((A + 2) * t - (A + 3)) * t * t + 1; };      // |t| <= 1
  return {far(r + 1), near(r), near(1 - r), far(2 - r)};
}

Taps axis_taps(const ResizeAttrs& a, int64_t in, int64_t out, double out_len, double scale, double roi_start,
               double roi_end) {
  int n_taps = a.mode == "nearest" ? 1 : a.mode == "linear" ? 2 : 4;
  Taps t{std::vector<std::vector<int64_t>>(n_taps, std::vector<int64_t>(out)),
         std::vector<std::vector<double>>(n_taps, std::vector<double>(out)), std::vector<bool>(out)};
  auto clamp = [in](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
  for (int64_t x = 0; x < out; x++) {
    double c = source_coord(a, x, scale, in, out_len, roi_start, roi_end);
    t.outside[x] = a.coord == "tf_crop_and_resize" && (c < 0 || c > in - 1);
    if (a.mode == "nearest") {
      t.index[0][x] = clamp(nearest_index(a.nearest, c)), t.weight[0][x] = 1;
      continue;
    }
    int64_t base = static_cast<int64_t>(std::floor(c));
    double r = c - std::floor(c);
    std::vector<double> w = a.mode == "linear" ? std::vector<double>{1 - r, r} : cubic_weights(r, a.cubic_a);
    int64_t first = a.mode == "linear" ? base : base - 1;
    double total = 0;
    for (int k = 0; k < n_taps; k++) {
      int64_t i = first + k;
      if (a.exclude_outside && (i < 0 || i >= in)) w[k] = 0;
      total += w[k];
      t.index[k][x] = clamp(i);
    }
    for (int k = 0; k < n_taps; k++) t.weight[k][x] = a.exclude_outside && total != 0 ? w[k] / total : w[k];
  }
  return t;
}

// x resized along `axis` to `out` positions.
Tensor resize_axis(const Tensor& x, int axis, const Taps& t, const std::optional<double>& extrapolation) {
  auto out = static_cast<int64_t>(t.outside.size());
  Shape along(x.ndim(), 1);
  along[axis] = out;
  std::optional<Tensor> y;
  for (size_t k = 0; k < t.index.size(); k++) {
    Tensor picked = x.index_select(axis, Tensor::from_vector<int64_t>(t.index[k], {out}));
    if (t.index.size() > 1 || t.weight[k] != std::vector<double>(out, 1.0))
      picked = picked * Tensor::from_vector<double>(t.weight[k], along).cast(x.dtype());
    y = y ? *y + picked : picked;
  }
  if (!extrapolation) return *y;
  std::vector<uint8_t> outside(t.outside.begin(), t.outside.end());
  return Tensor::from_vector<uint8_t>(outside, along).cast(dtypes::bool_).where(y->const_like(*extrapolation), *y);
}

std::vector<Tensor> resize(const Node& n) {
  Tensor x = n.in(0);
  bool upsample = n.proto().op_type() == "Upsample";
  // before opset 11 (and in Upsample) coordinates are asymmetric and nearest rounds down
  bool legacy = upsample || n.opset() < 11;
  ResizeAttrs a{n.s("mode", "nearest"), legacy ? "asymmetric" : n.s("coordinate_transformation_mode", "half_pixel"),
                legacy ? "floor" : n.s("nearest_mode", "round_prefer_floor"), n.f("cubic_coeff_a", -0.75),
                n.i("exclude_outside", 0) != 0};
  if (a.mode == "bilinear" || a.mode == "trilinear") a.mode = "linear";  // Upsample's old names
  int64_t rank = x.ndim();
  std::vector<double> scales, roi;
  Shape sizes;
  if (upsample) {
    if (n.opset() < 9) {
      auto f = n.floats("scales");
      scales.assign(f.begin(), f.end());
    } else {
      scales = n.in(1).cast(dtypes::float64).reshape({-1}).to_vector<double>();
    }
  } else if (n.opset() < 11) {
    scales = n.in(1).cast(dtypes::float64).reshape({-1}).to_vector<double>();
  } else {
    if (n.opt(1) && n.opt(1)->numel()) roi = n.opt(1)->cast(dtypes::float64).reshape({-1}).to_vector<double>();
    if (n.opt(2) && n.opt(2)->numel()) scales = n.opt(2)->cast(dtypes::float64).reshape({-1}).to_vector<double>();
    if (n.opt(3) && n.opt(3)->numel()) sizes = n.ints_of(3);
  }
  if (!sizes.empty() && static_cast<int64_t>(sizes.size()) != rank) n.fail("sizes needs one value per axis");
  if (sizes.empty() && static_cast<int64_t>(scales.size()) != rank) n.fail("scales needs one value per axis");
  for (int axis = 0; axis < rank; axis++) {
    int64_t in = x.shape()[axis];
    int64_t out = sizes.empty() ? static_cast<int64_t>(std::floor(in * scales[axis])) : sizes[axis];
    double scale = sizes.empty() ? scales[axis] : static_cast<double>(out) / static_cast<double>(in);
    bool crop = a.coord == "tf_crop_and_resize";
    if (out == in && scale == 1 && !crop) continue;
    double start = crop ? roi.at(axis) : 0, end = crop ? roi.at(axis + rank) : 1;
    std::optional<double> extrapolation;
    if (crop) extrapolation = n.f("extrapolation_value", 0);
    double out_len = sizes.empty() ? in * scale : static_cast<double>(out);
    x = resize_axis(x, axis, axis_taps(a, in, out, out_len, scale, start, end), extrapolation);
  }
  return {x};
}
void check_resize(const NodeAttrs& n) {
  check_string(n, "mode", "nearest", {"nearest", "linear", "cubic", "bilinear", "trilinear"});
  check_string(n, "coordinate_transformation_mode", "half_pixel",
               {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize",
                "tf_half_pixel_for_nn"});
  check_string(n, "nearest_mode", "round_prefer_floor", {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
  if (n.has("axes") || n.s("keep_aspect_ratio_policy", "stretch") != "stretch")
    n.fail("the axes and keep_aspect_ratio_policy attributes (opset 18) are not supported");
}

}  // namespace

OpTable resize_ops() {
  return {
      {"Resize", resize, check_resize},
      {"Upsample", resize, check_resize},
  };
}

}  // namespace kiln::onnx
