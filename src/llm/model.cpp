// kiln::llm::Model: loading a checkpoint, and running tokens through the decoder and its KV cache.
#include <algorithm>
#include <bit>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/error.h"
#include "kiln/nn/state.h"
#include "llm/model_impl.h"
#include "llm/transformer.h"

namespace kiln::llm {

namespace fs = std::filesystem;

Model::Impl::Impl(Config config_, Weights weights_)
    : config(std::move(config_)), weights(std::move(weights_)),
      inv_freq(Tensor::from_vector(rope_inv_freq(config), {config.head_dim / 2})) {}

KVCache& Model::Impl::cache_for(int64_t batch, int64_t start_pos) {
  if (cache && cache->batch() == batch) return *cache;
  if (start_pos != 0)
    throw_error("llm::Model: a batch of ", batch, " sequences must start at position 0 (the cache holds ",
                cache ? cache->batch() : 0, "), got start_pos ", start_pos);
  decode_steps.clear();  // they captured the old cache's tensors
  cache.emplace(config, batch);
  return *cache;
}

std::optional<Tensor> Model::Impl::run(const std::vector<int32_t>& tokens, int64_t batch, int64_t start_pos,
                                       bool want_logits) {
  const int64_t T = static_cast<int64_t>(tokens.size()) / batch;
  KVCache& kv = cache_for(batch, start_pos);
  std::vector<Tensor> pieces;
  for (int64_t begin = 0; begin < T; begin += kPrefillChunk) {
    const int64_t n = std::min(kPrefillChunk, T - begin), padded = static_cast<int64_t>(std::bit_ceil(uint64_t(n)));
    kv.reserve(start_pos + begin + n);
    // Padding tokens sit after the real ones: causal attention keeps them out of the real rows, and
    // the cache entries they write lie past the sequence, masked until real tokens overwrite them.
    std::vector<int32_t> chunk(static_cast<size_t>(batch * padded), 0), pos(static_cast<size_t>(padded));
    for (int64_t b = 0; b < batch; b++)
      std::copy_n(tokens.begin() + b * T + begin, n, chunk.begin() + b * padded);
    for (int64_t i = 0; i < padded; i++) pos[i] = static_cast<int32_t>(start_pos + begin + i);
    Tensor hidden = transformer_forward(config, weights, inv_freq, kv, Tensor::from_vector(chunk, {batch, padded}),
                                        Tensor::from_vector(pos, {padded}));
    std::vector<Tensor> outputs = kv.tensors();
    if (want_logits) outputs.push_back(output_head(weights, hidden));
    Tensor::realize(outputs);
    if (want_logits) pieces.push_back(outputs.back().shrink({{0, batch}, {0, n}, {0, config.vocab}}));
  }
  if (!want_logits) return std::nullopt;
  return pieces.size() == 1 ? pieces[0] : Tensor::cat(pieces, 1);
}

Tensor Model::Impl::decode(const std::vector<int32_t>& tokens, int64_t pos) {
  const int64_t batch = static_cast<int64_t>(tokens.size());
  KVCache& kv = cache_for(batch, pos);
  kv.reserve(pos + 1);
  if (decode_steps.size() <= kv.level()) decode_steps.resize(kv.level() + 1);
  std::unique_ptr<TinyJit<Step>>& step = decode_steps[kv.level()];
  if (!step)
    step = std::make_unique<TinyJit<Step>>([this](Tensor tok, Tensor at) {
      Tensor logits = output_head(weights, transformer_forward(config, weights, inv_freq, *cache, tok, at));
      std::vector<Tensor> outputs = cache->tensors();
      outputs.push_back(logits);
      Tensor::realize(outputs);  // the cache's new buffers are part of what the capture replays
      return logits;
    });
  return (*step)(Tensor::from_vector(tokens, {batch, 1}),
                 Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(pos)}, {1}));
}

void Model::Impl::check(const std::vector<int32_t>& ids, int64_t start_pos, int64_t T, const char* who) const {
  if (start_pos < 0 || start_pos + T > config.max_context)
    throw_error(who, ": positions ", start_pos, "..", start_pos + T - 1, " do not fit the context of ",
                config.max_context, " tokens");
  for (int32_t id : ids)
    if (id < 0 || id >= config.vocab) throw_error(who, ": token id ", id, " is outside the vocabulary [0, ", config.vocab, ")");
}

Model::Model(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Model Model::from_safetensors(const std::string& folder) {
  const fs::path dir(folder);
  if (!fs::is_directory(dir)) throw_error("Model::from_safetensors: expected a folder, got \"", folder, "\"");
  const fs::path config_path = dir / "config.json";
  std::ifstream config_file(config_path);
  if (!config_file) throw_error("Model::from_safetensors: ", config_path.string(), " is missing or unreadable");
  std::stringstream text;
  text << config_file.rdbuf();
  Config config = config_from_hf_json(text.str(), config_path.string());

  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".safetensors") files.push_back(e.path());
  if (files.empty()) throw_error("Model::from_safetensors: no *.safetensors file in \"", folder, "\"");
  std::sort(files.begin(), files.end());
  std::map<std::string, Tensor> tensors;
  for (const fs::path& f : files)
    for (auto& [name, t] : nn::state::safe_load(f.string()))
      if (!tensors.emplace(name, t).second)
        throw_error("Model::from_safetensors: tensor ", name, " is in more than one file of \"", folder, "\"");
  // Tensors left over (a stored rotary table, say) are not needed: the config says what the model is.
  Weights weights = weights_from_hf(config, tensors, folder);
  return Model(std::make_shared<Impl>(std::move(config), std::move(weights)));
}

Tensor Model::forward(const Tensor& tokens, int64_t start_pos) {
  const Config& c = impl_->config;
  if (tokens.ndim() != 2 || tokens.dtype() != dtypes::int32)
    throw_error("Model::forward: expected tokens (batch, seq) int32, got ", shape_to_string(tokens.shape()), " ",
                tokens.dtype().name());
  const int64_t B = tokens.shape()[0], T = tokens.shape()[1];
  if (B < 1 || T < 1) throw_error("Model::forward: expected at least one token, got ", shape_to_string(tokens.shape()));
  std::vector<int32_t> ids = tokens.to_vector<int32_t>();
  impl_->check(ids, start_pos, T, "Model::forward");
  if (T == 1) return impl_->decode(ids, start_pos).reshape({B, 1, c.vocab});
  return *impl_->run(ids, B, start_pos, true);
}

void Model::reset() {
  if (impl_->cache) impl_->cache->reset();
}

int64_t Model::vocab_size() const { return impl_->config.vocab; }
int64_t Model::max_context() const { return impl_->config.max_context; }
const std::vector<int32_t>& Model::eos_ids() const { return impl_->config.eos_ids; }

}  // namespace kiln::llm
