#pragma once
// Rotary position embeddings with the position as data, so one graph serves every position.
#include <utility>

#include "kiln/tensor.h"
#include "llm/config.h"

namespace kiln::llm {

// cos and sin of pos * inv_freq: pos (T) int32, inv_freq (head_dim/2) float32 -> two (T, head_dim/2).
std::pair<Tensor, Tensor> rope_angles(const Tensor& pos, const Tensor& inv_freq);

// Rotates x (B, heads, T, head_dim) by the angles, pairing features as `layout` says.
Tensor apply_rope(const Tensor& x, const Tensor& cos, const Tensor& sin, RopeLayout layout);

}  // namespace kiln::llm
