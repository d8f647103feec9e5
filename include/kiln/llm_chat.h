#pragma once
// Chat templates: a conversation written as the prompt an instruction-tuned model was trained on.
//
//   std::vector<int32_t> ids = kiln::llm::encode_chat(tokenizer, kiln::llm::ChatTemplate::Llama3,
//                                                     {{"system", "Be brief."}, {"user", "Hi!"}});
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/llm_tokenizer.h"

namespace kiln::llm {

enum class ChatTemplate {
  Llama2,  // <s>[INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST] {assistant} </s>
  Llama3,  // <|begin_of_text|><|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>
  ChatML,  // <|im_start|>{role}\n{content}<|im_end|>\n  (Qwen)
};

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

// "llama2", "llama3" or "chatml"; kiln::Error listing them for any other name.
ChatTemplate chat_template_named(const std::string& name);
// The template a Jinja chat template (GGUF's tokenizer.chat_template, tokenizer_config.json's chat_template)
// writes, recognized by its marker tokens; none when it is none of the three.
std::optional<ChatTemplate> chat_template_detect(const std::string& jinja);

// The conversation's text, ending with the header the assistant's answer follows. kiln::Error for an
// unknown role, and for LLaMA-2 a system message that is not the first.
std::string render_chat(ChatTemplate t, const std::vector<ChatMessage>& messages);
// render_chat's text as token ids: LLaMA-2's <s> and </s> become the tokenizer's BOS and EOS (SentencePiece
// never reads them from text); the other templates' markers are control tokens the tokenizer finds in the text.
std::vector<int32_t> encode_chat(const Tokenizer& tokenizer, ChatTemplate t, const std::vector<ChatMessage>& messages);
// The text that ends the assistant's turn, for templates where that is not the end-of-sequence token.
std::vector<std::string> chat_stop_strings(ChatTemplate t);

}  // namespace kiln::llm
