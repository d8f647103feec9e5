// Sorting as a bitonic network (tinygrad's approach): the axis is padded to a power of two 2^s and
// viewed as s axes of size 2, so that every compare-exchange step is a split along one of them, a
// comparison and two wheres: movement and elementwise ops only, and the graph stays lazy. Each
// element travels with the position it came from, which breaks ties (a stable sort) and gives the
// indices directly (no n x n matching pass afterwards).
#include <cmath>
#include <limits>

#include "kiln/error.h"
#include "tensor/custom_gradient.h"
#include "tensor/tensor_impl.h"

namespace kiln {
namespace {

// A block of padding that sorts after every real element: the largest key ascending (NaN for
// floats, which ranks above +inf), the smallest descending; equal real keys come first as their
// positions are smaller.
Tensor padding_keys(const Shape& shape, DType dt, bool descending) {
  if (dt.is_float()) {
    double inf = std::numeric_limits<double>::infinity();
    return Tensor::full(shape, descending ? -inf : std::numeric_limits<double>::quiet_NaN(), dt);
  }
  if (dt.is_unsigned()) return Tensor::full(shape, descending ? int64_t{0} : int64_t{-1}, dt);  // -1: all bits set
  bool wide = dt.itemsize() == 8;
  int64_t lo = wide ? std::numeric_limits<int64_t>::min() : static_cast<int64_t>(dt.min_value());
  int64_t hi = wide ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(dt.max_value());
  return Tensor::full(shape, descending ? lo : hi, dt);
}

// Whether key a belongs strictly after key b; NaN ranks above every number.
Tensor ranks_after(const Tensor& a, const Tensor& b, bool descending) {
  Tensor after = descending ? a.lt(b) : a.gt(b);
  if (!a.dtype().is_float()) return after;
  Tensor nan_first = descending ? b : a, other = descending ? a : b;
  return after.bitwise_or(nan_first.isnan().bitwise_and(other.isnan().logical_not()));
}

// One column of compare-exchanges along `axis` (a size-2 axis): the first half keeps what belongs
// first. With `mirror`, the second half is compared reversed over `mirror` (the axes below
// `axis`), which turns two sorted runs into one bitonic merge without per-position directions.
std::vector<Tensor> compare_exchange(const std::vector<Tensor>& lanes, int axis, const std::vector<int>& mirror,
                                     bool descending) {
  std::vector<Tensor> top, bottom;
  for (const Tensor& lane : lanes) {
    std::vector<Tensor> halves = lane.split(1, axis);
    top.push_back(halves[0]);
    bottom.push_back(mirror.empty() ? halves[1] : halves[1].flip(mirror));
  }
  // lanes[0] is the key, lanes[1] the original position
  Tensor swap =
      ranks_after(top[0], bottom[0], descending)
          .bitwise_or(ranks_after(bottom[0], top[0], descending).logical_not().bitwise_and(top[1].gt(bottom[1])));
  std::vector<Tensor> out;
  for (size_t i = 0; i < lanes.size(); i++) {
    Tensor second = swap.where(top[i], bottom[i]);
    if (!mirror.empty()) second = second.flip(mirror);
    out.push_back(Tensor::cat({swap.where(bottom[i], top[i]), second}, axis).contiguous());
  }
  return out;
}

// Sorts `key` along its last axis: {sorted key, int32 positions they came from, each payload
// (same shape) permuted alike}.
std::vector<Tensor> bitonic_sort(const Tensor& key, const std::vector<Tensor>& payloads, bool descending) {
  const Shape& shape = key.shape();
  const int64_t n = shape.back();
  int stages = 0;
  while ((int64_t{1} << stages) < n) stages++;
  const int64_t width = int64_t{1} << stages;
  Shape padded = shape, pad_shape = shape, bits = shape, iota_shape(shape.size(), 1);
  padded.back() = width;
  pad_shape.back() = width - n;
  iota_shape.back() = width;
  bits.pop_back();
  bits.insert(bits.end(), static_cast<size_t>(stages), 2);

  Tensor k = width == n ? key : Tensor::cat({key, padding_keys(pad_shape, key.dtype(), descending)}, -1);
  Tensor iota = Tensor::arange(0, static_cast<double>(width), 1, dtypes::int32).reshape(iota_shape).expand(padded);
  std::vector<Tensor> lanes = {k, iota};
  Pairs pad_end(shape.size(), {0, 0});
  pad_end.back() = {0, width - n};
  for (const Tensor& p : payloads) lanes.push_back(p.pad(pad_end));
  for (Tensor& lane : lanes) lane = lane.reshape(bits);

  // axis of bit j of the position (bit 0 is the last axis)
  const int nd = static_cast<int>(bits.size());
  auto bit_axis = [&](int j) { return nd - 1 - j; };
  for (int stage = 1; stage <= stages; stage++) {
    std::vector<int> mirror;
    for (int j = 0; j < stage - 1; j++) mirror.push_back(bit_axis(j));
    lanes = compare_exchange(lanes, bit_axis(stage - 1), mirror, descending);
    for (int j = stage - 2; j >= 0; j--) lanes = compare_exchange(lanes, bit_axis(j), {}, descending);
  }
  Pairs keep;
  for (size_t d = 0; d + 1 < shape.size(); d++) keep.push_back({0, shape[d]});
  keep.push_back({0, n});
  for (Tensor& lane : lanes) lane = lane.reshape(padded).shrink(keep);
  return lanes;
}

}  // namespace

std::pair<Tensor, Tensor> Tensor::sort(int dim, bool descending) const {
  const int a = normalize_axis(dim, "sort");
  if (shape()[a] <= 1) return {*this, Tensor::zeros(shape(), dtypes::int32)};
  Tensor key = transpose(a, -1);
  if (dtype().is_bool()) key = key.cast(dtypes::uint8);
  std::vector<Tensor> sorted = bitonic_sort(key, {}, descending);
  Tensor values = sorted[0].cast(dtype()).transpose(a, -1), indices = sorted[1].transpose(a, -1);
  if (!dtype().is_float()) return {values, indices};
  // The values' gradient is the incoming one put back in place, itself a sort (by the indices):
  // derived instead, it would be a chain through every stage that no kernel boundary cuts.
  UOpRef index_node = indices.uop();
  auto backward = [index_node, a](const Tensor& g, const std::vector<bool>&) -> std::vector<std::optional<Tensor>> {
    Tensor idx = Tensor(index_node).transpose(a, -1);
    return {bitonic_sort(idx, {g.transpose(a, -1)}, false)[2].transpose(a, -1)};
  };
  return {autograd::set_custom_gradient(values, {*this}, backward), indices};
}

Tensor Tensor::argsort(int dim, bool descending) const { return sort(dim, descending).second; }

std::pair<Tensor, Tensor> Tensor::topk(int64_t k, int dim, bool largest, bool /*sorted: always*/) const {
  const int a = normalize_axis(dim, "topk");
  if (k < 0 || k > shape()[a])
    throw_error("topk: k must be in [0, ", shape()[a], "] (the size of dim ", dim, " of ", shape_to_string(shape()),
                "), got ", k);
  auto [values, indices] = sort(a, largest);
  Pairs keep;
  for (int64_t d = 0; d < ndim(); d++) keep.push_back({0, d == a ? k : shape()[d]});
  return {values.shrink(keep), indices.shrink(keep)};
}

Tensor Tensor::randperm(int64_t n, DType dtype) {
  if (n < 0) throw_error("randperm: n must be >= 0, got ", n);
  if (!dtype.is_int()) throw_error("randperm: expected an integer dtype, got ", dtype.name());
  return Tensor::rand({n}).argsort().cast(dtype);
}

Tensor Tensor::multinomial(int64_t num_samples, bool replacement) const {
  if (ndim() < 1 || ndim() > 2) throw_error("multinomial: expected 1-D or 2-D weights, got ", shape_to_string(shape()));
  if (num_samples < 1) throw_error("multinomial: num_samples must be >= 1, got ", num_samples);
  Tensor weight = ndim() == 1 ? unsqueeze(0) : *this;
  const int64_t rows = weight.shape()[0], classes = weight.shape()[1];
  if (!replacement && num_samples > classes)
    throw_error("multinomial: without replacement, num_samples (", num_samples, ") must not exceed the ", classes,
                " categories");
  // inverse-CDF with replacement: a uniform draw picks the first category whose cumulative weight
  // exceeds it; without, Efraimidis-Spirakis: the k largest log2(u) / w are a weighted draw
  auto draw = [&] {
    if (!replacement && num_samples > 1)
      return (Tensor::rand(weight.shape()).log2() / weight).topk(num_samples, 1).second;
    Tensor cw = weight.cumsum(1).cast(dtypes::float32);
    Tensor cdf = cw / cw.shrink({{0, rows}, {classes - 1, classes}});
    Tensor u = Tensor::rand({num_samples, rows, 1});
    return u.ge(cdf.unsqueeze(0)).cast(dtypes::int32).sum({2}).permute({1, 0});
  };
  Tensor indices = draw();
  return (ndim() == 1 ? indices.squeeze(0) : indices).cast(dtypes::int32);
}

}  // namespace kiln
