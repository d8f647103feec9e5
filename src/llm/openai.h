#pragma once
// OpenAI's completion API on the wire: a request body parsed and checked, and the JSON answers
// (whole, or as server-sent-event chunks) built from a generation.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kiln/llm.h"
#include "kiln/llm_chat.h"
#include "kiln/llm_text.h"

namespace kiln::llm {

struct CompletionRequest {
  bool chat = false;
  std::string prompt;                 // /v1/completions
  std::vector<ChatMessage> messages;  // /v1/chat/completions
  std::optional<int> max_tokens;
  Sampling sampling;  // OpenAI's defaults: temperature 1, top_p 1; a random seed if none
  std::vector<std::string> stop;
  bool stream = false;
};

// kiln::Error naming the field and what it should be, for a body that is not JSON, a field of the wrong
// type or out of range, or a missing prompt or messages. Fields set to null count as absent.
CompletionRequest parse_completion_request(const std::string& body, bool chat);

// What every answer to one request carries.
struct CompletionMeta {
  std::string id;  // "cmpl-N" or "chatcmpl-N"
  int64_t created = 0;
  std::string model;
  bool chat = false;
};

nlohmann::json completion_response(const CompletionMeta& m, const TextGeneration& g);
// A streamed piece: `text` (for chat, the first chunk sends the role), or the last chunk with finish_reason
// and usage (`final` given).
nlohmann::json completion_chunk(const CompletionMeta& m, const std::string& text, const TextGeneration* final = nullptr,
                                bool first = false);
nlohmann::json error_json(const std::string& message, const char* type = "invalid_request_error");
// JSON text; text generated from byte tokens may be invalid UTF-8: such bytes become U+FFFD.
std::string dump(const nlohmann::json& j);

}  // namespace kiln::llm
