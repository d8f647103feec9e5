#pragma once
// The little of Unicode the tokenizers need: UTF-8 decoding that keeps invalid bytes, and the classes of code
// points the pre-splitting regexes name (\p{L}, \p{N}, \s).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::llm {

enum class CharClass : uint8_t { Other, Letter, Number, Space };

// What a byte that starts no valid UTF-8 sequence decodes to: a code point of its own, of class Other.
constexpr uint32_t kInvalidCodePoint = 0xFFFFFFFF;

struct CodePoint {
  uint32_t value;  // kInvalidCodePoint for a byte that is not valid UTF-8
  size_t size;     // bytes it spans (1 for an invalid byte)
};

// The code point starting at text[pos] (pos < text.size()); never throws, so every byte string decodes.
CodePoint next_code_point(std::string_view text, size_t pos);
std::string utf8_encode(uint32_t cp);
CharClass char_class(uint32_t cp);

}  // namespace kiln::llm
