#pragma once
// A LLaMA-family model's tensors, gathered from a checkpoint's names and checked against its Config.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/nn/gguf.h"
#include "kiln/tensor.h"
#include "llm/config.h"

namespace kiln::llm {

// A matrix the model multiplies by or looks rows up in, (out, in) as nn.Linear stores it: the tensor,
// and its stored blocks when quantized (a product decodes them in its kernel's vector loop, a lookup
// only the rows it selects).
struct Matrix {
  Tensor w;
  std::optional<nn::state::QuantizedTensor> blocks;
};

struct LayerWeights {
  Tensor attn_norm;
  Matrix wq, wk, wv, wo;
  std::optional<Tensor> bq, bk, bv;           // Qwen2
  std::optional<Tensor> q_norm, k_norm;       // Qwen3: (head_dim)
  Tensor ffn_norm;
  Matrix w_gate, w_up, w_down;
};

struct Weights {
  Matrix embed;  // (vocab, dim)
  std::vector<LayerWeights> layers;
  Tensor norm;
  Matrix head;   // (vocab, dim): the embedding itself when tied
};

// Takes the Hugging Face names (model.embed_tokens.weight, model.layers.N.self_attn.q_proj.weight, ...)
// out of `tensors`. Throws kiln::Error naming the tensor when one is missing, has another shape than
// `c` implies, or is not float32, float16 or bfloat16; `where` names the checkpoint.
Weights weights_from_hf(const Config& c, std::map<std::string, Tensor>& tensors, const std::string& where);

// The same from llama.cpp's GGUF names (token_embd.weight, blk.N.attn_q.weight, ..., output.weight), the
// tensors as kiln computes with them: quantized ones lazily dequantized (nn::state::GGUFFile::lazy), and
// their stored blocks, by the same names, in `blocks`.
Weights weights_from_gguf(const Config& c, std::map<std::string, Tensor>& tensors,
                          const std::map<std::string, nn::state::QuantizedTensor>& blocks, const std::string& where);

}  // namespace kiln::llm
