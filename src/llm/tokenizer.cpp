// Tokenizer: the vocabulary checked and indexed once; special tokens cut out of the text, the rest handed to
// SentencePiece's or byte-level BPE's merging (tokenizer_spm.cpp, tokenizer_bpe.cpp).
#include <kiln/error.h>
#include <kiln/llm_tokenizer.h>

#include <algorithm>

#include "llm/tokenizer_impl.h"

namespace kiln::llm {

namespace {

// tokenizer.ggml.pre's names for the pre-splits kiln knows; LLaMA 3's vocabulary also skips merging whole tokens.
struct PreSplitName {
  std::string_view name;
  PreSplit pre;
  bool ignore_merges;
};
constexpr PreSplitName kPreSplits[] = {
    {"", PreSplit::Gpt2, false},          {"default", PreSplit::Gpt2, false}, {"gpt-2", PreSplit::Gpt2, false},
    {"llama-bpe", PreSplit::Llama3, true}, {"llama3", PreSplit::Llama3, true}, {"qwen2", PreSplit::Qwen2, false},
};

void set_pre_split(Tokenizer::Impl& t, const std::string& pre) {
  for (const PreSplitName& p : kPreSplits) {
    if (p.name == pre) {
      t.pre = p.pre;
      t.ignore_merges = p.ignore_merges;
      return;
    }
  }
  throw_error("Tokenizer: unknown pre-tokenizer \"", pre, "\" (tokenizer.ggml.pre); expected \"gpt-2\", ",
              "\"llama-bpe\" or \"qwen2\"");
}

void check_id(int32_t id, size_t n, const char* what) {
  if (id < -1 || id >= static_cast<int64_t>(n)) {
    throw_error("Tokenizer: ", what, " ", id, " is out of range for a vocabulary of ", n, " tokens (or -1: none)");
  }
}

void index_merges(Tokenizer::Impl& t, const std::vector<std::string>& merges) {
  t.merge_rank.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string& m = merges[rank];
    const size_t space = m.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == m.size() || m.find(' ', space + 1) != m.npos) {
      throw_error("Tokenizer: merge ", rank, " is \"", m, "\"; expected two tokens separated by one space");
    }
    for (const std::string& part : {m.substr(0, space), m.substr(space + 1)}) {
      if (!t.piece_id.count(part)) throw_error("Tokenizer: merge ", rank, " (\"", m, "\") names \"", part,
                                               "\", which is not a token of the vocabulary");
    }
    t.merge_rank.emplace(m, static_cast<int32_t>(rank));  // a repeated merge keeps its first rank
  }
}

}  // namespace

int byte_token_value(std::string_view text) {
  const auto hex = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; };
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  const int hi = hex(text[3]), lo = hex(text[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

Tokenizer Tokenizer::from_vocab(const TokenizerData& d) {
  auto t = std::make_shared<Impl>();
  if (d.model != "llama" && d.model != "gpt2") {
    throw_error("Tokenizer: unknown tokenizer model \"", d.model, "\" (tokenizer.ggml.model); expected \"llama\" ",
                "(SentencePiece) or \"gpt2\" (byte-level BPE)");
  }
  t->spm = d.model == "llama";
  const size_t n = d.tokens.size();
  if (n == 0) throw_error("Tokenizer: the vocabulary is empty; expected at least one token");
  if (d.scores.size() != n && !(d.scores.empty() && !t->spm)) {
    throw_error("Tokenizer: ", d.scores.size(), " scores for ", n, " tokens; expected one per token",
                t->spm ? "" : " or none");
  }
  if (!d.token_types.empty() && d.token_types.size() != n) {
    throw_error("Tokenizer: ", d.token_types.size(), " token types for ", n, " tokens; expected one per token or none");
  }
  check_id(d.bos_id, n, "bos_token_id");
  check_id(d.eos_id, n, "eos_token_id");
  check_id(d.unknown_id, n, "unknown_token_id");
  t->bos = d.bos_id, t->eos = d.eos_id, t->unknown = d.unknown_id;
  t->add_bos = d.add_bos.value_or(t->spm);
  t->add_space_prefix = d.add_space_prefix.value_or(t->spm);
  if (t->add_bos && t->bos < 0) throw_error("Tokenizer: add_bos_token is set but there is no bos_token_id");

  t->text = d.tokens;
  t->score = d.scores.empty() ? std::vector<float>(n, 0.f) : d.scores;
  t->byte_id.fill(-1);
  for (size_t i = 0; i < n; ++i) {
    const int32_t ty = d.token_types.empty() ? 1 : d.token_types[i];
    if (ty < 1 || ty > 6) throw_error("Tokenizer: token ", i, " has type ", ty, "; expected 1 to 6 (a TokenType)");
    const auto type = static_cast<TokenType>(ty);
    const auto id = static_cast<int32_t>(i);
    t->type.push_back(type);
    if (type == TokenType::Byte) {
      const int b = byte_token_value(d.tokens[i]);
      if (b < 0) throw_error("Tokenizer: byte token ", i, " is \"", d.tokens[i], "\"; expected <0xNN>");
      t->byte_id[b] = id;
    }
    if (type == TokenType::Normal || type == TokenType::UserDefined) t->piece_id.emplace(d.tokens[i], id);
    const bool special = type == TokenType::UserDefined || (type == TokenType::Control && !t->spm);
    if (special && !d.tokens[i].empty()) t->specials[static_cast<uint8_t>(d.tokens[i][0])].push_back(id);
    t->bytes.push_back(t->spm ? spm_token_bytes(d.tokens[i], type) : bpe_token_bytes(d.tokens[i], type));
  }
  for (auto& bucket : t->specials) {
    std::stable_sort(bucket.begin(), bucket.end(),
                     [&](int32_t a, int32_t b) { return t->text[a].size() > t->text[b].size(); });
  }
  if (!t->spm) {
    set_pre_split(*t, d.pre);
    index_merges(*t, d.merges);
    for (int b = 0; b < 256; ++b) {
      if (const auto it = t->piece_id.find(byte_chars()[b]); it != t->piece_id.end()) t->byte_id[b] = it->second;
    }
  }
  return Tokenizer(std::move(t));
}

std::vector<int32_t> Tokenizer::encode(const std::string& text, bool add_bos) const {
  const Impl& t = *impl_;
  std::vector<int32_t> out;
  if (add_bos && t.add_bos) out.push_back(t.bos);
  const std::string prefixed = t.add_space_prefix && !text.empty() ? " " + text : text;
  const std::string s = t.spm ? spm_escape(prefixed) : prefixed;
  // Special tokens first (the longest at each position), the text between them to the merging.
  size_t start = 0;
  const auto flush = [&](size_t end) {
    if (end == start) return;
    const std::string_view fragment = std::string_view(s).substr(start, end - start);
    if (t.spm) spm_encode(t, fragment, out);
    else bpe_encode(t, fragment, out);
  };
  for (size_t pos = 0; pos < s.size();) {
    const auto& bucket = t.specials[static_cast<uint8_t>(s[pos])];
    const auto match = std::find_if(bucket.begin(), bucket.end(),
                                    [&](int32_t id) { return s.compare(pos, t.text[id].size(), t.text[id]) == 0; });
    if (match == bucket.end()) {
      ++pos;
      continue;
    }
    flush(pos);
    out.push_back(*match);
    pos += t.text[*match].size();
    start = pos;
  }
  flush(s.size());
  return out;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  const Impl& t = *impl_;
  std::string s;
  bool first = true;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size()) {
      throw_error("Tokenizer.decode: token id ", id, " is out of range for a vocabulary of ", vocab_size(), " tokens");
    }
    const std::string& piece = t.bytes[id];
    // The space encode put in front of the text: the first piece that is text starts with it.
    const bool drop_space = first && t.add_space_prefix && t.type[id] == TokenType::Normal && !piece.empty() &&
                            piece[0] == ' ';
    s.append(piece, drop_space ? 1 : 0);
    if (t.type[id] != TokenType::Control) first = false;
  }
  return s;
}

int32_t Tokenizer::bos() const { return impl_->bos; }
int32_t Tokenizer::eos() const { return impl_->eos; }
int64_t Tokenizer::vocab_size() const { return static_cast<int64_t>(impl_->text.size()); }

}  // namespace kiln::llm
