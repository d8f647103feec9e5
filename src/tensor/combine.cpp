// Joining and splitting tensors along an axis, and repeating them: all movement ops (cat is a sum
// of zero-padded views, so its pieces fuse into whatever reads the result).
#include <numeric>

#include "kiln/error.h"
#include "tensor/tensor_impl.h"

namespace kiln {

Tensor Tensor::cat(const std::vector<Tensor>& tensors, int axis) {
  if (tensors.empty()) throw_error("cat: expected at least one tensor");
  const Tensor& first = tensors[0];
  for (size_t i = 0; i < tensors.size(); i++)
    if (tensors[i].ndim() == 0)
      throw_error("cat: zero-dimensional tensor (at position ", i,
                  ") cannot be concatenated; unsqueeze it or use stack");
  const int a = first.normalize_axis(axis, "cat");
  int64_t total = 0;
  DType dt = first.dtype();
  for (size_t i = 0; i < tensors.size(); i++) {
    const Tensor& t = tensors[i];
    bool ok = t.ndim() == first.ndim();
    for (int64_t d = 0; ok && d < t.ndim(); d++) ok = d == a || t.shape()[d] == first.shape()[d];
    if (!ok)
      throw_error("cat: tensor ", i, " has shape ", shape_to_string(t.shape()), " but tensor 0 has ",
                  shape_to_string(first.shape()), "; all dimensions but axis ", axis, " must match");
    total += t.shape()[a];
    dt = dtypes::least_upper(dt, t.dtype());
  }
  std::optional<Tensor> out;
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    Pairs pads(static_cast<size_t>(t.ndim()), {0, 0});
    pads[a] = {offset, total - offset - t.shape()[a]};
    offset += t.shape()[a];
    Tensor piece = t.cast(dt).pad(pads);
    out = out ? *out + piece : piece;
  }
  return *out;
}

Tensor Tensor::stack(const std::vector<Tensor>& tensors, int axis) {
  if (tensors.empty()) throw_error("stack: expected at least one tensor");
  const int a = axis_index(axis, tensors[0].ndim() + 1, "stack", tensors[0].shape());  // the new axis may go last
  std::vector<Tensor> parts;
  for (size_t i = 0; i < tensors.size(); i++) {
    if (tensors[i].shape() != tensors[0].shape())
      throw_error("stack: tensor ", i, " has shape ", shape_to_string(tensors[i].shape()), " but tensor 0 has ",
                  shape_to_string(tensors[0].shape()));
    parts.push_back(tensors[i].unsqueeze(a));
  }
  return cat(parts, a);
}

Tensor Tensor::repeat(std::vector<int64_t> repeats) const {
  if (repeats.size() < shape().size())
    throw_value_error("repeat: expected at least ", ndim(), " repeats for shape ", shape_to_string(shape()), ", got ",
                      repeats.size());
  Shape base(repeats.size() - shape().size(), 1);
  base.insert(base.end(), shape().begin(), shape().end());
  // (s) -> (1, s) -> (r, s) -> (r*s) per axis
  Shape unsqueezed, expanded, final_shape;
  for (size_t i = 0; i < base.size(); i++) {
    if (repeats[i] < 0) throw_value_error("repeat: repeats must be >= 0, got ", repeats[i]);
    unsqueezed.insert(unsqueezed.end(), {1, base[i]});
    expanded.insert(expanded.end(), {repeats[i], base[i]});
    final_shape.push_back(repeats[i] * base[i]);
  }
  return reshape(unsqueezed).expand(expanded).reshape(final_shape);
}

std::vector<Tensor> Tensor::split(std::vector<int64_t> sizes, int axis) const {
  const int a = normalize_axis(axis, "split");
  int64_t sum = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
  if (sum != shape()[a])
    throw_error("split: sizes add up to ", sum, " but axis ", axis, " of ", shape_to_string(shape()), " has ",
                shape()[a]);
  std::vector<Tensor> out;
  int64_t offset = 0;
  for (int64_t s : sizes) {
    if (s < 0) throw_error("split: sizes must be >= 0, got ", s);
    Pairs bounds;
    for (int64_t d = 0; d < ndim(); d++) bounds.push_back(d == a ? std::pair{offset, offset + s} : std::pair{int64_t{0}, shape()[d]});
    out.push_back(shrink(bounds));
    offset += s;
  }
  return out;
}

std::vector<Tensor> Tensor::split(int64_t size, int axis) const {
  if (size < 1) throw_error("split: the piece size must be >= 1, got ", size);
  int64_t n = shape()[normalize_axis(axis, "split")];
  std::vector<int64_t> sizes;
  for (int64_t at = 0; at < n; at += size) sizes.push_back(std::min(size, n - at));
  if (sizes.empty()) sizes.push_back(0);
  return split(sizes, axis);
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int axis) const {
  if (chunks < 1) throw_error("chunk: expected at least 1 chunk, got ", chunks);
  int64_t n = shape()[normalize_axis(axis, "chunk")];
  return split(std::max<int64_t>(1, (n + chunks - 1) / chunks), axis);
}

Tensor Tensor::linear(const Tensor& weight, std::optional<Tensor> bias) const {
  Tensor r = weight.ndim() == 1 ? *this * weight : matmul(weight.transpose(-1, -2));
  return bias ? r + *bias : r;
}

}  // namespace kiln
