// Chat templates, written as each model family documents them (Meta's LLaMA 2 and LLaMA 3 model cards,
// OpenAI's ChatML as Qwen uses it). Message contents are stripped of surrounding whitespace, as the
// templates do.
#include "kiln/error.h"
#include "kiln/llm_chat.h"

namespace kiln::llm {

namespace {

std::string strip(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t\n\r"), end = s.find_last_not_of(" \t\n\r");
  return begin == std::string::npos ? "" : s.substr(begin, end - begin + 1);
}

void check_role(const ChatMessage& m, size_t i) {
  if (m.role != "system" && m.role != "user" && m.role != "assistant")
    throw_error("chat template: message ", i, " has role \"", m.role,
                "\"; expected \"system\", \"user\" or \"assistant\"");
}

// LLaMA 2: the system prompt goes inside the first user turn; each user/assistant pair is one <s>...</s>.
// The turns' text pieces and where BOS and EOS go between them (kept apart so that a message that
// writes "<s>" stays text).
struct Llama2Piece {
  enum Kind { Text, Bos, Eos } kind;
  std::string text;
};

std::vector<Llama2Piece> llama2_pieces(const std::vector<ChatMessage>& messages) {
  std::vector<Llama2Piece> out;
  std::string system;
  for (size_t i = 0; i < messages.size(); i++) {
    const ChatMessage& m = messages[i];
    if (m.role == "system") {
      if (i != 0) throw_error("chat template llama2: a system message must come first, got one at position ", i);
      system = m.content;
    } else if (m.role == "user") {
      std::string content = m.content;
      if (!system.empty()) content = "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + content, system.clear();
      out.push_back({Llama2Piece::Bos, ""});
      out.push_back({Llama2Piece::Text, "[INST] " + strip(content) + " [/INST]"});
    } else {
      out.push_back({Llama2Piece::Text, " " + strip(m.content) + " "});
      out.push_back({Llama2Piece::Eos, ""});
    }
  }
  return out;
}

}  // namespace

ChatTemplate chat_template_named(const std::string& name) {
  if (name == "llama2") return ChatTemplate::Llama2;
  if (name == "llama3") return ChatTemplate::Llama3;
  if (name == "chatml") return ChatTemplate::ChatML;
  throw_error("chat template: expected \"llama2\", \"llama3\" or \"chatml\", got \"", name, "\"");
}

std::optional<ChatTemplate> chat_template_detect(const std::string& jinja) {
  if (jinja.find("<|start_header_id|>") != std::string::npos) return ChatTemplate::Llama3;
  if (jinja.find("<|im_start|>") != std::string::npos) return ChatTemplate::ChatML;
  if (jinja.find("[INST]") != std::string::npos) return ChatTemplate::Llama2;
  return std::nullopt;
}

std::string render_chat(ChatTemplate t, const std::vector<ChatMessage>& messages) {
  for (size_t i = 0; i < messages.size(); i++) check_role(messages[i], i);
  if (t == ChatTemplate::Llama2) {
    std::string out;
    for (const Llama2Piece& p : llama2_pieces(messages))
      out += p.kind == Llama2Piece::Bos ? "<s>" : p.kind == Llama2Piece::Eos ? "</s>" : p.text;
    return out;
  }
  std::string out = t == ChatTemplate::Llama3 ? "<|begin_of_text|>" : "";
  const auto turn = [&](const std::string& role, const std::string* content) {
    if (t == ChatTemplate::Llama3) {
      out += "<|start_header_id|>" + role + "<|end_header_id|>\n\n";
      if (content) out += strip(*content) + "<|eot_id|>";
    } else {
      out += "<|im_start|>" + role + "\n";
      if (content) out += strip(*content) + "<|im_end|>\n";
    }
  };
  for (const ChatMessage& m : messages) turn(m.role, &m.content);
  turn("assistant", nullptr);
  return out;
}

std::vector<int32_t> encode_chat(const Tokenizer& tokenizer, ChatTemplate t, const std::vector<ChatMessage>& messages) {
  if (t != ChatTemplate::Llama2) return tokenizer.encode(render_chat(t, messages), false);
  if (tokenizer.bos() < 0 || tokenizer.eos() < 0)
    throw_error("chat template llama2: the tokenizer needs BOS and EOS tokens, got bos ", tokenizer.bos(), ", eos ",
                tokenizer.eos());
  for (size_t i = 0; i < messages.size(); i++) check_role(messages[i], i);
  std::vector<int32_t> ids;
  for (const Llama2Piece& p : llama2_pieces(messages)) {
    if (p.kind != Llama2Piece::Text) {
      ids.push_back(p.kind == Llama2Piece::Bos ? tokenizer.bos() : tokenizer.eos());
      continue;
    }
    const std::vector<int32_t> piece = tokenizer.encode(p.text, false);
    ids.insert(ids.end(), piece.begin(), piece.end());
  }
  return ids;
}

std::vector<std::string> chat_stop_strings(ChatTemplate t) {
  switch (t) {
    case ChatTemplate::Llama2:
      return {};
    case ChatTemplate::Llama3:
      return {"<|eot_id|>"};
    case ChatTemplate::ChatML:
      return {"<|im_end|>"};
  }
  return {};
}

}  // namespace kiln::llm
