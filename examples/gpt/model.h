#pragma once
// A GPT (GPT-2's architecture, small): token and position embeddings, pre-norm blocks of causal
// self-attention and a GELU MLP with residual connections, a final LayerNorm and an output head
// tied to the token embedding. State-dict names follow GPT-2's (Hugging Face's) checkpoints.
#include <kiln/kiln.h>
#include <kiln/nn/layers.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace gpt {

struct Config {
  int64_t vocab_size = 256, block_size = 64, n_layer = 2, n_head = 4, n_embd = 128;
  double dropout = 0;  // on the embeddings and each residual branch, while Tensor::training
};

// Weights as GPT-2 initializes them: N(0, 0.02), biases zero, LayerNorms ones and zeros.
inline void init_normal(kiln::Tensor& weight, double std) {
  weight = kiln::Tensor::normal(weight.shape(), 0, std).realize();
  weight.requires_grad_();
}
inline void init_linear(kiln::nn::Linear& layer, double std) {
  init_normal(layer.weight, std);
  if (layer.bias) {
    layer.bias = kiln::Tensor::zeros(layer.bias->shape()).contiguous().realize();
    layer.bias->requires_grad_();
  }
}

struct CausalSelfAttention {
  CausalSelfAttention(const Config& c)
      : c_attn(c.n_embd, 3 * c.n_embd), c_proj(c.n_embd, c.n_embd), n_head(c.n_head), dropout(c.dropout) {
    init_linear(c_attn, 0.02);
    init_linear(c_proj, 0.02 / std::sqrt(2.0 * static_cast<double>(c.n_layer)));  // GPT-2's residual scaling
  }
  kiln::Tensor operator()(const kiln::Tensor& x) const {  // (B, T, C)
    const int64_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2], hd = C / n_head;
    // q, k and v from the rows of c_attn each (rather than splitting one product): in the backward
    // pass each weight gradient is then a reduction of its own.
    auto heads = [&](int64_t i) {
      kiln::Tensor w = c_attn.weight.shrink({{i * C, (i + 1) * C}, {0, C}});
      std::optional<kiln::Tensor> b;
      if (c_attn.bias) b = c_attn.bias->shrink({{i * C, (i + 1) * C}});
      return x.linear(w, b).reshape({B, T, n_head, hd}).transpose(1, 2);
    };
    kiln::Tensor y = heads(0).scaled_dot_product_attention(heads(1), heads(2), {}, /*is_causal=*/true);
    return c_proj(y.transpose(1, 2).reshape({B, T, C})).dropout(dropout);
  }
  void collect(kiln::nn::StateDict& out, const std::string& prefix) const {
    c_attn.collect(out, prefix + "c_attn.");
    c_proj.collect(out, prefix + "c_proj.");
  }
  kiln::nn::Linear c_attn, c_proj;
  int64_t n_head;
  double dropout;
};

struct MLP {
  MLP(const Config& c) : c_fc(c.n_embd, 4 * c.n_embd), c_proj(4 * c.n_embd, c.n_embd), dropout(c.dropout) {
    init_linear(c_fc, 0.02);
    init_linear(c_proj, 0.02 / std::sqrt(2.0 * static_cast<double>(c.n_layer)));
  }
  kiln::Tensor operator()(const kiln::Tensor& x) const { return c_proj(c_fc(x).gelu("tanh")).dropout(dropout); }
  void collect(kiln::nn::StateDict& out, const std::string& prefix) const {
    c_fc.collect(out, prefix + "c_fc.");
    c_proj.collect(out, prefix + "c_proj.");
  }
  kiln::nn::Linear c_fc, c_proj;
  double dropout;
};

struct Block {
  Block(const Config& c) : ln_1(c.n_embd), attn(c), ln_2(c.n_embd), mlp(c) {}
  kiln::Tensor operator()(kiln::Tensor x) const {
    x = x + attn(ln_1(x));
    return x + mlp(ln_2(x));
  }
  void collect(kiln::nn::StateDict& out, const std::string& prefix) const {
    ln_1.collect(out, prefix + "ln_1.");
    attn.collect(out, prefix + "attn.");
    ln_2.collect(out, prefix + "ln_2.");
    mlp.collect(out, prefix + "mlp.");
  }
  kiln::nn::LayerNorm ln_1;
  CausalSelfAttention attn;
  kiln::nn::LayerNorm ln_2;
  MLP mlp;
};

struct GPT {
  explicit GPT(const Config& c) : config(c), wte(c.vocab_size, c.n_embd), wpe(c.block_size, c.n_embd), ln_f(c.n_embd) {
    if (c.n_embd % c.n_head != 0)
      kiln::throw_error("GPT: the embedding size (", c.n_embd, ") must be a multiple of the heads (", c.n_head, ")");
    init_normal(wte.weight, 0.02);
    init_normal(wpe.weight, 0.02);
    for (int64_t i = 0; i < c.n_layer; i++) h.emplace_back(c);
  }

  // Token ids (B, T) of an integer dtype, T <= block_size -> logits (B, T, vocab_size).
  kiln::Tensor operator()(const kiln::Tensor& idx) const {
    const int64_t T = idx.shape().at(1);
    if (T > config.block_size) kiln::throw_error("GPT: ", T, " tokens exceed the block size ", config.block_size);
    kiln::Tensor x = (wte(idx) + wpe.weight.shrink({{0, T}, {0, config.n_embd}})).dropout(config.dropout);
    for (const Block& block : h) x = block(x);
    return ln_f(x).matmul(wte.weight.transpose());  // the head shares the token embedding
  }

  // Mean cross-entropy of predicting `targets` (B, T) from `idx` (B, T), in nats per token.
  kiln::Tensor loss(const kiln::Tensor& idx, const kiln::Tensor& targets) const {
    kiln::Tensor logits = (*this)(idx);
    return logits.reshape({-1, config.vocab_size}).sparse_categorical_crossentropy(targets.reshape({-1}));
  }

  void collect(kiln::nn::StateDict& out, const std::string& prefix) const {
    wte.collect(out, prefix + "wte.");
    wpe.collect(out, prefix + "wpe.");
    for (size_t i = 0; i < h.size(); i++) h[i].collect(out, prefix + "h." + std::to_string(i) + ".");
    ln_f.collect(out, prefix + "ln_f.");
  }

  Config config;
  kiln::nn::Embedding wte, wpe;
  std::vector<Block> h;
  kiln::nn::LayerNorm ln_f;
};

}  // namespace gpt
