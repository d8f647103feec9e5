#pragma once
// A tiny random LLaMA model (config.json + safetensors in a folder) and a SentencePiece-style vocabulary
// of ASCII pieces for it, also written as a vocab-only GGUF file: what the server and CLI tests run.
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "kiln/llm.h"
#include "kiln/llm_tokenizer.h"
#include "kiln/nn/gguf.h"
#include "kiln/nn/state.h"
#include "temp_dir.h"

namespace kt {

// <unk> <s> </s>, then ▁, the letters, and some words: no byte tokens, so every decoded text is ASCII.
inline kiln::llm::TokenizerData tiny_vocab() {
  kiln::llm::TokenizerData d;
  d.model = "llama";
  const auto add = [&](const std::string& text, float score, kiln::llm::TokenType type) {
    d.tokens.push_back(text);
    d.scores.push_back(score);
    d.token_types.push_back(static_cast<int32_t>(type));
  };
  add("<unk>", 0, kiln::llm::TokenType::Unknown);
  add("<s>", 0, kiln::llm::TokenType::Control);
  add("</s>", 0, kiln::llm::TokenType::Control);
  d.unknown_id = 0, d.bos_id = 1, d.eos_id = 2;
  const std::string sp = "\xE2\x96\x81";  // ▁
  add(sp, -20, kiln::llm::TokenType::Normal);
  for (char c = 'a'; c <= 'z'; c++) add(std::string(1, c), -10, kiln::llm::TokenType::Normal);
  for (const char* c : {",", ".", "!", "?", "[", "]", "/", "<", ">", "|", "\n", "_"})
    add(c, -10, kiln::llm::TokenType::Normal);
  float score = -1;
  for (const char* w : {"he", "ll", "lo", "hello", "wor", "ld", "world", "the", "in", "st", "ys", "INST", "SYS"})
    add(w, score, kiln::llm::TokenType::Normal), score -= 0.1f;
  for (const char* w : {"hello", "world", "the", "a", "in"})
    add(sp + w, score, kiln::llm::TokenType::Normal), score -= 0.1f;
  return d;
}

// The vocabulary under tokenizer.ggml.*, as llama.cpp writes a vocab-only GGUF file, with a Jinja
// chat template if one is given.
inline void write_vocab_gguf(const kiln::llm::TokenizerData& d, const std::string& path,
                             const std::string& chat_template = "") {
  using kiln::nn::state::GGUFValue;
  using kiln::nn::state::GGUFValueType;
  const auto array = [](GGUFValueType type, const auto& values) {
    return GGUFValue::array(type, std::vector<GGUFValue>(values.begin(), values.end()));
  };
  kiln::nn::state::GGUFMetadata m = {{"tokenizer.ggml.model", d.model},
                                     {"tokenizer.ggml.tokens", array(GGUFValueType::STRING, d.tokens)},
                                     {"tokenizer.ggml.scores", array(GGUFValueType::FLOAT32, d.scores)},
                                     {"tokenizer.ggml.token_type", array(GGUFValueType::INT32, d.token_types)},
                                     {"tokenizer.ggml.bos_token_id", uint32_t(d.bos_id)},
                                     {"tokenizer.ggml.eos_token_id", uint32_t(d.eos_id)},
                                     {"tokenizer.ggml.unknown_token_id", uint32_t(d.unknown_id)}};
  if (!chat_template.empty()) m.emplace_back("tokenizer.chat_template", chat_template);
  kiln::nn::state::GGUFWriter(m).save(path);
}

// A random 2-layer LLaMA over `vocab` tokens (end of sequence: 2), context `context`, saved in `dir`.
inline void write_tiny_model(const std::filesystem::path& dir, int64_t vocab, int64_t context) {
  const int64_t dim = 16, layers = 2, heads = 4, kv_heads = 2, head_dim = 4, hidden = 24;
  std::ofstream(dir / "config.json") << "{\"model_type\": \"llama\", \"hidden_size\": " << dim
                                     << ", \"num_hidden_layers\": " << layers << ", \"num_attention_heads\": " << heads
                                     << ", \"num_key_value_heads\": " << kv_heads << ", \"head_dim\": " << head_dim
                                     << ", \"intermediate_size\": " << hidden << ", \"vocab_size\": " << vocab
                                     << ", \"max_position_embeddings\": " << context
                                     << ", \"rms_norm_eps\": 1e-5, \"eos_token_id\": 2}";
  std::mt19937 rng(11);
  kiln::nn::state::StateDict w;
  const auto add = [&](const std::string& name, kiln::Shape shape, float scale, float offset = 0) {
    std::normal_distribution<float> n(0.f, 1.f);
    int64_t size = 1;
    for (int64_t d : shape) size *= d;
    std::vector<float> v(static_cast<size_t>(size));
    for (float& x : v) x = offset + scale * n(rng);
    w.emplace(name, kiln::Tensor::from_vector(v, shape));
  };
  add("model.embed_tokens.weight", {vocab, dim}, 1.0f);
  for (int64_t i = 0; i < layers; i++) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    add(p + "input_layernorm.weight", {dim}, 0.1f, 1.0f);
    add(p + "post_attention_layernorm.weight", {dim}, 0.1f, 1.0f);
    add(p + "self_attn.q_proj.weight", {heads * head_dim, dim}, 0.5f);
    add(p + "self_attn.k_proj.weight", {kv_heads * head_dim, dim}, 0.5f);
    add(p + "self_attn.v_proj.weight", {kv_heads * head_dim, dim}, 0.5f);
    add(p + "self_attn.o_proj.weight", {dim, heads * head_dim}, 0.3f);
    add(p + "mlp.gate_proj.weight", {hidden, dim}, 0.3f);
    add(p + "mlp.up_proj.weight", {hidden, dim}, 0.3f);
    add(p + "mlp.down_proj.weight", {dim, hidden}, 0.3f);
  }
  add("model.norm.weight", {dim}, 0.1f, 1.0f);
  add("lm_head.weight", {vocab, dim}, 1.0f);
  kiln::nn::state::safe_save(w, (dir / "model.safetensors").string());
}

// The same kind of random model as one GGUF file in llama.cpp's names, float16 weights, with the vocabulary
// and a Jinja chat template in its metadata.
inline void write_tiny_gguf(const std::string& path, const kiln::llm::TokenizerData& d, int64_t context,
                            const std::string& chat_template) {
  using kiln::nn::state::GGUFValue;
  using kiln::nn::state::GGUFValueType;
  const int64_t vocab = static_cast<int64_t>(d.tokens.size()), dim = 16, layers = 2, heads = 4, kv_heads = 2,
                hidden = 24;
  const auto array = [](GGUFValueType type, const auto& values) {
    return GGUFValue::array(type, std::vector<GGUFValue>(values.begin(), values.end()));
  };
  kiln::nn::state::GGUFWriter w({{"general.architecture", "llama"},
                                 {"llama.context_length", uint32_t(context)},
                                 {"llama.embedding_length", uint32_t(dim)},
                                 {"llama.block_count", uint32_t(layers)},
                                 {"llama.feed_forward_length", uint32_t(hidden)},
                                 {"llama.attention.head_count", uint32_t(heads)},
                                 {"llama.attention.head_count_kv", uint32_t(kv_heads)},
                                 {"llama.attention.layer_norm_rms_epsilon", 1e-5f},
                                 {"tokenizer.ggml.model", d.model},
                                 {"tokenizer.ggml.tokens", array(GGUFValueType::STRING, d.tokens)},
                                 {"tokenizer.ggml.scores", array(GGUFValueType::FLOAT32, d.scores)},
                                 {"tokenizer.ggml.token_type", array(GGUFValueType::INT32, d.token_types)},
                                 {"tokenizer.ggml.bos_token_id", uint32_t(d.bos_id)},
                                 {"tokenizer.ggml.eos_token_id", uint32_t(d.eos_id)},
                                 {"tokenizer.ggml.unknown_token_id", uint32_t(d.unknown_id)},
                                 {"tokenizer.chat_template", chat_template}});
  std::mt19937 rng(13);
  const auto add = [&](const std::string& name, kiln::Shape shape, float scale, float offset = 0) {
    std::normal_distribution<float> n(0.f, 1.f);
    int64_t size = 1;
    for (int64_t x : shape) size *= x;
    std::vector<float> v(static_cast<size_t>(size));
    for (float& x : v) x = offset + scale * n(rng);
    w.add(name, kiln::Tensor::from_vector(v, shape), kiln::nn::state::GGMLType::F16);
  };
  add("token_embd.weight", {vocab, dim}, 1.0f);
  for (int64_t i = 0; i < layers; i++) {
    const std::string p = "blk." + std::to_string(i) + ".";
    add(p + "attn_norm.weight", {dim}, 0.1f, 1.0f);
    add(p + "ffn_norm.weight", {dim}, 0.1f, 1.0f);
    add(p + "attn_q.weight", {dim, dim}, 0.5f);
    add(p + "attn_k.weight", {kv_heads * dim / heads, dim}, 0.5f);
    add(p + "attn_v.weight", {kv_heads * dim / heads, dim}, 0.5f);
    add(p + "attn_output.weight", {dim, dim}, 0.3f);
    add(p + "ffn_gate.weight", {hidden, dim}, 0.3f);
    add(p + "ffn_up.weight", {hidden, dim}, 0.3f);
    add(p + "ffn_down.weight", {dim, hidden}, 0.3f);
  }
  add("output_norm.weight", {dim}, 0.1f, 1.0f);
  add("output.weight", {vocab, dim}, 1.0f);
  w.save(path);
}

// The text `generated` adds after `prompt`: the continuation of the whole sequence's text, without
// a final end-of-sequence token.
inline std::string continuation(const kiln::llm::Tokenizer& t, const std::vector<int32_t>& prompt,
                                std::vector<int32_t> generated) {
  if (!generated.empty() && generated.back() == t.eos()) generated.pop_back();
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), generated.begin(), generated.end());
  return t.decode(all).substr(t.decode(prompt).size());
}

}  // namespace kt
