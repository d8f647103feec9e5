// interpolate: each resized axis reads its source positions with index_select and, for "linear",
// blends the two neighbours. The positions depend only on the sizes, so they are computed here on
// the host, in exact integer arithmetic (tinygrad's formulas, which give PyTorch's positions).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kiln/error.h"
#include "tensor/tensor_impl.h"

namespace kiln {
namespace {

Tensor on_device_of(const Tensor& like, Tensor t) { return t.device() == like.device() ? t : t.to(like.device()); }

// Along one axis, out positions j read in positions low[j] and high[j], high weighted by frac[j].
struct LinearTaps {
  std::vector<int32_t> low, high;
  std::vector<double> frac;
};

LinearTaps linear_taps(int64_t in, int64_t out, bool align_corners) {
  LinearTaps taps;
  for (int64_t j = 0; j < out; j++) {
    // source position num / den: j * (in-1) / (out-1) with aligned corners, else (j + 0.5) * in / out - 0.5
    int64_t num = align_corners ? j * (in - 1) : (2 * j + 1) * in - out;
    int64_t den = align_corners ? out - 1 : 2 * out;
    if (den == 0) num = 0, den = 1;  // one aligned output: the first input
    num = std::clamp<int64_t>(num, 0, (in - 1) * den);
    taps.low.push_back(static_cast<int32_t>(num / den));
    taps.high.push_back(static_cast<int32_t>((num + den - 1) / den));
    taps.frac.push_back(static_cast<double>(num % den) / static_cast<double>(den));
  }
  return taps;
}

// Along one axis, out position j reads floor(j * in / out), or with "nearest-exact" the input
// whose centre is nearest, floor((j + 0.5) * in / out); in float32, as PyTorch computes them.
std::vector<int32_t> nearest_taps(int64_t in, int64_t out, bool exact) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  std::vector<int32_t> index;
  for (int64_t j = 0; j < out; j++) {
    const float at = (static_cast<float>(j) + (exact ? 0.5f : 0.0f)) * scale;
    index.push_back(static_cast<int32_t>(std::min<int64_t>(static_cast<int64_t>(std::floor(at)), in - 1)));
  }
  return index;
}

}  // namespace

Tensor Tensor::interpolate(const Shape& size, std::string_view mode, bool align_corners) const {
  if (size.empty() || static_cast<int64_t>(size.size()) > ndim())
    throw_error("interpolate: expected 1 to ", ndim(), " output sizes for input ", shape_to_string(shape()), ", got ",
                shape_to_string(size));
  const bool linear = mode == "linear";
  if (!linear && mode != "nearest" && mode != "nearest-exact")
    throw_error("interpolate: mode must be 'linear', 'nearest' or 'nearest-exact', got '", mode, "'");
  if (align_corners && !linear) throw_error("interpolate: align_corners is only for mode 'linear', got '", mode, "'");
  Tensor x = *this;
  const DType weight_dtype = dtype().is_float() ? dtype() : dtypes::float32;
  for (size_t k = 0; k < size.size(); k++) {
    const int axis = static_cast<int>(ndim() - static_cast<int64_t>(size.size()) + static_cast<int64_t>(k));
    const int64_t in = shape()[axis], out = size[k];
    if (out < 1 || in < 1)
      throw_error("interpolate: sizes must be >= 1, got ", shape_to_string(size), " for input ", shape_to_string(shape()));
    if (in == out) continue;  // every rule maps position j to j
    if (!linear) {
      x = x.index_select(axis, on_device_of(x, Tensor::from_vector(nearest_taps(in, out, mode == "nearest-exact"), {out})));
      continue;
    }
    LinearTaps taps = linear_taps(in, out, align_corners);
    Shape along(static_cast<size_t>(ndim()), 1);
    along[static_cast<size_t>(axis)] = out;
    Tensor low = x.index_select(axis, on_device_of(x, Tensor::from_vector(std::move(taps.low), {out})));
    Tensor high = x.index_select(axis, on_device_of(x, Tensor::from_vector(std::move(taps.high), {out})));
    Tensor frac = on_device_of(x, Tensor::from_vector(std::move(taps.frac), along)).cast(weight_dtype);
    x = low + (high - low) * frac;
  }
  return x.cast(dtype());
}

}  // namespace kiln
