// Rotary embeddings: each pair (x1, x2) of a head's features turns by its position's angle,
//   (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin).
#include "llm/rope.h"

namespace kiln::llm {

std::pair<Tensor, Tensor> rope_angles(const Tensor& pos, const Tensor& inv_freq) {
  // float32 products, as Hugging Face computes them, so long positions round the same way
  Tensor angles = pos.cast(dtypes::float32).unsqueeze(1) * inv_freq.unsqueeze(0);
  return {angles.cos(), angles.sin()};
}

Tensor apply_rope(const Tensor& x, const Tensor& cos, const Tensor& sin, RopeLayout layout) {
  const Shape& s = x.shape();
  const int64_t B = s[0], H = s[1], T = s[2], half = s[3] / 2;
  // Half: features (i, i + d/2) pair up, so split the last axis into (2, d/2); Pair: (2i, 2i + 1), (d/2, 2).
  const bool is_half = layout == RopeLayout::Half;
  const int axis = is_half ? 3 : 4;
  Tensor xs = x.reshape(is_half ? Shape{B, H, T, 2, half} : Shape{B, H, T, half, 2});
  const Shape angle_shape = is_half ? Shape{T, 1, half} : Shape{T, half, 1};
  // x cos + (x2, x1) (-sin, sin): the partner is a flip of the pair axis, a view, so the rotation is
  // one elementwise kernel rather than halves computed apart and concatenated.
  Tensor sign = Tensor::arange(-1, 2, 2, dtypes::float32).reshape(is_half ? Shape{2, 1} : Shape{2});
  return (xs * cos.reshape(angle_shape) + xs.flip({axis}) * (sin.reshape(angle_shape) * sign)).reshape(s);
}

}  // namespace kiln::llm
