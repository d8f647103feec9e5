// Tokenizer::from_gguf: TokenizerData from a GGUF file's tokenizer.ggml.* metadata.
#include "kiln/error.h"
#include "kiln/llm_tokenizer.h"
#include "kiln/nn/gguf.h"

namespace kiln::llm {
namespace {

using nn::state::GGUFFile;
using nn::state::GGUFValue;

// Each element of the array at `key` (none if absent) read by `read`.
template <class T, class Read>
std::vector<T> array_of(const GGUFFile& file, const std::string& key, Read read) {
  std::vector<T> out;
  if (const GGUFValue* v = file.find(key))
    for (const GGUFValue& e : v->as_array().values) out.push_back(read(e));
  return out;
}

int32_t id_or_none(const GGUFFile& file, const std::string& key) {
  const GGUFValue* v = file.find(key);
  return v ? static_cast<int32_t>(v->as_int()) : -1;
}

std::optional<bool> flag(const GGUFFile& file, const std::string& key) {
  const GGUFValue* v = file.find(key);
  return v ? std::optional<bool>(v->as<bool>()) : std::nullopt;
}

}  // namespace

Tokenizer Tokenizer::from_gguf(const std::string& path) {
  const GGUFFile file = nn::state::gguf_open(path);
  try {
    TokenizerData d;
    d.model = file.get("tokenizer.ggml.model").as_string();
    if (const GGUFValue* pre = file.find("tokenizer.ggml.pre")) d.pre = pre->as_string();
    d.tokens = array_of<std::string>(file, "tokenizer.ggml.tokens", [](const GGUFValue& e) { return e.as_string(); });
    d.scores = array_of<float>(file, "tokenizer.ggml.scores", [](const GGUFValue& e) { return float(e.as_float()); });
    d.token_types = array_of<int32_t>(file, "tokenizer.ggml.token_type",
                                      [](const GGUFValue& e) { return static_cast<int32_t>(e.as_int()); });
    d.merges = array_of<std::string>(file, "tokenizer.ggml.merges", [](const GGUFValue& e) { return e.as_string(); });
    d.bos_id = id_or_none(file, "tokenizer.ggml.bos_token_id");
    d.eos_id = id_or_none(file, "tokenizer.ggml.eos_token_id");
    d.unknown_id = id_or_none(file, "tokenizer.ggml.unknown_token_id");
    d.add_bos = flag(file, "tokenizer.ggml.add_bos_token");
    d.add_space_prefix = flag(file, "tokenizer.ggml.add_space_prefix");
    return from_vocab(d);
  } catch (const Error& e) {
    throw_error("Tokenizer::from_gguf: ", path, ": ", e.what());
  }
}

}  // namespace kiln::llm
