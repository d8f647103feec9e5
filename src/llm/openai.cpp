// The OpenAI request and answer formats (platform.openai.com/docs/api-reference/completions and
// /chat), with llama.cpp's extra sampling fields (top_k, min_p, repeat_penalty).
#include "llm/openai.h"

#include <random>

#include "kiln/error.h"
#include "llm/sampling.h"

namespace kiln::llm {

using nlohmann::json;

namespace {

// The field, or nullptr when absent or null.
const json* field(const json& body, const char* name) {
  auto it = body.find(name);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

std::string kind_of(const json& v) { return v.type_name(); }

double number(const json& v, const char* name) {
  if (!v.is_number()) throw_error("\"", name, "\" must be a number, got ", kind_of(v));
  return v.get<double>();
}

int64_t integer(const json& v, const char* name) {
  if (!v.is_number_integer()) throw_error("\"", name, "\" must be an integer, got ", kind_of(v));
  return v.get<int64_t>();
}

std::string string(const json& v, const std::string& name) {
  if (!v.is_string()) throw_error("\"", name, "\" must be a string, got ", kind_of(v));
  return v.get<std::string>();
}

std::vector<ChatMessage> messages_of(const json& v) {
  if (!v.is_array() || v.empty()) throw_error("\"messages\" must be a non-empty array, got ", kind_of(v));
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < v.size(); i++) {
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!v[i].is_object()) throw_error("\"", where, "\" must be an object, got ", kind_of(v[i]));
    const json* role = field(v[i], "role");
    const json* content = field(v[i], "content");
    if (!role || !content) throw_error("\"", where, "\" needs \"role\" and \"content\"");
    out.push_back({string(*role, where + ".role"), string(*content, where + ".content")});
  }
  return out;
}

std::vector<std::string> stops_of(const json& v) {
  if (v.is_string()) return {v.get<std::string>()};
  if (!v.is_array()) throw_error("\"stop\" must be a string or an array of strings, got ", kind_of(v));
  std::vector<std::string> out;
  for (const json& s : v) out.push_back(string(s, "stop[]"));
  return out;
}

json usage(const TextGeneration& g) {
  return {{"prompt_tokens", g.prompt_tokens},
          {"completion_tokens", g.completion_tokens},
          {"total_tokens", g.prompt_tokens + g.completion_tokens}};
}

json head(const CompletionMeta& m, const char* object) {
  return {{"id", m.id}, {"object", object}, {"created", m.created}, {"model", m.model}};
}

}  // namespace

CompletionRequest parse_completion_request(const std::string& text, bool chat) {
  const json body = json::parse(text, nullptr, false);
  if (body.is_discarded()) throw_error("the request body is not valid JSON");
  if (!body.is_object()) throw_error("the request body must be a JSON object, got ", kind_of(body));
  CompletionRequest r;
  r.chat = chat;
  if (chat) {
    const json* m = field(body, "messages");
    if (!m) throw_error("a chat completion needs \"messages\"");
    r.messages = messages_of(*m);
  } else {
    const json* p = field(body, "prompt");
    if (!p) throw_error("a completion needs \"prompt\"");
    // A batch of one prompt is a prompt; kiln answers one prompt per request.
    r.prompt = p->is_array() && p->size() == 1 ? string((*p)[0], "prompt[0]") : string(*p, "prompt");
  }
  for (const char* name : {"max_tokens", "max_completion_tokens"})
    if (const json* v = field(body, name)) {
      const int64_t n = integer(*v, name);
      if (n < 0 || n > 1 << 30) throw_error("\"", name, "\" must be >= 0, got ", n);
      r.max_tokens = static_cast<int>(n);
    }
  if (const json* v = field(body, "n"); v && integer(*v, "n") != 1)
    throw_error("\"n\" must be 1 (one answer per request), got ", v->dump());
  Sampling& s = r.sampling;
  s.temperature = 1;
  if (const json* v = field(body, "temperature")) s.temperature = static_cast<float>(number(*v, "temperature"));
  if (const json* v = field(body, "top_p")) s.top_p = static_cast<float>(number(*v, "top_p"));
  if (const json* v = field(body, "min_p")) s.min_p = static_cast<float>(number(*v, "min_p"));
  if (const json* v = field(body, "repeat_penalty"))
    s.repeat_penalty = static_cast<float>(number(*v, "repeat_penalty"));
  if (const json* v = field(body, "top_k")) {
    const int64_t k = integer(*v, "top_k");
    if (k < 0 || k > INT32_MAX) throw_error("\"top_k\" must be >= 0 (0: off), got ", k);
    s.top_k = static_cast<int>(k);
  }
  if (const json* v = field(body, "seed"))
    s.seed = static_cast<uint64_t>(integer(*v, "seed"));
  else
    s.seed = std::random_device{}();
  check_sampling(s);
  if (const json* v = field(body, "stop")) r.stop = stops_of(*v);
  if (const json* v = field(body, "stream")) {
    if (!v->is_boolean()) throw_error("\"stream\" must be true or false, got ", kind_of(*v));
    r.stream = v->get<bool>();
  }
  return r;
}

json completion_response(const CompletionMeta& m, const TextGeneration& g) {
  json out = head(m, m.chat ? "chat.completion" : "text_completion");
  json choice = {{"index", 0}, {"finish_reason", g.finish_reason}};
  if (m.chat)
    choice["message"] = {{"role", "assistant"}, {"content", g.text}};
  else
    choice["text"] = g.text, choice["logprobs"] = nullptr;
  out["choices"] = json::array({choice});
  out["usage"] = usage(g);
  return out;
}

json completion_chunk(const CompletionMeta& m, const std::string& text, const TextGeneration* final, bool first) {
  json out = head(m, m.chat ? "chat.completion.chunk" : "text_completion");
  json choice = {{"index", 0}, {"finish_reason", final ? json(final->finish_reason) : json(nullptr)}};
  if (m.chat) {
    choice["delta"] = json::object();
    if (first) choice["delta"]["role"] = "assistant";
    if (!text.empty()) choice["delta"]["content"] = text;
  } else {
    choice["text"] = text, choice["logprobs"] = nullptr;
  }
  out["choices"] = json::array({choice});
  if (final) out["usage"] = usage(*final);
  return out;
}

json error_json(const std::string& message, const char* type) {
  return {{"error", {{"message", message}, {"type", type}}}};
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace kiln::llm
