#pragma once
// The hyperparameters of a LLaMA-family model, whichever file they come from (config.json, GGUF).
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::nn::state {
class GGUFFile;
}

namespace kiln::llm {

// How rotary embeddings pair a head's features: Hugging Face checkpoints rotate (x[i], x[i + d/2])
// ("half", rotate_half); GGUF files store q/k rows permuted so that they rotate (x[2i], x[2i+1]).
enum class RopeLayout { Half, Pair };

struct RopeScaling {
  std::string type;  // "" (none), "linear" or "llama3"
  double factor = 1;
  double low_freq_factor = 1, high_freq_factor = 4;  // llama3
  int64_t original_max_position = 8192;              // llama3
  std::vector<float> freq_factors;  // GGUF's rope_freqs.weight (llama3 there): inverse frequency i is divided by entry i
};

struct Config {
  std::string model_type;  // llama, mistral, qwen2, qwen3
  int64_t dim = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, hidden_dim = 0, vocab = 0;
  double norm_eps = 1e-5;
  double rope_theta = 10000;
  RopeScaling rope_scaling;
  RopeLayout rope_layout = RopeLayout::Half;
  bool tied_embeddings = false;
  bool qkv_bias = false;  // Qwen2, or attention_bias
  bool qk_norm = false;   // Qwen3: RMSNorm over each head of q and k before the rotation
  int64_t sliding_window = 0;  // Mistral: a query sees at most this many positions back (0: all)
  int64_t max_context = 0;     // positions the KV cache holds
  std::vector<int32_t> eos_ids;
};

// The KV cache's length when the model allows more: attention reads the whole cache at every step.
inline constexpr int64_t kDefaultMaxContext = 4096;

// Parses a Hugging Face config.json's text; `where` names it in errors.
Config config_from_hf_json(const std::string& text, const std::string& where);

// Reads a GGUF file's `<arch>.*` and tokenizer.ggml.* metadata (and its rope_freqs.weight, if any) as
// llama.cpp writes them; `where` names the file in errors.
Config config_from_gguf(const nn::state::GGUFFile& file, const std::string& where);

// The rotary inverse frequencies (head_dim/2 of them) after the config's scaling.
std::vector<float> rope_inv_freq(const Config& c);

}  // namespace kiln::llm
