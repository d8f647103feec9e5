#pragma once
// Loading a language model with its tokenizer from a path, as the kiln-llm tool and servers take it:
// a GGUF file (weights, config and vocabulary in one), or a Hugging Face folder of config.json,
// safetensors and tokenizer.json (or a vocabulary from a GGUF file instead).
#include <cstdint>
#include <optional>
#include <string>

#include "kiln/llm.h"
#include "kiln/llm_chat.h"
#include "kiln/llm_tokenizer.h"

namespace kiln::llm {

struct LoadedModel {
  Model model;
  Tokenizer tokenizer;
  std::optional<ChatTemplate> chat_template;  // recognized from the files' Jinja template, if they have one
  int64_t decode_weight_bytes = 0;            // weight bytes one decode step reads: all but the embedding table
};

// `path`: a .gguf file or a folder. `tokenizer_path` (optional): a GGUF file whose tokenizer.ggml.* metadata
// gives the vocabulary, in place of the file's own or the folder's tokenizer.json. kiln::Error saying what is missing or unreadable.
LoadedModel load_model(const std::string& path, const std::string& tokenizer_path = "");

}  // namespace kiln::llm
