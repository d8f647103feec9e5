// GGUF metadata -> Config: the `<arch>.*` keys llama.cpp's converter writes, the vocabulary's size from
// the token embedding, the end-of-generation ids from tokenizer.ggml.*, and llama3's rope_freqs.weight.
#include <algorithm>
#include <optional>

#include "kiln/error.h"
#include "kiln/nn/gguf.h"
#include "llm/config.h"

namespace kiln::llm {
namespace {

using nn::state::GGUFFile;
using nn::state::GGUFValue;

// What each architecture's tensors hold beyond LLaMA's, and how its stored q/k rows pair features for the
// rotation: llama.cpp's converter permutes LLaMA's and Mistral's rows so that rope turns (2i, 2i + 1)
// (ggml's "normal" rope); Qwen2 and Qwen3 keep Hugging Face's halves (ggml's NEOX rope).
struct ArchRule {
  const char* arch;
  RopeLayout layout;
  bool qkv_bias, qk_norm;
};
const ArchRule kArchitectures[] = {{"llama", RopeLayout::Pair, false, false},
                                   {"mistral", RopeLayout::Pair, false, false},
                                   {"qwen2", RopeLayout::Half, true, false},
                                   {"qwen3", RopeLayout::Half, false, true}};

bool is_float(const GGUFValue& v) {
  return v.type() == nn::state::GGUFValueType::FLOAT32 || v.type() == nn::state::GGUFValueType::FLOAT64;
}

// The metadata of one file, each read naming its key when it is missing or of the wrong kind.
class Metadata {
 public:
  Metadata(const GGUFFile& file, const std::string& where) : file_(file), where_(where) {}

  const GGUFValue* find(const std::string& key) const { return file_.find(key); }
  const GGUFValue& get(const std::string& key, const char* expected) const {
    const GGUFValue* v = find(key);
    if (!v) throw_error(where_, ": missing metadata key ", key, " (expected ", expected, ")");
    return *v;
  }
  int64_t positive(const std::string& key) const { return positive(key, get(key, "a positive integer")); }
  std::optional<int64_t> positive_if_present(const std::string& key) const {
    const GGUFValue* v = find(key);
    return v ? std::optional<int64_t>(positive(key, *v)) : std::nullopt;
  }
  std::optional<int64_t> integer_if_present(const std::string& key) const {
    const GGUFValue* v = find(key);
    if (!v) return std::nullopt;
    if (is_float(*v) || !number_or_null(*v))
      throw_error(where_, ": metadata key ", key, ": expected an integer, got a ", gguf_type_name(v->type()));
    return v->as_int();
  }
  double number(const std::string& key) const { return number(key, get(key, "a number")); }
  double number_or(const std::string& key, double fallback) const {
    const GGUFValue* v = find(key);
    return v ? number(key, *v) : fallback;
  }
  std::string string(const std::string& key) const {
    const GGUFValue& v = get(key, "a string");
    if (v.type() != nn::state::GGUFValueType::STRING)
      throw_error(where_, ": metadata key ", key, ": expected a string, got a ", gguf_type_name(v.type()));
    return v.as_string();
  }

 private:
  // Any integer or float kind as a double; nothing for strings, arrays and bools.
  static std::optional<double> number_or_null(const GGUFValue& v) {
    if (is_float(v)) return v.as_float();
    if (v.type() == nn::state::GGUFValueType::BOOL || v.type() == nn::state::GGUFValueType::STRING ||
        v.type() == nn::state::GGUFValueType::ARRAY)
      return std::nullopt;
    return static_cast<double>(v.as_int());
  }
  double number(const std::string& key, const GGUFValue& v) const {
    const std::optional<double> x = number_or_null(v);
    if (!x) throw_error(where_, ": metadata key ", key, ": expected a number, got a ", gguf_type_name(v.type()));
    return *x;
  }
  int64_t positive(const std::string& key, const GGUFValue& v) const {
    const double x = number(key, v);
    if (is_float(v) || x <= 0)
      throw_error(where_, ": metadata key ", key, ": expected a positive integer, got ", x, " (", gguf_type_name(v.type()), ")");
    return v.as_int();
  }
  const GGUFFile& file_;
  const std::string& where_;
};

bool has_tensor(const GGUFFile& file, const std::string& name) {
  const auto& infos = file.tensor_infos();
  return std::any_of(infos.begin(), infos.end(), [&](const nn::state::GGUFTensorInfo& t) { return t.name == name; });
}

const ArchRule& arch_rule(const std::string& arch, const std::string& where) {
  for (const ArchRule& r : kArchitectures)
    if (arch == r.arch) return r;
  throw_error(where, ": general.architecture: expected llama, mistral, qwen2 or qwen3, got \"", arch, "\"");
}

// rope.scaling.type: none or linear (llama3's scaling comes as rope_freqs.weight instead).
RopeScaling rope_scaling(const Metadata& m, const GGUFFile& file, const std::string& arch, int64_t head_dim,
                         const std::string& where) {
  RopeScaling r;
  const std::string key = arch + ".rope.scaling.type";
  const std::string type = m.find(key) ? m.string(key) : "none";
  if (type != "none" && type != "linear")
    throw_error(where, ": ", key, ": expected none or linear, got \"", type, "\"");
  if (type == "linear") {
    r.type = type;
    r.factor = m.number_or(arch + ".rope.scaling.factor", 1.0);
    if (r.factor <= 0) throw_error(where, ": ", arch, ".rope.scaling.factor must be positive, got ", r.factor);
  }
  if (has_tensor(file, "rope_freqs.weight")) {
    const nn::state::GGUFTensorInfo& info = file.info("rope_freqs.weight");
    if (info.shape != Shape{head_dim / 2})
      throw_error(where, ": tensor rope_freqs.weight: expected shape ", shape_to_string({head_dim / 2}), ", got ",
                  shape_to_string(info.shape));
    r.freq_factors = file.dequantized("rope_freqs.weight");
    for (float f : r.freq_factors)
      if (!(f > 0)) throw_error(where, ": tensor rope_freqs.weight: expected positive factors, got ", f);
  }
  return r;
}

// tokenizer.ggml's end-of-generation ids: end of sequence, and end of turn / of message where given.
std::vector<int32_t> eos_ids(const Metadata& m) {
  std::vector<int32_t> ids;
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"})
    if (const std::optional<int64_t> id = m.integer_if_present(key);
        id && std::find(ids.begin(), ids.end(), *id) == ids.end())
      ids.push_back(static_cast<int32_t>(*id));
  return ids;
}

}  // namespace

Config config_from_gguf(const GGUFFile& file, const std::string& where) {
  const Metadata m(file, where);
  const std::string arch = m.string("general.architecture");
  const ArchRule& rule = arch_rule(arch, where);
  const std::string p = arch + ".";
  Config c;
  c.model_type = arch;
  c.rope_layout = rule.layout;
  c.qkv_bias = rule.qkv_bias;
  c.qk_norm = rule.qk_norm;
  c.dim = m.positive(p + "embedding_length");
  c.layers = m.positive(p + "block_count");
  c.hidden_dim = m.positive(p + "feed_forward_length");
  c.heads = m.positive(p + "attention.head_count");
  c.kv_heads = m.positive_if_present(p + "attention.head_count_kv").value_or(c.heads);
  c.head_dim = m.positive_if_present(p + "attention.key_length").value_or(c.dim / c.heads);
  if (const auto v = m.positive_if_present(p + "attention.value_length"); v && *v != c.head_dim)
    throw_error(where, ": ", p, "attention.value_length: expected the key length ", c.head_dim, ", got ", *v);
  if (const auto r = m.positive_if_present(p + "rope.dimension_count"); r && *r != c.head_dim)
    throw_error(where, ": ", p, "rope.dimension_count: expected the head size ", c.head_dim,
                " (kiln rotates whole heads), got ", *r);
  c.norm_eps = m.number(p + "attention.layer_norm_rms_epsilon");
  c.rope_theta = m.number_or(p + "rope.freq_base", c.rope_theta);
  c.rope_scaling = rope_scaling(m, file, arch, c.head_dim, where);
  if (arch == "mistral") c.sliding_window = m.positive_if_present(p + "attention.sliding_window").value_or(0);
  c.max_context = std::min(m.positive(p + "context_length"), kDefaultMaxContext);
  c.eos_ids = eos_ids(m);

  // The embedding's rows are the vocabulary: tokenizers may list fewer tokens (a padded table), never more.
  if (!has_tensor(file, "token_embd.weight")) throw_error(where, ": missing tensor token_embd.weight (vocab, ", c.dim, ")");
  const nn::state::GGUFTensorInfo& embed = file.info("token_embd.weight");
  if (embed.shape.size() != 2 || embed.shape[1] != c.dim)
    throw_error(where, ": tensor token_embd.weight: expected shape (vocab, ", c.dim, "), got ", shape_to_string(embed.shape));
  c.vocab = embed.shape[0];
  if (const GGUFValue* tokens = m.find("tokenizer.ggml.tokens");
      tokens && tokens->type() == nn::state::GGUFValueType::ARRAY && int64_t(tokens->as_array().values.size()) > c.vocab)
    throw_error(where, ": tokenizer.ggml.tokens lists ", tokens->as_array().values.size(), " tokens, more than the ",
                c.vocab, " rows of token_embd.weight");
  for (int32_t id : c.eos_ids)
    if (id < 0 || id >= c.vocab) throw_error(where, ": end-of-sequence token ", id, " is outside the vocabulary of ", c.vocab);
  c.tied_embeddings = !has_tensor(file, "output.weight");

  if (c.heads % c.kv_heads != 0)
    throw_error(where, ": ", p, "attention.head_count (", c.heads, ") must be a multiple of ", p,
                "attention.head_count_kv (", c.kv_heads, ")");
  if (c.head_dim % 2 != 0) throw_error(where, ": rotary embeddings need an even head size, got ", c.head_dim);
  return c;
}

}  // namespace kiln::llm
