#include "llm/unicode.h"

#include <algorithm>
#include <iterator>

namespace kiln::llm {

namespace {

struct ClassRange {
  uint32_t first, last;
  CharClass cls;
};

constexpr ClassRange kRanges[] = {
#include "llm/unicode_classes.inc"
};

}  // namespace

CodePoint next_code_point(std::string_view text, size_t pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte(pos);
  if (lead < 0x80) return {lead, 1};
  size_t size = 0;
  uint32_t cp = 0, min = 0;
  if ((lead & 0xE0) == 0xC0) size = 2, cp = lead & 0x1F, min = 0x80;
  else if ((lead & 0xF0) == 0xE0) size = 3, cp = lead & 0x0F, min = 0x800;
  else if ((lead & 0xF8) == 0xF0) size = 4, cp = lead & 0x07, min = 0x10000;
  else return {kInvalidCodePoint, 1};
  if (pos + size > text.size()) return {kInvalidCodePoint, 1};
  for (size_t i = 1; i < size; ++i) {
    if ((byte(pos + i) & 0xC0) != 0x80) return {kInvalidCodePoint, 1};
    cp = (cp << 6) | (byte(pos + i) & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8 either.
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {kInvalidCodePoint, 1};
  return {cp, size};
}

std::string utf8_encode(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

CharClass char_class(uint32_t cp) {
  // The last range starting at or before cp is the only one that can hold it.
  const auto* it = std::upper_bound(std::begin(kRanges), std::end(kRanges), cp,
                                    [](uint32_t c, const ClassRange& r) { return c < r.first; });
  if (it == std::begin(kRanges)) return CharClass::Other;
  --it;
  return cp <= it->last ? it->cls : CharClass::Other;
}

}  // namespace kiln::llm
