#pragma once
// Tokenizer's tables, built once by Tokenizer::from_vocab (tokenizer.cpp) and read by the two algorithms
// (tokenizer_spm.cpp, tokenizer_bpe.cpp).
#include <kiln/llm_tokenizer.h>

#include <array>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "llm/pretokenize.h"

namespace kiln::llm {

struct Tokenizer::Impl {
  bool spm = true;                  // "llama" (SentencePiece); false: "gpt2" (byte-level BPE)
  std::vector<std::string> text;    // each token's text
  std::vector<TokenType> type;
  std::vector<float> score;
  std::vector<std::string> bytes;   // what each token decodes to
  std::unordered_map<std::string, int32_t> piece_id;  // Normal and UserDefined tokens: what merging may produce
  std::array<int32_t, 256> byte_id;                   // each byte's token (<0xNN>, or its byte-level char); -1: none
  std::array<std::vector<int32_t>, 256> specials;     // tokens matched in the text, by first byte, longest first
  std::unordered_map<std::string, int32_t> merge_rank;  // byte-level BPE: "left right" -> its rank
  PreSplit pre = PreSplit::Gpt2;
  bool ignore_merges = false;       // LLaMA 3: a word that is a token is that token, whatever the merges
  int32_t bos = -1, eos = -1, unknown = -1;
  bool add_bos = true, add_space_prefix = true;
};

// SentencePiece: the text with spaces as "▁"; then a fragment of it (between special tokens) to token ids.
std::string spm_escape(std::string_view text);
void spm_encode(const Tokenizer::Impl& t, std::string_view fragment, std::vector<int32_t>& out);
std::string spm_token_bytes(const std::string& text, TokenType type);

// Byte-level BPE: GPT-2's printable character for each byte, the pre-split and merge of a fragment, and decoding.
const std::array<std::string, 256>& byte_chars();
void bpe_encode(const Tokenizer::Impl& t, std::string_view fragment, std::vector<int32_t>& out);
std::string bpe_token_bytes(const std::string& text, TokenType type);

// <0xNN> -> NN, or -1 when `text` is not a byte token's text.
int byte_token_value(std::string_view text);

}  // namespace kiln::llm
