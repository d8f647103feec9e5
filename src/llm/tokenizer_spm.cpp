// SentencePiece's BPE (LLaMA 1/2, Mistral), as llama.cpp's llm_tokenizer_spm runs it: the text's characters merge
// pairwise, the pair whose merged piece has the highest score first; a character no piece covers becomes its
// bytes' <0xNN> tokens (byte fallback), or the unknown token.
#include <kiln/error.h>

#include "llm/pair_merge.h"
#include "llm/tokenizer_impl.h"
#include "llm/unicode.h"

namespace kiln::llm {

namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581 "▁", SentencePiece's space
constexpr std::string_view kUnknownSurface = " \xE2\x81\x87 ";  // " ⁇ ", as SentencePiece decodes <unk>

}  // namespace

std::string spm_escape(std::string_view text) {
  std::string s;
  s.reserve(text.size());
  for (char c : text) {
    if (c == ' ') s += kSpace;
    else s += c;
  }
  return s;
}

void spm_encode(const Tokenizer::Impl& t, std::string_view fragment, std::vector<int32_t>& out) {
  std::vector<size_t> sizes;
  for (size_t pos = 0; pos < fragment.size(); pos += sizes.back()) sizes.push_back(next_code_point(fragment, pos).size);
  std::string merged;
  const PairRank rank = [&](std::string_view left, std::string_view right) -> std::optional<double> {
    merged.assign(left).append(right);
    const auto it = t.piece_id.find(merged);
    if (it == t.piece_id.end()) return std::nullopt;
    return -static_cast<double>(t.score[it->second]);
  };
  bool prev_unknown = false;
  for (std::string_view piece : merge_pairs(fragment, sizes, rank)) {
    if (const auto it = t.piece_id.find(std::string(piece)); it != t.piece_id.end()) {
      out.push_back(it->second);
      prev_unknown = false;
      continue;
    }
    bool all_bytes = true;
    for (char c : piece) all_bytes = all_bytes && t.byte_id[static_cast<uint8_t>(c)] >= 0;
    if (all_bytes) {
      for (char c : piece) out.push_back(t.byte_id[static_cast<uint8_t>(c)]);
      continue;
    }
    if (t.unknown < 0) {
      throw_error("Tokenizer.encode: no token for \"", piece, "\": the vocabulary has neither its bytes' <0xNN> ",
                  "tokens nor an unknown token");
    }
    // SentencePiece writes a run of unknown characters as one unknown token.
    if (!prev_unknown) out.push_back(t.unknown);
    prev_unknown = true;
  }
}

std::string spm_token_bytes(const std::string& text, TokenType type) {
  switch (type) {
    case TokenType::Control: return "";
    case TokenType::Unknown: return std::string(kUnknownSurface);
    case TokenType::Byte: return std::string(1, static_cast<char>(byte_token_value(text)));
    default: break;
  }
  std::string s;
  for (size_t pos = 0; pos < text.size();) {
    if (text.compare(pos, kSpace.size(), kSpace) == 0) {
      s += ' ';
      pos += kSpace.size();
    } else {
      s += text[pos++];
    }
  }
  return s;
}

}  // namespace kiln::llm
