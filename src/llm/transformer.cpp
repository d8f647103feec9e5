// The decoder's blocks, following Hugging Face's LlamaForCausalLM (Mistral, Qwen2 and Qwen3 differ
// only in the switches Config holds).
#include "llm/transformer.h"

#include "llm/rope.h"

namespace kiln::llm {
namespace {

Tensor as_f32(const Tensor& t) { return t.dtype() == dtypes::float32 ? t : t.cast(dtypes::float32); }

// x @ w.T (+ b). A plain w: the product-and-sum over w's rows, so w is read where it is stored, in
// its dtype (matmul may first copy a large right operand into panels, which would be a float32 copy
// of the weight at every call). A quantized w: its blocks decoded along the kernel's vector loop.
Tensor project(const Tensor& x, const Matrix& w, const std::optional<Tensor>& b = {}) {
  Tensor y = w.blocks ? nn::state::linear_quantized(x, *w.blocks) : (x.unsqueeze(-2) * as_f32(w.w)).sum({-1});
  return b ? y + as_f32(*b) : y;
}

Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps) {
  return x * (x.square().mean({-1}, true) + eps).rsqrt() * as_f32(weight);
}

// The embedding's rows for ids (N) int32, as float32 (N, dim).
Tensor embed_rows(const Weights& w, const Tensor& ids) {
  if (!w.embed.blocks) return as_f32(w.embed.w.index_select(0, ids));
  const nn::state::QuantizedTensor& q = *w.embed.blocks;
  const int64_t row_bytes = q.blocks.numel() / q.shape[0];
  const Tensor rows = q.blocks.reshape({q.shape[0], row_bytes}).index_select(0, ids).flatten();
  return nn::state::dequantize_lazy({q.type, {ids.numel(), q.shape[1]}, rows});
}

// (B, T, heads * head_dim) -> (B, heads, T, head_dim)
Tensor split_heads(const Tensor& x, int64_t heads, int64_t head_dim) {
  return x.reshape({x.shape()[0], x.shape()[1], heads, head_dim}).transpose(1, 2);
}

// allowed[t, s]: query t (at pos[t]) may see cache position s < S: causal, and within the sliding window.
Tensor attention_mask(const Config& c, const Tensor& pos, int64_t S) {
  const int64_t T = pos.shape()[0];
  Tensor q = pos.reshape({T, 1}), s = Tensor::arange(0, static_cast<double>(S), 1, dtypes::int32).reshape({1, S});
  Tensor allowed = s.le(q.expand({T, S}));
  if (c.sliding_window > 0) allowed = allowed.bitwise_and((q - s).lt(static_cast<int32_t>(c.sliding_window)));
  return allowed;
}

Tensor attention(const Config& c, const LayerWeights& l, const Tensor& x, const Tensor& cos, const Tensor& sin,
                 const Tensor& mask, KVCache& cache, size_t layer, const Tensor& pos) {
  const int64_t B = x.shape()[0], T = x.shape()[1], groups = c.heads / c.kv_heads;
  Tensor q = split_heads(project(x, l.wq, l.bq), c.heads, c.head_dim);
  Tensor k = split_heads(project(x, l.wk, l.bk), c.kv_heads, c.head_dim);
  Tensor v = split_heads(project(x, l.wv, l.bv), c.kv_heads, c.head_dim);
  if (l.q_norm) q = rms_norm(q, *l.q_norm, c.norm_eps), k = rms_norm(k, *l.k_norm, c.norm_eps);
  q = apply_rope(q, cos, sin, c.rope_layout), k = apply_rope(k, cos, sin, c.rope_layout);
  auto [keys, values] = cache.update(layer, k, v, pos);
  // Grouped-query attention: the `groups` query heads of one kv head form an axis that the kv
  // head's keys and values broadcast over (Hugging Face's repeat_kv, without the copy).
  Tensor qg = q.reshape({B, c.kv_heads, groups, T, c.head_dim});
  Tensor out = qg.scaled_dot_product_attention(keys.unsqueeze(2), values.unsqueeze(2), mask);
  return project(out.reshape({B, c.heads, T, c.head_dim}).transpose(1, 2).reshape({B, T, c.heads * c.head_dim}), l.wo);
}

Tensor feed_forward(const LayerWeights& l, const Tensor& x) {
  return project(project(x, l.w_gate).silu() * project(x, l.w_up), l.w_down);
}

}  // namespace

Tensor transformer_forward(const Config& c, const Weights& w, const Tensor& inv_freq, KVCache& cache,
                           const Tensor& tokens, const Tensor& pos) {
  const int64_t B = tokens.shape()[0], T = tokens.shape()[1];
  Tensor h = embed_rows(w, tokens.reshape({B * T})).reshape({B, T, c.dim});
  auto [cos, sin] = rope_angles(pos, inv_freq);
  Tensor mask = attention_mask(c, pos, cache.capacity());
  for (size_t i = 0; i < w.layers.size(); i++) {
    const LayerWeights& l = w.layers[i];
    // Normalized inputs are stored: two projections of the same shape reading one unstored input
    // would store its broadcast (out x in floats) instead.
    h = h + attention(c, l, rms_norm(h, l.attn_norm, c.norm_eps).contiguous(), cos, sin, mask, cache, i, pos);
    h = h + feed_forward(l, rms_norm(h, l.ffn_norm, c.norm_eps).contiguous());
  }
  return rms_norm(h, w.norm, c.norm_eps);
}

Tensor output_head(const Weights& w, const Tensor& hidden) { return project(hidden, w.head); }

}  // namespace kiln::llm
