#pragma once
// kiln::llm::Tokenizer: text <-> token ids for LLaMA-family models, from the vocabulary a GGUF file
// stores under tokenizer.ggml.* (TokenizerData holds those fields). Two algorithms, as llama.cpp names them:
//   "llama": SentencePiece BPE (LLaMA 1/2, Mistral): highest-score pair merges first, "▁" for spaces, byte fallback;
//   "gpt2":  byte-level BPE (GPT-2, LLaMA 3, Qwen2): a regex pre-split, then merges by rank over bytes.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln::llm {

// tokenizer.ggml.token_type's values.
enum class TokenType : int32_t { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

struct TokenizerData {
  std::string model;                 // tokenizer.ggml.model: "llama" or "gpt2"
  std::string pre;                   // tokenizer.ggml.pre (gpt2 only): "gpt-2" (or "", "default"), "llama-bpe", "qwen2"
  std::vector<std::string> tokens;   // tokenizer.ggml.tokens: each token's text; its index is its id
  std::vector<float> scores;         // tokenizer.ggml.scores: one per token ("llama": higher merges first), or none
  std::vector<int32_t> token_types;  // tokenizer.ggml.token_type: one TokenType per token, or none (all Normal)
  std::vector<std::string> merges;   // tokenizer.ggml.merges ("gpt2"): "left right", the first merges first
  int32_t bos_id = -1, eos_id = -1, unknown_id = -1;  // tokenizer.ggml.{bos,eos,unknown}_token_id; -1: none
  std::optional<bool> add_bos;           // tokenizer.ggml.add_bos_token; unset: true for "llama", false for "gpt2"
  std::optional<bool> add_space_prefix;  // tokenizer.ggml.add_space_prefix; unset: true for "llama", false for "gpt2"
};

class Tokenizer {
 public:
  // Checks the data (a known model, a non-empty vocabulary, ids in range, merges of known tokens).
  static Tokenizer from_vocab(const TokenizerData& data);
  // The vocabulary a GGUF file stores under tokenizer.ggml.* (the tensors are not read).
  static Tokenizer from_gguf(const std::string& path);
  // A Hugging Face tokenizer.json (`path`: the file or its folder) of a byte-level or SentencePiece-style BPE
  // model, with the BOS/EOS tokens and add_bos_token of the tokenizer_config.json beside it when there.
  static Tokenizer from_hf(const std::string& path);

  // `text` is UTF-8 (invalid bytes are kept: byte fallback / byte tokens). User-defined tokens are matched in the
  // text; control tokens too for "gpt2" (chat templates write them), never for "llama" (as SentencePiece).
  std::vector<int32_t> encode(const std::string& text, bool add_bos = true) const;  // BOS only if the model adds one
  std::string decode(const std::vector<int32_t>& ids) const;  // bytes: UTF-8 when the ids came from encode
  int32_t bos() const;
  int32_t eos() const;
  int64_t vocab_size() const;

  struct Impl;

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace kiln::llm
