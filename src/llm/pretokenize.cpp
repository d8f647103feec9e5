#include "llm/pretokenize.h"

#include <cctype>

#include "llm/unicode.h"

namespace kiln::llm {

namespace {

// The text as code points, each with its class and its byte offset; past the end reads as Other.
class Chars {
 public:
  explicit Chars(std::string_view text) {
    for (size_t pos = 0; pos < text.size();) {
      const CodePoint cp = next_code_point(text, pos);
      cps_.push_back(cp.value);
      classes_.push_back(char_class(cp.value));
      offsets_.push_back(pos);
      pos += cp.size;
    }
    offsets_.push_back(text.size());
  }
  size_t size() const { return cps_.size(); }
  uint32_t cp(size_t i) const { return i < cps_.size() ? cps_[i] : 0; }
  CharClass cls(size_t i) const { return i < classes_.size() ? classes_[i] : CharClass::Other; }
  size_t offset(size_t i) const { return offsets_[i]; }
  bool is(size_t i, CharClass c) const { return i < size() && cls(i) == c; }
  bool is_newline(size_t i) const { return cp(i) == '\r' || cp(i) == '\n'; }
  // The end of the run of `c` from i.
  size_t run(size_t i, CharClass c, size_t max_len = SIZE_MAX) const {
    size_t j = i;
    while (j < size() && cls(j) == c && j - i < max_len) ++j;
    return j;
  }

 private:
  std::vector<uint32_t> cps_;
  std::vector<CharClass> classes_;
  std::vector<size_t> offsets_;
};

// 's 't 're 've 'm 'll 'd at i: the contraction's end, or i when there is none.
size_t contraction(const Chars& c, size_t i, bool ignore_case) {
  if (c.cp(i) != '\'') return i;
  const auto lower = [&](size_t j) {
    const uint32_t cp = c.cp(j);
    return cp < 128 && ignore_case ? static_cast<uint32_t>(std::tolower(static_cast<int>(cp))) : cp;
  };
  const uint32_t a = lower(i + 1), b = lower(i + 2);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
  return i;
}

// \s+(?!\S)|\s+ at a space i: a run of spaces leaves its last one to the word after it.
size_t spaces(const Chars& c, size_t i) {
  const size_t end = c.run(i, CharClass::Space);
  return end == c.size() || end - i == 1 ? end : end - 1;
}

size_t gpt2_word(const Chars& c, size_t i) {
  if (size_t end = contraction(c, i, false); end != i) return end;
  const size_t j = c.cp(i) == ' ' ? i + 1 : i;  // " ?"
  if (j < c.size() && c.cls(j) != CharClass::Space) return c.run(j, c.cls(j));
  return spaces(c, i);
}

size_t llama3_word(const Chars& c, size_t i, size_t max_digits) {
  if (size_t end = contraction(c, i, true); end != i) return end;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (c.is(i, CharClass::Letter)) return c.run(i, CharClass::Letter);
  if (!c.is_newline(i) && !c.is(i, CharClass::Number) && c.is(i + 1, CharClass::Letter)) {
    return c.run(i + 1, CharClass::Letter);
  }
  if (c.is(i, CharClass::Number)) return c.run(i, CharClass::Number, max_digits);
  // " ?[^\s\p{L}\p{N}]+[\r\n]*"
  const size_t j = c.cp(i) == ' ' ? i + 1 : i;
  if (c.is(j, CharClass::Other)) {
    size_t end = c.run(j, CharClass::Other);
    while (c.is_newline(end)) ++end;
    return end;
  }
  // \s*[\r\n]+: the spaces up to the last line break among them
  const size_t end = c.run(i, CharClass::Space);
  for (size_t k = end; k > i; --k) {
    if (c.is_newline(k - 1)) return k;
  }
  return spaces(c, i);
}

}  // namespace

std::vector<std::string_view> pre_split(std::string_view text, PreSplit kind) {
  const Chars c(text);
  std::vector<std::string_view> words;
  for (size_t i = 0; i < c.size();) {
    const size_t end = kind == PreSplit::Gpt2     ? gpt2_word(c, i)
                       : kind == PreSplit::Llama3 ? llama3_word(c, i, 3)
                                                  : llama3_word(c, i, 1);
    words.push_back(text.substr(c.offset(i), c.offset(end) - c.offset(i)));
    i = end;
  }
  return words;
}

}  // namespace kiln::llm
