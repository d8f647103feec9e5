#pragma once
// A LLaMA-family model's tensors, gathered from a checkpoint's names and checked against its Config.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/tensor.h"
#include "llm/config.h"

namespace kiln::llm {

struct LayerWeights {
  Tensor attn_norm, wq, wk, wv, wo;           // projections are (out, in), as nn.Linear stores them
  std::optional<Tensor> bq, bk, bv;           // Qwen2
  std::optional<Tensor> q_norm, k_norm;       // Qwen3: (head_dim)
  Tensor ffn_norm, w_gate, w_up, w_down;
};

struct Weights {
  Tensor embed;  // (vocab, dim)
  std::vector<LayerWeights> layers;
  Tensor norm;
  Tensor head;   // (vocab, dim): the embedding itself when tied
};

// Takes the Hugging Face names (model.embed_tokens.weight, model.layers.N.self_attn.q_proj.weight, ...)
// out of `tensors`. Throws kiln::Error naming the tensor when one is missing, has another shape than
// `c` implies, or is not float32, float16 or bfloat16; `where` names the checkpoint.
Weights weights_from_hf(const Config& c, std::map<std::string, Tensor>& tensors, const std::string& where);

}  // namespace kiln::llm
