// TextStream: the generated ids are decoded whole at each step (a piece's text can depend on what came
// before it), and the new bytes are released once no stop string or UTF-8 character can still claim them.
#include "llm/text_stream.h"

#include <algorithm>

namespace kiln::llm {

namespace {

// Bytes at the end of `s` that begin a UTF-8 character whose continuation bytes have not come yet.
size_t incomplete_utf8_tail(const std::string& s) {
  for (size_t back = 1; back <= std::min<size_t>(3, s.size()); back++) {
    const auto c = static_cast<unsigned char>(s[s.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

}  // namespace

TextStream::TextStream(const Tokenizer& tokenizer, int32_t context, std::vector<std::string> stops)
    : tokenizer_(tokenizer), stops_(std::move(stops)) {
  std::erase(stops_, std::string());
  if (context >= 0) {
    ids_.push_back(context);
    context_bytes_ = tokenizer_.decode(ids_).size();
  }
}

std::string TextStream::push(int32_t token) {
  if (stopped_) return "";
  ids_.push_back(token);
  text_ = tokenizer_.decode(ids_).substr(context_bytes_);
  // The earliest stop string that starts in the text not yet returned (one starting earlier would have
  // held its first bytes back).
  size_t stop_at = std::string::npos;
  for (const std::string& s : stops_) stop_at = std::min(stop_at, text_.find(s, emitted_));
  if (stop_at != std::string::npos) {
    stopped_ = true;
    std::string out = text_.substr(emitted_, stop_at - emitted_);
    emitted_ = stop_at;
    return out;
  }
  // Bytes already complete stay complete as the text grows, so end >= emitted_.
  const size_t end = text_.size() - incomplete_utf8_tail(text_);
  size_t hold = 0;  // the longest end of the text that a stop string starts with
  for (const std::string& s : stops_)
    for (size_t k = std::min(s.size() - 1, end - emitted_); k > hold; k--)
      if (text_.compare(end - k, k, s, 0, k) == 0) {
        hold = k;
        break;
      }
  std::string out = text_.substr(emitted_, end - hold - emitted_);
  emitted_ = end - hold;
  return out;
}

std::string TextStream::finish() {
  if (stopped_) return "";
  std::string out = text_.substr(emitted_);
  emitted_ = text_.size();
  return out;
}

}  // namespace kiln::llm
