// The tokenizers against their algorithms' definitions: SentencePiece's score-ordered merging and byte fallback on
// a hand-made vocabulary, the pre-split regexes' words derived by hand, and byte-level BPE against a naive
// reference (GPT-2's own loop: merge every occurrence of the lowest-ranked pair, repeat) over merges learned here.
// tests/python/api/test_llm_tokenizer.py compares with SentencePiece itself.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "error_message.h"
#include "kiln/error.h"
#include "kiln/llm_tokenizer.h"
#include "kiln/nn/gguf.h"
#include "llm/pretokenize.h"
#include "llm/tokenizer_impl.h"

namespace {

using kiln::llm::PreSplit;
using kiln::llm::Tokenizer;
using kiln::llm::TokenizerData;
using kiln::llm::TokenType;
using Ids = std::vector<int32_t>;

// <unk> <s> </s>, optionally the 256 <0xNN> byte tokens, then `pieces` with their scores.
TokenizerData spm_data(const std::vector<std::pair<std::string, float>>& pieces, bool byte_tokens) {
  TokenizerData d;
  d.model = "llama";
  const auto add = [&](const std::string& text, float score, TokenType type) {
    d.tokens.push_back(text);
    d.scores.push_back(score);
    d.token_types.push_back(static_cast<int32_t>(type));
  };
  add("<unk>", 0, TokenType::Unknown);
  add("<s>", 0, TokenType::Control);
  add("</s>", 0, TokenType::Control);
  d.unknown_id = 0, d.bos_id = 1, d.eos_id = 2;
  for (int b = 0; byte_tokens && b < 256; ++b) {
    char text[8];
    std::snprintf(text, sizeof text, "<0x%02X>", b);
    add(text, 0, TokenType::Byte);
  }
  for (const auto& [text, score] : pieces) add(text, score, TokenType::Normal);
  return d;
}

int32_t id_of(const TokenizerData& d, const std::string& text) {
  for (size_t i = 0; i < d.tokens.size(); ++i) {
    if (d.tokens[i] == text) return static_cast<int32_t>(i);
  }
  ADD_FAILURE() << "no token " << text;
  return -1;
}

const std::string kSp = "\xE2\x96\x81";  // ▁

TEST(SpmTokenizer, HighestScorePairMergesFirst) {
  // "▁abc": ▁a, ab, bc are all pieces; ab scores best, then abc can form; ▁ab and ▁abc are no pieces.
  const TokenizerData d = spm_data({{kSp, -10}, {"a", -10}, {"b", -10}, {"c", -10}, {kSp + "a", -3}, {"ab", -1},
                                    {"bc", -2}, {"abc", -4}},
                                   true);
  const Tokenizer t = Tokenizer::from_vocab(d);
  EXPECT_EQ(t.encode("abc", false), (Ids{id_of(d, kSp), id_of(d, "abc")}));
  EXPECT_EQ(t.encode("abc"), (Ids{1, id_of(d, kSp), id_of(d, "abc")}));
  // Without ab: bc (-2) merges before ▁a (-3), and ▁a before abc (-4).
  TokenizerData no_ab = d;
  no_ab.tokens[id_of(d, "ab")] = "zz";
  const Tokenizer u = Tokenizer::from_vocab(no_ab);
  EXPECT_EQ(u.encode("abc", false), (Ids{id_of(d, kSp + "a"), id_of(d, "bc")}));
  // Spaces are ▁ (the text's own leading space too); é is no piece: its two UTF-8 bytes.
  EXPECT_EQ(t.encode(" a\xC3\xA9", false), (Ids{id_of(d, kSp), id_of(d, kSp + "a"), 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(t.encode("", true), (Ids{1}));
  // Control tokens are never made from text.
  for (int32_t id : t.encode("<s></s>", false)) EXPECT_GT(id, 2);
}

TEST(SpmTokenizer, DecodeInvertsEncode) {
  const TokenizerData d = spm_data({{kSp, -10}, {"a", -10}, {"b", -10}, {kSp + "a", -3}, {"ab", -1}}, true);
  const Tokenizer t = Tokenizer::from_vocab(d);
  for (const std::string s : {"", "a", " a", "a ", "  ab  b ", "a\nb\tab", "\xF0\x9F\x99\x82 caf\xC3\xA9 \xE6\x9D\xB1",
                              "\n", " "}) {
    EXPECT_EQ(t.decode(t.encode(s)), s) << s;
    EXPECT_EQ(t.decode(t.encode(s, false)), s) << s;
  }
  // BOS/EOS decode to nothing; the dummy prefix's space goes only where the text starts.
  EXPECT_EQ(t.decode({1, id_of(d, kSp + "a"), id_of(d, kSp + "a"), 2}), "a a");
}

TEST(SpmTokenizer, UnknownWithoutByteTokens) {
  // No <0xNN> tokens: a character no piece covers is <unk>, and a run of them one <unk>, as SentencePiece does.
  const TokenizerData d = spm_data({{kSp, -10}, {"a", -10}, {"b", -10}, {kSp + "a", -3}}, false);
  const Tokenizer t = Tokenizer::from_vocab(d);
  EXPECT_EQ(t.encode("a\xC3\xA9\xC3\xA9 b", false), (Ids{id_of(d, kSp + "a"), 0, id_of(d, kSp), id_of(d, "b")}));
  EXPECT_EQ(t.decode({id_of(d, kSp + "a"), 0}), "a \xE2\x81\x87 ");
  TokenizerData no_unk = d;
  no_unk.unknown_id = -1;
  EXPECT_NE(kt::error_of([&] { Tokenizer::from_vocab(no_unk).encode("\xC3\xA9"); }).find("no token for"),
            std::string::npos);
}

TEST(SpmTokenizer, UserDefinedTokensAreMatchedWhole) {
  TokenizerData d = spm_data({{kSp, -10}, {"a", -10}, {"<", -10}, {"|", -10}, {"u", -10}, {">", -10}}, true);
  d.tokens.push_back("<|u|>");
  d.scores.push_back(0);
  d.token_types.push_back(static_cast<int32_t>(TokenType::UserDefined));
  const Tokenizer t = Tokenizer::from_vocab(d);
  EXPECT_EQ(t.encode("a<|u|>a", false), (Ids{id_of(d, kSp), id_of(d, "a"), id_of(d, "<|u|>"), id_of(d, "a")}));
  EXPECT_EQ(t.decode(t.encode("a<|u|>a")), "a<|u|>a");
}

std::vector<std::string> words(std::string_view text, PreSplit kind) {
  std::vector<std::string> w;
  for (std::string_view v : kiln::llm::pre_split(text, kind)) w.emplace_back(v);
  return w;
}

using Words = std::vector<std::string>;

TEST(PreSplit, Gpt2Regex) {
  // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+, worked through by hand.
  EXPECT_EQ(words("Hello world's  3.14 \n\n  x", PreSplit::Gpt2),
            (Words{"Hello", " world", "'s", " ", " 3", ".", "14", " \n\n ", " x"}));
  EXPECT_EQ(words("I'M (hello)\thi 12345  ", PreSplit::Gpt2),
            (Words{"I", "'", "M", " (", "hello", ")", "\t", "hi", " 12345", "  "}));
  // é is a letter, 東京 letters (Lo), ١٢ Arabic-Indic digits (Nd), ½ a number (No), 😀 neither.
  EXPECT_EQ(words("caf\xC3\xA9 \xE6\x9D\xB1\xE4\xBA\xAC \xD9\xA1\xD9\xA2\xC2\xBD \xF0\x9F\x98\x80!", PreSplit::Gpt2),
            (Words{"caf\xC3\xA9", " \xE6\x9D\xB1\xE4\xBA\xAC", " \xD9\xA1\xD9\xA2\xC2\xBD", " \xF0\x9F\x98\x80!"}));
  // Bytes that are not UTF-8 are neither letters, numbers nor spaces.
  EXPECT_EQ(words("a\xFF\xFE" "b \x80", PreSplit::Gpt2), (Words{"a", "\xFF\xFE", "b", " \x80"}));
  EXPECT_EQ(words("", PreSplit::Gpt2), Words{});
}

TEST(PreSplit, Llama3AndQwen2Regex) {
  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  EXPECT_EQ(words("Hello world's  3.14 \n\n  x", PreSplit::Llama3),
            (Words{"Hello", " world", "'s", " ", " ", "3", ".", "14", " \n\n", " ", " x"}));
  EXPECT_EQ(words("I'M (hello)\thi 12345  ", PreSplit::Llama3),
            (Words{"I", "'M", " (", "hello", ")", "\thi", " ", "123", "45", "  "}));
  EXPECT_EQ(words("x.\n\ny \r\n", PreSplit::Llama3), (Words{"x", ".\n\n", "y", " \r\n"}));
  EXPECT_EQ(words("a 12345", PreSplit::Qwen2), (Words{"a", " ", "1", "2", "3", "4", "5"}));
}

// GPT-2's printable character for each byte, written out from its definition once more.
std::string byte_char(uint8_t b) {
  const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
  uint32_t cp = b;
  if (!printable) {
    cp = 256;
    for (int c = 0; c < b; ++c) cp += !((c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE);
  }
  std::string s;
  if (cp < 0x80) s += static_cast<char>(cp);
  else s += static_cast<char>(0xC0 | (cp >> 6)), s += static_cast<char>(0x80 | (cp & 0x3F));
  return s;
}

using Symbols = std::vector<std::string>;

// GPT-2's encoder.py bpe(): merge every occurrence of the lowest-ranked pair, left to right, until none has a rank.
Symbols reference_bpe(Symbols w, const std::map<std::pair<std::string, std::string>, int>& ranks) {
  while (w.size() > 1) {
    int best = -1;
    std::pair<std::string, std::string> best_pair;
    for (size_t i = 0; i + 1 < w.size(); ++i) {
      const auto it = ranks.find({w[i], w[i + 1]});
      if (it != ranks.end() && (best < 0 || it->second < best)) best = it->second, best_pair = it->first;
    }
    if (best < 0) break;
    Symbols next;
    for (size_t i = 0; i < w.size(); ++i) {
      if (i + 1 < w.size() && w[i] == best_pair.first && w[i + 1] == best_pair.second) {
        next.push_back(w[i] + w[i + 1]);
        ++i;
      } else {
        next.push_back(w[i]);
      }
    }
    w = next;
  }
  return w;
}

Symbols chars_of(std::string_view word) {
  Symbols s;
  for (char c : word) s.push_back(byte_char(static_cast<uint8_t>(c)));
  return s;
}

// A byte-level vocabulary: the 256 byte characters, merges learned from `corpus` (the most frequent pair each
// round), and <|endoftext|> as a control token.
TokenizerData learn_bpe(const std::string& corpus, int rounds, PreSplit kind, std::string pre) {
  TokenizerData d;
  d.model = "gpt2";
  d.pre = pre;
  for (int b = 0; b < 256; ++b) d.tokens.push_back(byte_char(static_cast<uint8_t>(b)));
  std::vector<Symbols> corpus_words;
  for (std::string_view w : kiln::llm::pre_split(corpus, kind)) corpus_words.push_back(chars_of(w));
  for (int r = 0; r < rounds; ++r) {
    std::map<std::pair<std::string, std::string>, int> counts;
    for (const Symbols& w : corpus_words) {
      for (size_t i = 0; i + 1 < w.size(); ++i) ++counts[{w[i], w[i + 1]}];
    }
    if (counts.empty()) break;
    auto best = counts.begin();
    for (auto it = counts.begin(); it != counts.end(); ++it) best = it->second > best->second ? it : best;
    const auto pair = best->first;
    d.merges.push_back(pair.first + " " + pair.second);
    d.tokens.push_back(pair.first + pair.second);
    std::map<std::pair<std::string, std::string>, int> one{{pair, 0}};
    for (Symbols& w : corpus_words) w = reference_bpe(w, one);
  }
  d.tokens.push_back("<|endoftext|>");
  d.token_types.assign(d.tokens.size(), static_cast<int32_t>(TokenType::Normal));
  d.token_types.back() = static_cast<int32_t>(TokenType::Control);
  d.eos_id = static_cast<int32_t>(d.tokens.size()) - 1;
  return d;
}

std::string random_text(std::mt19937& rng, size_t n) {
  static const std::vector<std::string> parts = {"the", " the", "then", "there", " ", "  ", "\n", "e", "h", "t", "'s",
                                                 "12", "3", ".", "!", "\xC3\xA9", "\xE6\x9D\xB1", "\xF0\x9F\x98\x80",
                                                 "\xFF", "\x80"};
  std::string s;
  for (size_t i = 0; i < n; ++i) s += parts[rng() % parts.size()];
  return s;
}

TEST(BpeTokenizer, MatchesReferenceBpeOverLearnedMerges) {
  std::mt19937 rng(7);
  for (auto [kind, pre] : {std::pair{PreSplit::Gpt2, "gpt-2"}, std::pair{PreSplit::Qwen2, "qwen2"}}) {
    const TokenizerData d = learn_bpe(random_text(rng, 400), 60, kind, pre);
    std::map<std::pair<std::string, std::string>, int> ranks;
    for (size_t r = 0; r < d.merges.size(); ++r) {
      const size_t sp = d.merges[r].find(' ');
      ranks.emplace(std::pair{d.merges[r].substr(0, sp), d.merges[r].substr(sp + 1)}, static_cast<int>(r));
    }
    std::map<std::string, int32_t> ids;
    for (size_t i = 0; i < d.tokens.size(); ++i) ids.emplace(d.tokens[i], static_cast<int32_t>(i));
    const Tokenizer t = Tokenizer::from_vocab(d);
    for (int trial = 0; trial < 40; ++trial) {
      const std::string text = random_text(rng, trial % 12);
      Ids expected;
      for (std::string_view w : kiln::llm::pre_split(text, kind)) {
        for (const std::string& s : reference_bpe(chars_of(w), ranks)) expected.push_back(ids.at(s));
      }
      EXPECT_EQ(t.encode(text), expected) << text;
      EXPECT_EQ(t.decode(t.encode(text)), text);
    }
  }
}

TEST(BpeTokenizer, SpecialTokensAndRawBytesRoundTrip) {
  const TokenizerData d = learn_bpe("the then there the the", 5, PreSplit::Gpt2, "gpt-2");
  const Tokenizer t = Tokenizer::from_vocab(d);
  EXPECT_EQ(t.bos(), -1);
  EXPECT_EQ(t.eos(), d.eos_id);
  EXPECT_EQ(t.vocab_size(), static_cast<int64_t>(d.tokens.size()));
  const Ids ids = t.encode("the<|endoftext|>the");
  ASSERT_EQ(ids.size(), 3u);  // "the" is one token after 5 merges of this corpus, on both sides
  EXPECT_EQ(ids[1], d.eos_id);
  EXPECT_EQ(ids[0], ids[2]);
  std::mt19937 rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    std::string bytes(rng() % 20, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    EXPECT_EQ(t.decode(t.encode(bytes)), bytes);
  }
}

TEST(Tokenizer, BadDataIsAClearError) {
  const auto error = [](TokenizerData d) { return kt::error_of([&] { Tokenizer::from_vocab(d); }); };
  const TokenizerData spm = spm_data({{kSp, -1}, {"a", -1}}, true);
  TokenizerData d = spm;
  d.tokens.clear(), d.scores.clear(), d.token_types.clear();
  EXPECT_NE(error(d).find("vocabulary is empty"), std::string::npos);
  d = spm, d.model = "bert";
  EXPECT_NE(error(d).find("unknown tokenizer model \"bert\""), std::string::npos);
  d = spm, d.scores.pop_back();
  EXPECT_NE(error(d).find("scores for"), std::string::npos);
  d = spm, d.bos_id = 100000;
  EXPECT_NE(error(d).find("bos_token_id 100000 is out of range"), std::string::npos);
  d = spm, d.token_types[5] = 9;
  EXPECT_NE(error(d).find("has type 9"), std::string::npos);
  d = spm, d.tokens[3] = "<0xZZ>";
  EXPECT_NE(error(d).find("expected <0xNN>"), std::string::npos);
  d = spm, d.bos_id = -1;
  EXPECT_NE(error(d).find("add_bos_token is set"), std::string::npos);
  TokenizerData bpe = learn_bpe("aaa", 1, PreSplit::Gpt2, "gpt-2");
  d = bpe, d.merges.push_back("a zz");
  EXPECT_NE(error(d).find("names \"zz\", which is not a token"), std::string::npos);
  d = bpe, d.merges.push_back("abc");
  EXPECT_NE(error(d).find("expected two tokens separated by one space"), std::string::npos);
  d = bpe, d.pre = "falcon";
  EXPECT_NE(error(d).find("unknown pre-tokenizer \"falcon\""), std::string::npos);
  const Tokenizer t = Tokenizer::from_vocab(spm);
  EXPECT_NE(kt::error_of([&] { t.decode({0, static_cast<int32_t>(spm.tokens.size())}); }).find("out of range"),
            std::string::npos);
  EXPECT_NE(kt::error_of([&] { t.decode({-1}); }).find("token id -1"), std::string::npos);
}

// `d` as llama.cpp's converter writes it under tokenizer.ggml.*, through the typed GGUF writer.
std::string write_gguf_vocab(const TokenizerData& d, const std::string& name) {
  using kiln::nn::state::GGUFValue;
  using kiln::nn::state::GGUFValueType;
  const auto array = [](GGUFValueType type, const auto& values) {
    std::vector<GGUFValue> out(values.begin(), values.end());
    return GGUFValue::array(type, std::move(out));
  };
  kiln::nn::state::GGUFMetadata m = {{"tokenizer.ggml.model", d.model},
                                     {"tokenizer.ggml.tokens", array(GGUFValueType::STRING, d.tokens)}};
  if (!d.pre.empty()) m.emplace_back("tokenizer.ggml.pre", d.pre);
  if (!d.scores.empty()) m.emplace_back("tokenizer.ggml.scores", array(GGUFValueType::FLOAT32, d.scores));
  if (!d.token_types.empty()) m.emplace_back("tokenizer.ggml.token_type", array(GGUFValueType::INT32, d.token_types));
  if (!d.merges.empty()) m.emplace_back("tokenizer.ggml.merges", array(GGUFValueType::STRING, d.merges));
  for (auto [key, id] : {std::pair{"bos", d.bos_id}, std::pair{"eos", d.eos_id}, std::pair{"unknown", d.unknown_id}})
    if (id >= 0) m.emplace_back(std::string("tokenizer.ggml.") + key + "_token_id", uint32_t(id));
  if (d.add_bos) m.emplace_back("tokenizer.ggml.add_bos_token", *d.add_bos);
  const std::string path = ::testing::TempDir() + name;
  kiln::nn::state::GGUFWriter(m).save(path);
  return path;
}

TEST(Tokenizer, FromGgufEncodesAsFromVocab) {
  std::mt19937 rng(5);
  TokenizerData spm = spm_data({{kSp + "he", 3}, {"ll", 2}, {"o", 1}, {kSp + "hello", 5}}, true);
  spm.add_bos = false;
  const TokenizerData bpe = learn_bpe(random_text(rng, 400), 60, PreSplit::Qwen2, "qwen2");
  for (const auto& [d, name] : {std::pair{spm, "spm.gguf"}, std::pair{bpe, "bpe.gguf"}}) {
    SCOPED_TRACE(name);
    const Tokenizer want = Tokenizer::from_vocab(d), have = Tokenizer::from_gguf(write_gguf_vocab(d, name));
    EXPECT_EQ(have.vocab_size(), want.vocab_size());
    EXPECT_EQ(have.bos(), want.bos());
    EXPECT_EQ(have.eos(), want.eos());
    for (const std::string& text : {std::string("hello world, hello!"), random_text(rng, 200)}) {
      EXPECT_EQ(have.encode(text), want.encode(text)) << text;
      EXPECT_EQ(have.decode(have.encode(text)), want.decode(want.encode(text)));
    }
  }
  const std::string no_model = ::testing::TempDir() + "no_model.gguf";
  kiln::nn::state::GGUFWriter(kiln::nn::state::GGUFMetadata{{"general.name", "x"}}).save(no_model);
  const std::string message = kt::error_of([&] { Tokenizer::from_gguf(no_model); });
  EXPECT_NE(message.find("tokenizer.ggml.model"), std::string::npos) << message;
}

}  // namespace
