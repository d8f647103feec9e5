// load_model: a GGUF file or a Hugging Face folder, its tokenizer, its chat template, and the bytes
// of weights a decode step streams (read from the files' headers, in their stored types).
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kiln/error.h"
#include "kiln/llm_load.h"
#include "kiln/nn/gguf.h"

namespace kiln::llm {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Every tensor's stored bytes, minus the embedding table when a separate output head exists (decode
// reads one row of it); a tied embedding is the head, read whole.
int64_t decode_bytes(const std::map<std::string, int64_t>& tensor_bytes, const std::string& embed,
                     const std::string& head) {
  int64_t total = 0;
  for (const auto& [name, bytes] : tensor_bytes) total += bytes;
  if (tensor_bytes.count(head) && tensor_bytes.count(embed)) total -= tensor_bytes.at(embed);
  return total;
}

// A safetensors file's tensor byte counts, from its JSON header (8 bytes of length, then the header).
std::map<std::string, int64_t> safetensors_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  uint64_t length = 0;
  in.read(reinterpret_cast<char*>(&length), 8);
  if (!in || length > (uint64_t(1) << 30)) throw_error("load_model: ", file.string(), ": not a safetensors file");
  std::string header(length, '\0');
  in.read(header.data(), static_cast<std::streamsize>(length));
  const json parsed = json::parse(header, nullptr, false);
  std::map<std::string, int64_t> out;
  if (!parsed.is_object()) return out;  // Model::from_safetensors has already rejected a malformed header
  for (const auto& [name, info] : parsed.items())
    if (name != "__metadata__" && info.contains("data_offsets"))
      out[name] = info["data_offsets"][1].get<int64_t>() - info["data_offsets"][0].get<int64_t>();
  return out;
}

std::optional<ChatTemplate> gguf_chat_template(const nn::state::GGUFFile& file) {
  const nn::state::GGUFValue* t = file.find("tokenizer.chat_template");
  return t && t->type() == nn::state::GGUFValueType::STRING ? chat_template_detect(t->as_string()) : std::nullopt;
}

LoadedModel load_gguf(const std::string& path, const std::string& tokenizer_path) {
  const std::string vocab = tokenizer_path.empty() ? path : tokenizer_path;
  const nn::state::GGUFFile file = nn::state::gguf_open(path);
  std::map<std::string, int64_t> bytes;
  for (const nn::state::GGUFTensorInfo& t : file.tensor_infos()) bytes[t.name] = static_cast<int64_t>(t.nbytes);
  std::optional<ChatTemplate> chat = gguf_chat_template(vocab == path ? file : nn::state::gguf_open(vocab));
  return {Model::from_gguf(path), Tokenizer::from_gguf(vocab), chat,
          decode_bytes(bytes, "token_embd.weight", "output.weight")};
}

// The folder's tokenizer.json unless a GGUF file's vocabulary is given instead.
LoadedModel load_folder(const fs::path& dir, const std::string& tokenizer_path) {
  if (tokenizer_path.empty() && !fs::exists(dir / "tokenizer.json"))
    throw_error("load_model: ", dir.string(), " has no tokenizer.json; give a GGUF file of the same model (a ",
                "vocab-only one is enough) as the tokenizer");
  Model model = Model::from_safetensors(dir.string());  // checks the files before their headers are read here
  std::map<std::string, int64_t> bytes;
  for (const fs::directory_entry& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".safetensors") bytes.merge(safetensors_bytes(e.path()));
  std::optional<ChatTemplate> chat;
  if (!tokenizer_path.empty()) chat = gguf_chat_template(nn::state::gguf_open(tokenizer_path));
  std::ifstream config(dir / "tokenizer_config.json");
  const json tc = config ? json::parse(config, nullptr, false) : json();
  if (tc.is_object() && tc.contains("chat_template") && tc["chat_template"].is_string())
    if (std::optional<ChatTemplate> t = chat_template_detect(tc["chat_template"].get<std::string>())) chat = t;
  Tokenizer tokenizer = tokenizer_path.empty() ? Tokenizer::from_hf(dir.string()) : Tokenizer::from_gguf(tokenizer_path);
  return {std::move(model), std::move(tokenizer), chat, decode_bytes(bytes, "model.embed_tokens.weight", "lm_head.weight")};
}

}  // namespace

LoadedModel load_model(const std::string& path, const std::string& tokenizer_path) {
  if (!tokenizer_path.empty() && !fs::is_regular_file(tokenizer_path))
    throw_error("load_model: the tokenizer \"", tokenizer_path, "\" is not a file; expected a GGUF file");
  if (fs::is_directory(path)) return load_folder(path, tokenizer_path);
  if (fs::is_regular_file(path)) return load_gguf(path, tokenizer_path);
  throw_error("load_model: \"", path, "\" does not exist; expected a .gguf file or a Hugging Face folder");
}

}  // namespace kiln::llm
