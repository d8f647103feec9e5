// kiln::llm::Model::from_gguf against the float64 reference of llm_reference.h (Hugging Face's math):
// a tiny random checkpoint written as llama.cpp's converter writes it (LLaMA's q/k rows permuted for
// ggml's pair rope, Qwen's kept, norms and biases in F32, matrices in F32, F16, Q8_0 or Q4_0, the
// `<arch>.*` metadata), the reference running on the weights as stored (decoded by ggml's rules).
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "kiln/counters.h"
#include "kiln/error.h"
#include "kiln/llm.h"
#include "kiln/nn/gguf.h"
#include "llm_reference.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using namespace kiln;
using namespace kiln::nn::state;
using kt::llm_ref::Arch;
using kt::llm_ref::Checkpoint;
using kt::llm_ref::Vec;

namespace {

// Quantized blocks are 32 values of a row: every matrix's input size is a multiple of 32.
const Arch kLlama{.dim = 32, .heads = 4, .kv_heads = 2, .head_dim = 8, .hidden = 64};

// llama.cpp's LlamaModel.permute (convert_hf_to_gguf.py): each head's rows, viewed as (2, D/2), are
// transposed to (D/2, 2), so stored row 2i + j is Hugging Face's row i + j D/2 and the pair rope over
// the stored rows equals rotate_half over Hugging Face's. `inverse` undoes it.
Vec permute_rows(const Vec& w, int64_t heads, int64_t cols, bool inverse = false) {
  const int64_t rows = static_cast<int64_t>(w.size()) / cols, D = rows / heads;
  Vec out(w.size());
  for (int64_t h = 0; h < heads; h++)
    for (int64_t j = 0; j < 2; j++)
      for (int64_t i = 0; i < D / 2; i++) {
        const int64_t hf = h * D + j * D / 2 + i, stored = h * D + 2 * i + j;
        const int64_t from = inverse ? stored : hf, to = inverse ? hf : stored;
        std::copy_n(w.begin() + from * cols, cols, out.begin() + to * cols);
      }
  return out;
}

// Hugging Face name -> llama.cpp's
std::string gguf_name(const std::string& hf) {
  static const std::pair<const char*, const char*> kRoles[] = {
      {"input_layernorm.weight", "attn_norm.weight"}, {"self_attn.q_proj.", "attn_q."}, {"self_attn.k_proj.", "attn_k."},
      {"self_attn.v_proj.", "attn_v."}, {"self_attn.o_proj.", "attn_output."}, {"self_attn.q_norm.", "attn_q_norm."},
      {"self_attn.k_norm.", "attn_k_norm."}, {"post_attention_layernorm.", "ffn_norm."}, {"mlp.gate_proj.", "ffn_gate."},
      {"mlp.up_proj.", "ffn_up."}, {"mlp.down_proj.", "ffn_down."}};
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  std::string name = "blk." + hf.substr(std::string("model.layers.").size());
  for (auto [from, to] : kRoles)
    if (size_t at = name.find(from); at != std::string::npos) return name.replace(at, std::string(from).size(), to);
  ADD_FAILURE() << "no GGUF name for " << hf;
  return hf;
}

bool permuted(const Arch& a, const std::string& hf) {
  return (a.model_type == "llama" || a.model_type == "mistral") &&
         (hf.find("q_proj.weight") != std::string::npos || hf.find("k_proj.weight") != std::string::npos);
}

GGUFMetadata metadata(const Arch& a) {
  const std::string p = a.model_type + ".";
  auto u32 = [](int64_t v) { return GGUFValue(static_cast<uint32_t>(v)); };
  GGUFMetadata m = {{"general.architecture", a.model_type},
                    {p + "context_length", u32(a.max_pos)},
                    {p + "embedding_length", u32(a.dim)},
                    {p + "block_count", u32(a.layers)},
                    {p + "feed_forward_length", u32(a.hidden)},
                    {p + "attention.head_count", u32(a.heads)},
                    {p + "attention.head_count_kv", u32(a.kv_heads)},
                    {p + "attention.layer_norm_rms_epsilon", static_cast<float>(a.eps)},
                    {p + "rope.freq_base", static_cast<float>(a.theta)},
                    {p + "rope.dimension_count", u32(a.head_dim)},
                    {"tokenizer.ggml.eos_token_id", u32(2)}};
  if (a.head_dim != a.dim / a.heads) m.emplace_back(p + "attention.key_length", u32(a.head_dim));
  return m;
}

class LlmGGUF : public ::testing::Test {
 protected:
  // Writes `c` as llama.cpp would: 2-D tensors as `matrices`, the rest F32. `edit` may change the
  // metadata first. Returns the path.
  std::string save(const Arch& a, const Checkpoint& c, GGMLType matrices,
                   const std::function<void(GGUFMetadata&)>& edit = {}) const {
    GGUFMetadata m = metadata(a);
    if (edit) edit(m);
    GGUFWriter w(m);
    for (const auto& [name, values] : c.w) {
      const Shape& shape = c.shapes.at(name);
      const int64_t heads = name.find("q_proj") != std::string::npos ? a.heads : a.kv_heads;
      const Vec stored = permuted(a, name) ? permute_rows(values, heads, shape[1]) : values;
      w.add(gguf_name(name), Tensor::from_vector(std::vector<float>(stored.begin(), stored.end()), shape),
            shape.size() == 2 ? matrices : GGMLType::F32);
    }
    const std::string path = (temp_.dir / "model.gguf").string();
    w.save(path);
    return path;
  }

  // The checkpoint as the file holds it: each tensor decoded from its stored bytes by ggml's rules
  // (dequantize(), checked bit for bit against ggml in test_gguf) and un-permuted.
  static Checkpoint as_stored(const Arch& a, const Checkpoint& c, const std::string& path) {
    const GGUFFile file = gguf_open(path);
    Checkpoint out = c;
    for (auto& [name, values] : out.w) {
      const std::vector<float> decoded = file.dequantized(gguf_name(name));
      values.assign(decoded.begin(), decoded.end());
      if (permuted(a, name))
        values = permute_rows(values, name.find("q_proj") != std::string::npos ? a.heads : a.kv_heads,
                              c.shapes.at(name)[1], true);
    }
    return out;
  }

  // from_gguf's logits over a prefill and decode steps against the reference; tolerance: float32
  // arithmetic over a few hundred terms. Returns the model for further checks.
  void expect_matches_reference(const Arch& a, GGMLType matrices, size_t prefill = 5, size_t total = 9) const {
    const Checkpoint c = kt::llm_ref::random_checkpoint(a);
    const std::string path = save(a, c, matrices);
    const Checkpoint stored = as_stored(a, c, path);
    const int64_t mem_before = GlobalCounters::mem_used;
    llm::Model m = llm::Model::from_gguf(path);
    // Plain tensors are the mapped file's bytes and quantized ones lazy graphs over them: loading
    // allocates a few small tables (the rotary frequencies), nothing near a float32 copy.
    EXPECT_LT(GlobalCounters::mem_used - mem_before, 1024) << "float32 weights: " << float32_bytes(c) << " bytes";
    EXPECT_EQ(m.vocab_size(), a.vocab);
    EXPECT_EQ(m.max_context(), a.max_pos);
    EXPECT_EQ(m.eos_ids(), std::vector<int32_t>{2});
    std::vector<int32_t> tokens;
    for (size_t i = 0; i < total; i++) tokens.push_back(static_cast<int32_t>((i * 7 + 3) % a.vocab));
    const std::vector<Vec> ref = kt::llm_ref::reference_logits(a, stored, tokens);
    std::vector<int32_t> head(tokens.begin(), tokens.begin() + static_cast<long>(prefill));
    std::vector<float> got = m.forward(Tensor::from_vector(head, {1, static_cast<int64_t>(prefill)}), 0).to_vector<float>();
    for (size_t t = prefill; t < total; t++) {
      const std::vector<float> step =
          m.forward(Tensor::from_vector(std::vector<int32_t>{tokens[t]}, {1, 1}), static_cast<int64_t>(t)).to_vector<float>();
      got.insert(got.end(), step.begin(), step.end());
    }
    ASSERT_EQ(got.size(), total * static_cast<size_t>(a.vocab));
    for (size_t t = 0; t < total; t++)
      for (size_t i = 0; i < static_cast<size_t>(a.vocab); i++)
        ASSERT_NEAR(got[t * static_cast<size_t>(a.vocab) + i], ref[t][i], 1e-4 * (1 + std::abs(ref[t][i])))
            << ggml_traits(matrices).name << ", position " << t << ", token " << i << (t < prefill ? " (prefill)" : " (decode)");
  }

  static int64_t float32_bytes(const Checkpoint& c) {
    int64_t n = 0;
    for (const auto& [name, values] : c.w) n += static_cast<int64_t>(values.size()) * 4;
    return n;
  }

  // The most memory a fresh model allocates for a prompt of `prompt` tokens (none: decode steps
  // only) and 4 decode steps after it, beyond what it holds once loaded.
  int64_t forward_peak(const Checkpoint& c, GGMLType matrices, int64_t prompt) const {
    llm::Model m = llm::Model::from_gguf(save(kLlama, c, matrices));
    GlobalCounters::reset();
    const int64_t before = GlobalCounters::mem_used;
    if (prompt > 0) m.forward(Tensor::from_vector(std::vector<int32_t>(static_cast<size_t>(prompt), 3), {1, prompt}), 0).realize();
    for (int64_t pos = prompt; pos < prompt + 4; pos++) m.forward(Tensor::from_vector(std::vector<int32_t>{3}, {1, 1}), pos).realize();
    return GlobalCounters::mem_peak - before;
  }

  std::string error_of(const std::function<void()>& fn) const {
    try {
      fn();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  }

  kt::TempDir temp_{"kiln_llm_gguf"};
};

TEST_F(LlmGGUF, LlamaF32) { expect_matches_reference(kLlama, GGMLType::F32); }
TEST_F(LlmGGUF, LlamaF16) { expect_matches_reference(kLlama, GGMLType::F16); }
TEST_F(LlmGGUF, LlamaQ8_0) { expect_matches_reference(kLlama, GGMLType::Q8_0); }
TEST_F(LlmGGUF, LlamaQ4_0) { expect_matches_reference(kLlama, GGMLType::Q4_0); }

// Qwen2: q/k/v biases, the half rope (rows not permuted), the output tied to a quantized embedding.
TEST_F(LlmGGUF, Qwen2BiasesTiedQ8_0) {
  Arch a = kLlama;
  a.model_type = "qwen2", a.bias = true, a.tied = true, a.theta = 1e6;
  expect_matches_reference(a, GGMLType::Q8_0);
}

// Qwen3: per-head q/k norms and a head size other than dim / heads (attention.key_length).
TEST_F(LlmGGUF, Qwen3KeyLengthQ4_0) {
  Arch a = kLlama;
  a.model_type = "qwen3", a.qk_norm = true, a.head_dim = 16;
  expect_matches_reference(a, GGMLType::Q4_0);
}

// Decode steps read quantized weights in place, the embedding included (its tokens' blocks are
// selected, then decoded): they allocate no more than with float32 weights mapped from the file,
// give or take the selected blocks and a few input rows that a quantized product reads stored
// (hidden: 64 floats). (The smallest float32 matrix here is 2 KiB.) A prompt of many
// tokens may store a matrix decoded for its kernel when each weight would be decoded once per
// token otherwise (the scheduler's recompute rule), a buffer of one matrix, freed after.
TEST_F(LlmGGUF, DecodeReadsQuantizedWeightsInPlace) {
  const Checkpoint c = kt::llm_ref::random_checkpoint(kLlama);
  const int64_t plain = forward_peak(c, GGMLType::F32, 0);
  for (GGMLType t : {GGMLType::F16, GGMLType::Q8_0, GGMLType::Q4_0})
    EXPECT_LT(forward_peak(c, t, 0), plain + 1536) << ggml_traits(t).name << " against F32's " << plain;
  EXPECT_LT(forward_peak(c, GGMLType::Q8_0, 5), forward_peak(c, GGMLType::F32, 5) + 1536) << "a prompt, then decode steps";
}

TEST_F(LlmGGUF, BadFilesAreClearErrors) {
  const Checkpoint c = kt::llm_ref::random_checkpoint(kLlama);
  auto load_with = [&](const std::function<void(GGUFMetadata&)>& edit) {
    return error_of([&] { llm::Model::from_gguf(save(kLlama, c, GGMLType::F32, edit)); });
  };
  auto set = [](const std::string& key, GGUFValue v) {
    return [key, v](GGUFMetadata& m) {
      for (auto& [k, old] : m)
        if (k == key) old = v;
    };
  };
  auto drop = [](const std::string& key) {
    return [key](GGUFMetadata& m) { std::erase_if(m, [&](const auto& kv) { return kv.first == key; }); };
  };
  EXPECT_NE(load_with(set("general.architecture", "gpt2")).find("general.architecture: expected llama, mistral, qwen2 or qwen3, got \"gpt2\""),
            std::string::npos);
  EXPECT_NE(load_with(drop("llama.block_count")).find("missing metadata key llama.block_count (expected a positive integer)"),
            std::string::npos);
  EXPECT_NE(load_with(set("llama.attention.head_count", "four")).find("llama.attention.head_count: expected a number, got a string"),
            std::string::npos);
  EXPECT_NE(load_with(set("llama.attention.head_count_kv", uint32_t(3))).find("must be a multiple of llama.attention.head_count_kv (3)"),
            std::string::npos);
  EXPECT_NE(load_with(set("llama.rope.dimension_count", uint32_t(4))).find("rope.dimension_count: expected the head size 8"),
            std::string::npos);
  EXPECT_NE(load_with(set("llama.feed_forward_length", uint32_t(48))).find("blk.0.ffn_gate.weight: expected shape (48, 32), got (64, 32)"),
            std::string::npos);
  // no output.weight means tied: a file without token_embd.weight has nothing to tie to
  Checkpoint no_embed = c;
  no_embed.w.erase("model.embed_tokens.weight");
  EXPECT_NE(error_of([&] { llm::Model::from_gguf(save(kLlama, no_embed, GGMLType::F32)); }).find("missing tensor token_embd.weight (vocab, 32)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { llm::Model::from_gguf((temp_.dir / "absent.gguf").string()); }).find("absent.gguf"), std::string::npos);
}

}  // namespace
