// Hugging Face's and llama.cpp's tensor names -> Weights, with each tensor's shape and dtype checked.
#include "llm/weights.h"

#include "kiln/error.h"

namespace kiln::llm {
namespace {

class Taker {
 public:
  Taker(std::map<std::string, Tensor>& tensors, const std::map<std::string, nn::state::QuantizedTensor>& blocks,
        const std::string& where)
      : tensors_(tensors), blocks_(blocks), where_(where) {}

  Tensor take(const std::string& name, const Shape& shape) {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) throw_error(where_, ": missing tensor ", name, " (expected shape ", shape_to_string(shape), ")");
    Tensor t = it->second;
    tensors_.erase(it);
    if (t.shape() != shape)
      throw_error(where_, ": tensor ", name, ": expected shape ", shape_to_string(shape), ", got ", shape_to_string(t.shape()));
    if (t.dtype() != dtypes::float32 && t.dtype() != dtypes::float16 && t.dtype() != dtypes::bfloat16)
      throw_error(where_, ": tensor ", name, ": expected float32, float16 or bfloat16, got ", t.dtype().name());
    return t;
  }
  Matrix matrix(const std::string& name, const Shape& shape) {
    auto it = blocks_.find(name);
    return Matrix{take(name, shape), it == blocks_.end() ? std::nullopt : std::optional(it->second)};
  }
  std::optional<Tensor> take_if(bool wanted, const std::string& name, const Shape& shape) {
    return wanted ? std::optional<Tensor>(take(name, shape)) : std::nullopt;
  }

 private:
  std::map<std::string, Tensor>& tensors_;
  const std::map<std::string, nn::state::QuantizedTensor>& blocks_;
  const std::string& where_;
};

// The names one checkpoint format gives a model's tensors: a layer's are `layer` N "." and the role's.
struct Names {
  const char *embed, *norm, *head, *layer;
  const char *attn_norm, *wq, *wk, *wv, *wo, *bq, *bk, *bv, *q_norm, *k_norm, *ffn_norm, *w_gate, *w_up, *w_down;
};

const Names kHFNames = {
    "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
    "input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
    "self_attn.o_proj.weight", "self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias",
    "self_attn.q_norm.weight", "self_attn.k_norm.weight", "post_attention_layernorm.weight", "mlp.gate_proj.weight",
    "mlp.up_proj.weight", "mlp.down_proj.weight"};

// llama.cpp's (llama-arch.cpp's LLM_TENSOR_NAMES)
const Names kGGUFNames = {
    "token_embd.weight", "output_norm.weight", "output.weight", "blk.",
    "attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight", "attn_q.bias",
    "attn_k.bias", "attn_v.bias", "attn_q_norm.weight", "attn_k_norm.weight", "ffn_norm.weight", "ffn_gate.weight",
    "ffn_up.weight", "ffn_down.weight"};

Weights gather(const Config& c, const Names& n, std::map<std::string, Tensor>& tensors,
               const std::map<std::string, nn::state::QuantizedTensor>& blocks, const std::string& where) {
  Taker t(tensors, blocks, where);
  const int64_t q_out = c.heads * c.head_dim, kv_out = c.kv_heads * c.head_dim;
  Matrix embed = t.matrix(n.embed, {c.vocab, c.dim});
  std::vector<LayerWeights> layers;
  for (int64_t i = 0; i < c.layers; i++) {
    const std::string p = n.layer + std::to_string(i) + ".";
    layers.push_back(LayerWeights{
        .attn_norm = t.take(p + n.attn_norm, {c.dim}),
        .wq = t.matrix(p + n.wq, {q_out, c.dim}),
        .wk = t.matrix(p + n.wk, {kv_out, c.dim}),
        .wv = t.matrix(p + n.wv, {kv_out, c.dim}),
        .wo = t.matrix(p + n.wo, {c.dim, q_out}),
        .bq = t.take_if(c.qkv_bias, p + n.bq, {q_out}),
        .bk = t.take_if(c.qkv_bias, p + n.bk, {kv_out}),
        .bv = t.take_if(c.qkv_bias, p + n.bv, {kv_out}),
        .q_norm = t.take_if(c.qk_norm, p + n.q_norm, {c.head_dim}),
        .k_norm = t.take_if(c.qk_norm, p + n.k_norm, {c.head_dim}),
        .ffn_norm = t.take(p + n.ffn_norm, {c.dim}),
        .w_gate = t.matrix(p + n.w_gate, {c.hidden_dim, c.dim}),
        .w_up = t.matrix(p + n.w_up, {c.hidden_dim, c.dim}),
        .w_down = t.matrix(p + n.w_down, {c.dim, c.hidden_dim}),
    });
  }
  Tensor norm = t.take(n.norm, {c.dim});
  // Tied checkpoints may still store lm_head.weight (a copy of the embedding): the config decides.
  Matrix head = c.tied_embeddings ? embed : t.matrix(n.head, {c.vocab, c.dim});
  return Weights{.embed = embed, .layers = std::move(layers), .norm = norm, .head = head};
}

}  // namespace

Weights weights_from_hf(const Config& c, std::map<std::string, Tensor>& tensors, const std::string& where) {
  return gather(c, kHFNames, tensors, {}, where);
}

Weights weights_from_gguf(const Config& c, std::map<std::string, Tensor>& tensors,
                          const std::map<std::string, nn::state::QuantizedTensor>& blocks, const std::string& where) {
  return gather(c, kGGUFNames, tensors, blocks, where);
}

}  // namespace kiln::llm
