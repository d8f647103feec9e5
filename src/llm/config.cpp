// config.json -> Config, and the rotary frequencies its rope settings give.
#include "llm/config.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "kiln/error.h"

namespace kiln::llm {
namespace {

using json = nlohmann::json;

const char* const kModelTypes[] = {"llama", "mistral", "qwen2", "qwen3"};
const char* const kArchitectures[][2] = {{"LlamaForCausalLM", "llama"},
                                         {"MistralForCausalLM", "mistral"},
                                         {"Qwen2ForCausalLM", "qwen2"},
                                         {"Qwen3ForCausalLM", "qwen3"}};

// The model type config.json names, from "model_type" or else "architectures".
std::string model_type(const json& j, const std::string& where) {
  std::string type = j.value("model_type", "");
  if (type.empty() && j.contains("architectures") && j["architectures"].is_array())
    for (const json& a : j["architectures"])
      for (const auto& [arch, t] : kArchitectures)
        if (a.is_string() && a.get<std::string>() == arch) type = t;
  if (std::find(std::begin(kModelTypes), std::end(kModelTypes), type) == std::end(kModelTypes))
    throw_error(where, ": expected a model_type of llama, mistral, qwen2 or qwen3 (architectures ",
                j.value("architectures", json::array()).dump(), "), got \"", type, "\"");
  return type;
}

int64_t positive(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<int64_t>() <= 0)
    throw_error(where, ": expected a positive integer \"", key, "\", got ", j.contains(key) ? j[key].dump() : "nothing");
  return j[key].get<int64_t>();
}

RopeScaling rope_scaling(const json& j, const std::string& where) {
  RopeScaling r;
  if (!j.contains("rope_scaling") || j["rope_scaling"].is_null()) return r;
  const json& s = j["rope_scaling"];
  r.type = s.value("rope_type", s.value("type", ""));
  if (r.type == "default") r.type.clear();
  if (!r.type.empty() && r.type != "linear" && r.type != "llama3")
    throw_error(where, ": rope_scaling type \"", r.type, "\" is not supported (expected linear or llama3)");
  r.factor = s.value("factor", 1.0);
  r.low_freq_factor = s.value("low_freq_factor", r.low_freq_factor);
  r.high_freq_factor = s.value("high_freq_factor", r.high_freq_factor);
  r.original_max_position = s.value("original_max_position_embeddings", r.original_max_position);
  if (r.factor <= 0) throw_error(where, ": rope_scaling factor must be positive, got ", r.factor);
  return r;
}

std::vector<int32_t> eos_ids(const json& j) {
  std::vector<int32_t> ids;
  if (!j.contains("eos_token_id")) return ids;
  const json& e = j["eos_token_id"];
  if (e.is_number_integer()) ids.push_back(e.get<int32_t>());
  if (e.is_array())
    for (const json& x : e) ids.push_back(x.get<int32_t>());
  return ids;
}

}  // namespace

Config config_from_hf_json(const std::string& text, const std::string& where) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw_error(where, ": not valid JSON: ", e.what());
  }
  if (!j.is_object()) throw_error(where, ": expected a JSON object, got ", j.type_name());
  Config c;
  try {
    c.model_type = model_type(j, where);
    c.dim = positive(j, "hidden_size", where);
    c.layers = positive(j, "num_hidden_layers", where);
    c.heads = positive(j, "num_attention_heads", where);
    c.kv_heads = j.contains("num_key_value_heads") && !j["num_key_value_heads"].is_null()
                     ? positive(j, "num_key_value_heads", where) : c.heads;
    c.head_dim = j.contains("head_dim") && !j["head_dim"].is_null() ? positive(j, "head_dim", where) : c.dim / c.heads;
    c.hidden_dim = positive(j, "intermediate_size", where);
    c.vocab = positive(j, "vocab_size", where);
    c.norm_eps = j.value("rms_norm_eps", c.norm_eps);
    c.rope_theta = j.value("rope_theta", c.rope_theta);
    c.rope_scaling = rope_scaling(j, where);
    c.tied_embeddings = j.value("tie_word_embeddings", false);
    c.qkv_bias = c.model_type == "qwen2" || j.value("attention_bias", false);
    c.qk_norm = c.model_type == "qwen3";
    if (c.model_type == "mistral" && j.contains("sliding_window") && j["sliding_window"].is_number_integer())
      c.sliding_window = j["sliding_window"].get<int64_t>();
    if (j.value("use_sliding_window", false))
      throw_error(where, ": use_sliding_window is not supported for ", c.model_type);
    if (j.value("hidden_act", "silu") != "silu")
      throw_error(where, ": expected hidden_act \"silu\", got \"", j.value("hidden_act", ""), "\"");
    if (j.value("mlp_bias", false)) throw_error(where, ": mlp_bias is not supported");
    c.max_context = std::min(j.value("max_position_embeddings", kDefaultMaxContext), kDefaultMaxContext);
    c.eos_ids = eos_ids(j);
  } catch (const json::exception& e) {
    throw_error(where, ": a field has the wrong type: ", e.what());
  }
  if (c.heads % c.kv_heads != 0)
    throw_error(where, ": num_attention_heads (", c.heads, ") must be a multiple of num_key_value_heads (", c.kv_heads, ")");
  if (c.head_dim % 2 != 0) throw_error(where, ": rotary embeddings need an even head_dim, got ", c.head_dim);
  return c;
}

std::vector<float> rope_inv_freq(const Config& c) {
  const RopeScaling& s = c.rope_scaling;
  std::vector<float> out;
  for (int64_t i = 0; i < c.head_dim; i += 2) {
    double f = 1.0 / std::pow(c.rope_theta, static_cast<double>(i) / static_cast<double>(c.head_dim));
    if (s.type == "linear") f /= s.factor;
    if (s.type == "llama3") {  // Meta's: long wavelengths slow down by `factor`, short ones stay, a blend between
      const double wavelen = 2 * M_PI / f, old = static_cast<double>(s.original_max_position);
      const double low_wavelen = old / s.low_freq_factor, high_wavelen = old / s.high_freq_factor;
      if (wavelen > low_wavelen) {
        f /= s.factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth = (old / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        f = (1 - smooth) * f / s.factor + smooth * f;
      }
    }
    if (!s.freq_factors.empty()) f /= s.freq_factors[static_cast<size_t>(i / 2)];
    out.push_back(static_cast<float>(f));
  }
  return out;
}

}  // namespace kiln::llm
