#pragma once
// Text generation over a Model and its Tokenizer: the generated tokens streamed as UTF-8 text, cut at
// stop strings, with the counts and timings an API or a benchmark reports.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kiln/llm.h"
#include "kiln/llm_tokenizer.h"

namespace kiln::llm {

struct TextGeneration {
  std::string text;  // what on_text received, in one piece
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;  // tokens generated, the end-of-sequence token or the stop string's included
  std::string finish_reason;      // "stop" (end-of-sequence token, stop string, or on_text said stop) or "length"
  double prompt_seconds = 0;      // until the first new token: the prompt's prefill and one decode step
  double total_seconds = 0;
};

// Generates up to max_tokens tokens after `prompt` (ids), calling on_text with each piece of text as it
// becomes final (returning false stops). Ends at an end-of-sequence token of the model or tokenizer
// (not part of the text), or at one of `stops` (the text ends before it), or at max_tokens or the end
// of the context. The model's generate() checks the prompt.
TextGeneration generate_text(Model& model, const Tokenizer& tokenizer, const std::vector<int32_t>& prompt,
                             int max_tokens, const Sampling& sampling, const std::vector<std::string>& stops = {},
                             const std::function<bool(const std::string&)>& on_text = {});

}  // namespace kiln::llm
