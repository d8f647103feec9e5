// Byte-level BPE (GPT-2, LLaMA 3, Qwen2): the text is pre-split into words, each word's bytes become GPT-2's
// printable characters (so every byte string has tokens), and the characters merge by the merge list's ranks.
#include <kiln/error.h>

#include <unordered_map>

#include "llm/pair_merge.h"
#include "llm/tokenizer_impl.h"
#include "llm/unicode.h"

namespace kiln::llm {

const std::array<std::string, 256>& byte_chars() {
  // Printable Latin-1 bytes stand for themselves; the others (controls, space, 0x7F-0xA0, 0xAD) take the code
  // points from U+0100 on, in byte order.
  static const std::array<std::string, 256> chars = [] {
    std::array<std::string, 256> c;
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      c[b] = utf8_encode(printable ? b : next++);
    }
    return c;
  }();
  return chars;
}

namespace {

void encode_word(const Tokenizer::Impl& t, std::string_view word, std::vector<int32_t>& out) {
  std::string chars;
  std::vector<size_t> sizes;
  for (char c : word) {
    const std::string& ch = byte_chars()[static_cast<uint8_t>(c)];
    chars += ch;
    sizes.push_back(ch.size());
  }
  if (t.ignore_merges) {
    if (const auto it = t.piece_id.find(chars); it != t.piece_id.end()) return out.push_back(it->second);
  }
  std::string key;
  const PairRank rank = [&](std::string_view left, std::string_view right) -> std::optional<double> {
    key.assign(left).append(" ").append(right);
    const auto it = t.merge_rank.find(key);
    if (it == t.merge_rank.end()) return std::nullopt;
    return it->second;
  };
  for (std::string_view piece : merge_pairs(chars, sizes, rank)) {
    if (const auto it = t.piece_id.find(std::string(piece)); it != t.piece_id.end()) {
      out.push_back(it->second);
      continue;
    }
    // A merge whose result is no token: the piece's bytes, one token each.
    for (size_t pos = 0; pos < piece.size();) {
      const CodePoint cp = next_code_point(piece, pos);
      const std::string ch(piece.substr(pos, cp.size));
      const auto it = t.piece_id.find(ch);
      if (it != t.piece_id.end()) out.push_back(it->second);
      else if (t.unknown >= 0) out.push_back(t.unknown);
      else throw_error("Tokenizer.encode: the vocabulary has no token for the byte-level character \"", ch,
                       "\" and no unknown token");
      pos += cp.size;
    }
  }
}

}  // namespace

void bpe_encode(const Tokenizer::Impl& t, std::string_view fragment, std::vector<int32_t>& out) {
  for (std::string_view word : pre_split(fragment, t.pre)) encode_word(t, word, out);
}

std::string bpe_token_bytes(const std::string& text, TokenType type) {
  if (type == TokenType::Byte) return std::string(1, static_cast<char>(byte_token_value(text)));
  if (type != TokenType::Normal) return text;  // control and user-defined tokens are their text
  static const std::unordered_map<std::string, char> byte_of = [] {
    std::unordered_map<std::string, char> m;
    for (int b = 0; b < 256; ++b) m[byte_chars()[b]] = static_cast<char>(b);
    return m;
  }();
  std::string s;
  for (size_t pos = 0; pos < text.size();) {
    const CodePoint cp = next_code_point(text, pos);
    const std::string ch = text.substr(pos, cp.size);
    // A character outside GPT-2's byte alphabet (in no byte-level vocabulary's merges) decodes as itself.
    const auto it = byte_of.find(ch);
    s += it == byte_of.end() ? ch : std::string(1, it->second);
    pos += cp.size;
  }
  return s;
}

}  // namespace kiln::llm
