#pragma once
// Generated tokens as streamed text, cut at stop strings. Each push returns the text that is final so
// far; text is held back while it ends in an incomplete UTF-8 character or in what may be the start
// of a stop string. When a stop string appears, the text before it is the last returned and the stop
// string itself is dropped.
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/llm_tokenizer.h"

namespace kiln::llm {

class TextStream {
 public:
  // `context`: the token the generated ones follow (the prompt's last), or -1: it decides whether the
  // first generated piece keeps its leading space (SentencePiece drops it only at the start of a text).
  TextStream(const Tokenizer& tokenizer, int32_t context, std::vector<std::string> stops);

  std::string push(int32_t token);  // nothing more once stopped()
  std::string finish();             // what was held back, once generation has ended without a stop string
  bool stopped() const { return stopped_; }

 private:
  const Tokenizer& tokenizer_;
  std::vector<std::string> stops_;
  std::vector<int32_t> ids_;  // the context token, then the generated ones
  size_t context_bytes_ = 0;  // the context token's decoded length
  std::string text_;          // everything generated, decoded
  size_t emitted_ = 0;        // bytes of text_ returned
  bool stopped_ = false;
};

}  // namespace kiln::llm
