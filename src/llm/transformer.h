#pragma once
// The LLaMA-family decoder: embedding, blocks of (RMSNorm, grouped-query attention with rotary
// embeddings, RMSNorm, SwiGLU), final RMSNorm and the output head. Everything is float32; weights are
// read in their stored dtype and cast in the kernels that load them.
#include "kiln/tensor.h"
#include "llm/config.h"
#include "llm/kv_cache.h"
#include "llm/weights.h"

namespace kiln::llm {

// tokens (B, T) int32 at positions pos (T) int32 -> the final normalized hidden states (B, T, dim);
// writes the chunk's keys and values into `cache`. inv_freq: rope_inv_freq(c) as a tensor.
Tensor transformer_forward(const Config& c, const Weights& w, const Tensor& inv_freq, KVCache& cache,
                           const Tensor& tokens, const Tensor& pos);

// hidden (B, T, dim) -> logits (B, T, vocab)
Tensor output_head(const Weights& w, const Tensor& hidden);

}  // namespace kiln::llm
