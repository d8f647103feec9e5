#pragma once
// What a kiln::llm::Model holds: its config, weights and KV cache, and the compiled decode step.
#include <functional>
#include <memory>
#include <optional>

#include "kiln/jit.h"
#include "kiln/llm.h"
#include "llm/config.h"
#include "llm/kv_cache.h"
#include "llm/weights.h"

namespace kiln::llm {

struct Model::Impl {
  Impl(Config config, Weights weights);

  // Runs tokens (B, T) at positions start_pos.. in chunks of at most kPrefillChunk, each padded to a
  // power of two so that any prompt length reuses a few compiled shapes. Returns (B, T, vocab)
  // logits, or nothing with want_logits false (a prompt whose keys and values are all we need).
  std::optional<Tensor> run(const std::vector<int32_t>& tokens, int64_t batch, int64_t start_pos, bool want_logits);
  // One token per sequence through the TinyJit-captured step of the cache's capacity: tokens (B), at
  // position pos.
  Tensor decode(const std::vector<int32_t>& tokens, int64_t pos);
  // Throws unless `ids` are in the vocabulary and T positions from start_pos fit the context.
  void check(const std::vector<int32_t>& ids, int64_t start_pos, int64_t T, const char* who) const;
  // The cache for `batch` sequences, a fresh one when the batch changes (only at start_pos 0).
  KVCache& cache_for(int64_t batch, int64_t start_pos);

  static constexpr int64_t kPrefillChunk = 64;

  Config config;
  Weights weights;
  Tensor inv_freq;
  std::optional<KVCache> cache;
  using Step = std::function<Tensor(Tensor, Tensor)>;
  // per capacity level of the cache (kept across reset(), as the cache keeps its tensors), for its batch size
  std::vector<std::unique_ptr<TinyJit<Step>>> decode_steps;
};

}  // namespace kiln::llm
