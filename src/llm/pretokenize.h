#pragma once
// The byte-level BPE tokenizers' pre-split: the text cut into words before merging, as their regexes cut it. The
// regexes' semantics are written by hand (std::regex has no \p{L}):
//   GPT-2:   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   LLaMA 3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|
//            \s+(?!\S)|\s+
//   Qwen2:   LLaMA 3's with \p{N} (one digit a word) for \p{N}{1,3}.
#include <string_view>
#include <vector>

namespace kiln::llm {

enum class PreSplit { Gpt2, Llama3, Qwen2 };

// The words, in order; together they are `text` (bytes that are not UTF-8 are words' bytes like any other).
std::vector<std::string_view> pre_split(std::string_view text, PreSplit kind);

}  // namespace kiln::llm
