// Hugging Face tensor names -> Weights, with each tensor's shape and dtype checked.
#include "llm/weights.h"

#include "kiln/error.h"

namespace kiln::llm {
namespace {

class Taker {
 public:
  Taker(std::map<std::string, Tensor>& tensors, const std::string& where) : tensors_(tensors), where_(where) {}

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
  std::optional<Tensor> take_if(bool wanted, const std::string& name, const Shape& shape) {
    return wanted ? std::optional<Tensor>(take(name, shape)) : std::nullopt;
  }

 private:
  std::map<std::string, Tensor>& tensors_;
  const std::string& where_;
};

}  // namespace

Weights weights_from_hf(const Config& c, std::map<std::string, Tensor>& tensors, const std::string& where) {
  Taker t(tensors, where);
  const int64_t q_out = c.heads * c.head_dim, kv_out = c.kv_heads * c.head_dim;
  Tensor embed = t.take("model.embed_tokens.weight", {c.vocab, c.dim});
  std::vector<LayerWeights> layers;
  for (int64_t i = 0; i < c.layers; i++) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    layers.push_back(LayerWeights{
        .attn_norm = t.take(p + "input_layernorm.weight", {c.dim}),
        .wq = t.take(p + "self_attn.q_proj.weight", {q_out, c.dim}),
        .wk = t.take(p + "self_attn.k_proj.weight", {kv_out, c.dim}),
        .wv = t.take(p + "self_attn.v_proj.weight", {kv_out, c.dim}),
        .wo = t.take(p + "self_attn.o_proj.weight", {c.dim, q_out}),
        .bq = t.take_if(c.qkv_bias, p + "self_attn.q_proj.bias", {q_out}),
        .bk = t.take_if(c.qkv_bias, p + "self_attn.k_proj.bias", {kv_out}),
        .bv = t.take_if(c.qkv_bias, p + "self_attn.v_proj.bias", {kv_out}),
        .q_norm = t.take_if(c.qk_norm, p + "self_attn.q_norm.weight", {c.head_dim}),
        .k_norm = t.take_if(c.qk_norm, p + "self_attn.k_norm.weight", {c.head_dim}),
        .ffn_norm = t.take(p + "post_attention_layernorm.weight", {c.dim}),
        .w_gate = t.take(p + "mlp.gate_proj.weight", {c.hidden_dim, c.dim}),
        .w_up = t.take(p + "mlp.up_proj.weight", {c.hidden_dim, c.dim}),
        .w_down = t.take(p + "mlp.down_proj.weight", {c.dim, c.hidden_dim}),
    });
  }
  Tensor norm = t.take("model.norm.weight", {c.dim});
  // Tied checkpoints may still store lm_head.weight (a copy of the embedding): the config decides.
  Tensor head = c.tied_embeddings ? embed : t.take("lm_head.weight", {c.vocab, c.dim});
  return Weights{.embed = embed, .layers = std::move(layers), .norm = norm, .head = head};
}

}  // namespace kiln::llm
