#pragma once
// Language models of the LLaMA family (LLaMA, Mistral, Qwen2, Qwen3): a decoder-only transformer built
// from kiln's Tensor ops, with a KV cache and CPU-side sampling.
//
//   auto model = kiln::llm::Model::from_safetensors("path/to/hf-folder");
//   std::vector<int32_t> ids = model.generate(prompt_ids, 32, {.temperature = 0.7f, .top_p = 0.9f, .seed = 1});
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/llm_tokenizer.h"
#include "kiln/nn/gguf_json.h"
#include "kiln/tensor.h"

namespace kiln::llm {

// How generate() picks each token from the last position's logits. temperature 0 is greedy (argmax).
// Otherwise, in Hugging Face's order: the repetition penalty, the temperature, then top_k (0: off),
// top_p (1: off) and min_p (0: off) each narrow the candidates, and one is drawn from what is left,
// renormalized, with a generator seeded by `seed` (the same seed gives the same tokens).
struct Sampling {
  float temperature = 0.f;
  int top_k = 0;
  float top_p = 1.f;
  float min_p = 0.f;
  float repeat_penalty = 1.f;  // > 1 makes tokens already in the context less likely (CTRL's rule)
  uint64_t seed = 0;
};

class Model {
 public:
  // A Hugging Face folder: config.json and every *.safetensors in it. Weights keep their stored dtype
  // (float32, float16, bfloat16); the kernels that read them compute in float32.
  static Model from_safetensors(const std::string& folder);

  // A GGUF file (llama.cpp's format; architectures llama, mistral, qwen2, qwen3): the config from its
  // `<arch>.*` metadata, weights memory-mapped in their stored type (F32, F16, BF16 and the quantized
  // types), dequantized inside the kernels that read them.
  static Model from_gguf(const std::string& path);

  // tokens (B, T) int32 at positions start_pos .. start_pos+T-1 -> logits (B, T, vocab) float32.
  // Writes those positions' keys and values into the KV cache, and attends to the cache's first
  // start_pos+T positions: a caller continues a sequence by passing the next start_pos.
  Tensor forward(const Tensor& tokens, int64_t start_pos);

  // Empties the cache, runs the prompt, then appends up to max_tokens tokens, stopping early at an
  // end-of-sequence token (which is returned) or when on_token returns false. Returns the new tokens.
  std::vector<int32_t> generate(const std::vector<int32_t>& prompt, int max_tokens, const Sampling& s = {},
                                const std::function<bool(int32_t)>& on_token = {});

  void reset();  // empty the KV cache

  int64_t vocab_size() const;
  int64_t max_context() const;  // positions the KV cache holds
  const std::vector<int32_t>& eos_ids() const;

  struct Impl;

 private:
  explicit Model(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace kiln::llm
