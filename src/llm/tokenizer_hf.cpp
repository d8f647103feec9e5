// Tokenizer::from_hf: TokenizerData from a Hugging Face tokenizer.json (with tokenizer_config.json beside it when
// there). Both of kiln's algorithms are BPE models in the `tokenizers` library's terms:
//   - byte-level BPE ("gpt2"): a ByteLevel pre-tokenizer (alone, or after a Split by the model's regex); the vocab's
//     keys are already the byte-to-character mapped strings GGUF stores, and merges apply by rank, as here.
//   - SentencePiece-style BPE ("llama"): "▁" for spaces (a Metaspace pre-tokenizer or a Replace normalizer) and byte
//     fallback to <0xNN> tokens. kiln merges the pair whose result scores highest; a merge's rank is its priority
//     here, so each token scores minus the rank of the first merge that makes it.
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "kiln/error.h"
#include "kiln/llm_tokenizer.h"

namespace kiln::llm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json read_json(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw_error("cannot open ", file.string());
  json j = json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw_error(file.string(), " is not a JSON object");
  return j;
}

// Whether `j` (a normalizer, pre-tokenizer or decoder, possibly a Sequence of them) has a part of type `type`;
// `visit` sees each such part.
template <class Visit>
bool has_part(const json& j, const std::string& type, Visit visit) {
  if (!j.is_object()) return false;
  bool found = false;
  for (const char* list : {"normalizers", "pretokenizers", "decoders", "processors"})
    if (j.contains(list) && j[list].is_array())
      for (const json& part : j[list]) found |= has_part(part, type, visit);
  if (j.value("type", "") == type) visit(j), found = true;
  return found;
}
bool has_part(const json& j, const std::string& type) {
  return has_part(j, type, [](const json&) {});
}

// tokenizer_config.json writes a token as its text or as {"content": text, ...}.
std::string token_text(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object() && j.contains("content") && j["content"].is_string()) return j["content"].get<std::string>();
  return "";
}

// The byte-level pre-split's regex, as tokenizer.ggml.pre names it: from the Split pre-tokenizer's pattern.
std::string pre_of(const json& pre_tokenizer) {
  std::string regex;
  has_part(pre_tokenizer, "Split", [&](const json& split) {
    if (split.contains("pattern") && split["pattern"].is_object())
      regex = split["pattern"].value("Regex", split["pattern"].value("String", ""));
  });
  if (regex.empty()) return "gpt-2";  // ByteLevel alone: its own (GPT-2's) regex
  if (regex.find("\\p{N}{1,3}") != std::string::npos) return "llama-bpe";
  if (regex.find("(?i:'s|'t|'re|'ve|'m|'ll|'d)") != std::string::npos) return "qwen2";
  if (regex.find("'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+") != std::string::npos) return "gpt-2";
  throw_error("the pre-tokenizer's Split regex is not one kiln knows (GPT-2's, LLaMA 3's or Qwen2's): ", regex);
}

std::string merge_text(const json& m) {
  if (m.is_string()) return m.get<std::string>();
  if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
    return m[0].get<std::string>() + " " + m[1].get<std::string>();
  throw_error("a merge is ", m.dump(), "; expected \"left right\" or [\"left\", \"right\"]");
}

TokenizerData data_of(const json& tok, const json& config) {
  if (!tok.contains("model") || !tok["model"].is_object()) throw_error("no \"model\" object");
  const json& model = tok["model"];
  if (model.value("type", "BPE") != "BPE")
    throw_error("the model is of type \"", model.value("type", ""), "\"; kiln reads BPE models only");
  if (!model.contains("vocab") || !model["vocab"].is_object()) throw_error("model.vocab is not an object");
  const json pre_tokenizer = tok.value("pre_tokenizer", json()), normalizer = tok.value("normalizer", json());
  const bool byte_level = has_part(pre_tokenizer, "ByteLevel") || has_part(tok.value("decoder", json()), "ByteLevel");
  const bool metaspace = has_part(pre_tokenizer, "Metaspace") || has_part(normalizer, "Replace");
  if (!byte_level && !metaspace && !model.value("byte_fallback", false))
    throw_error("neither a byte-level nor a SentencePiece-style BPE (no ByteLevel, Metaspace or byte fallback)");

  TokenizerData d;
  d.model = byte_level ? "gpt2" : "llama";
  std::map<int64_t, std::string> by_id;
  for (const auto& [text, id] : model["vocab"].items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0) throw_error("vocab entry \"", text, "\" has id ", id.dump());
    by_id[id.get<int64_t>()] = text;
  }
  std::map<int64_t, std::pair<std::string, bool>> added;  // id -> text, special
  for (const json& a : tok.value("added_tokens", json::array())) {
    if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || a["id"].get<int64_t>() < 0)
      throw_error("an added token is ", a.dump(), "; expected {\"id\": ..., \"content\": ...}");
    added[a["id"].get<int64_t>()] = {token_text(a), a.value("special", false)};
    by_id[a["id"].get<int64_t>()] = token_text(a);
  }
  const int64_t n = by_id.empty() ? 0 : by_id.rbegin()->first + 1;
  if (n > (int64_t{1} << 24)) throw_error(n, " token ids; expected at most 2^24");
  const std::string unk = model.value("unk_token", json()).is_string() ? model["unk_token"].get<std::string>() : "";
  const bool byte_fallback = model.value("byte_fallback", false);
  for (int64_t id = 0; id < n; id++) {
    const auto it = by_id.find(id);
    // ids missing from both lists stay unused
    d.tokens.push_back(it == by_id.end() ? "<unused" + std::to_string(id) + ">" : it->second);
    TokenType type = it == by_id.end() ? TokenType::Unused : TokenType::Normal;
    if (!unk.empty() && d.tokens.back() == unk) type = TokenType::Unknown, d.unknown_id = static_cast<int32_t>(id);
    else if (const auto a = added.find(id); a != added.end()) type = a->second.second ? TokenType::Control : TokenType::UserDefined;
    else if (byte_fallback && d.tokens.back().size() == 6 && d.tokens.back().rfind("<0x", 0) == 0) type = TokenType::Byte;
    d.token_types.push_back(static_cast<int32_t>(type));
  }
  for (const json& m : model.value("merges", json::array())) d.merges.push_back(merge_text(m));
  if (byte_level) {
    d.pre = pre_of(pre_tokenizer);
  } else {
    // minus the rank of the first merge making each token; tokens no merge makes are never merged into
    std::map<std::string, float> score;
    for (size_t rank = 0; rank < d.merges.size(); rank++) {
      const size_t space = d.merges[rank].find(' ');
      if (space == std::string::npos) throw_error("merge ", rank, " \"", d.merges[rank], "\" has no space");
      score.emplace(d.merges[rank].substr(0, space) + d.merges[rank].substr(space + 1), -static_cast<float>(rank));
    }
    for (const std::string& t : d.tokens) {
      const auto it = score.find(t);
      d.scores.push_back(it != score.end() ? it->second : -std::numeric_limits<float>::max());
    }
    d.merges.clear();
    bool prepend = has_part(normalizer, "Prepend");
    has_part(pre_tokenizer, "Metaspace", [&](const json& m) {
      prepend |= m.value("prepend_scheme", m.value("add_prefix_space", true) ? "always" : "never") != "never";
    });
    d.add_space_prefix = prepend;
  }
  const auto id_of = [&](const std::string& text) -> int32_t {
    for (size_t i = 0; i < d.tokens.size(); i++)
      if (!text.empty() && d.tokens[i] == text) return static_cast<int32_t>(i);
    return -1;
  };
  d.bos_id = id_of(token_text(config.value("bos_token", json())));
  d.eos_id = id_of(token_text(config.value("eos_token", json())));
  if (config.contains("add_bos_token") && config["add_bos_token"].is_boolean()) {
    d.add_bos = config["add_bos_token"].get<bool>();
  } else {
    // without the config's flag, the post-processor's template says whether a special token opens each text
    std::string first;
    has_part(tok.value("post_processor", json()), "TemplateProcessing", [&](const json& t) {
      const json single = t.value("single", json::array());
      if (single.is_array() && !single.empty() && single[0].contains("SpecialToken"))
        first = single[0]["SpecialToken"].value("id", "");
    });
    d.add_bos = !first.empty();
    if (!first.empty()) d.bos_id = id_of(first);
  }
  return d;
}

}  // namespace

Tokenizer Tokenizer::from_hf(const std::string& path) {
  const fs::path file = fs::is_directory(path) ? fs::path(path) / "tokenizer.json" : fs::path(path);
  const fs::path config_file = file.parent_path() / "tokenizer_config.json";
  try {
    const json config = fs::exists(config_file) ? read_json(config_file) : json::object();
    return from_vocab(data_of(read_json(file), config));
  } catch (const Error& e) {
    throw_error("Tokenizer::from_hf: ", file.string(), ": ", e.what());
  } catch (const json::exception& e) {
    throw_error("Tokenizer::from_hf: ", file.string(), ": unexpected JSON: ", e.what());
  }
}

}  // namespace kiln::llm
