// KV cache writes as a masked select over the cache's capacity: cache[s] = new[t] where pos[t] == s.
#include "llm/kv_cache.h"

#include <algorithm>

namespace kiln::llm {

KVCache::KVCache(const Config& c, int64_t batch) : batch_(batch) {
  for (int64_t cap = std::min(kSmallestCapacity, c.max_context);; cap = std::min(2 * cap, c.max_context)) {
    capacities_.push_back(cap);
    levels_.emplace_back();
    for (int64_t i = 0; i < 2 * c.layers; i++)
      levels_.back().push_back(Tensor::zeros({batch, c.kv_heads, cap, c.head_dim}));
    if (cap == c.max_context) break;
  }
  reset();
}

void KVCache::reset() {
  for (std::vector<Tensor>& level : levels_)
    for (Tensor& t : level) t.assign(Tensor::zeros(t.shape()));
  level_ = 0;
  Tensor::realize(levels_[0]);
}

void KVCache::reserve(int64_t end) {
  size_t next = level_;
  while (next + 1 < capacities_.size() && capacities_[next] < end) next++;
  if (next == level_) return;
  std::vector<Tensor>& from = levels_[level_];
  std::vector<Tensor>& to = levels_[next];
  const int64_t grow = capacities_[next] - capacities_[level_];
  for (size_t i = 0; i < to.size(); i++) {
    to[i].assign(from[i].pad({{0, 0}, {0, 0}, {0, grow}, {0, 0}}));
    from[i].assign(Tensor::zeros(from[i].shape()));  // lets the smaller buffer go
  }
  Tensor::realize(to);
  level_ = next;
}

std::pair<Tensor, Tensor> KVCache::update(size_t layer, const Tensor& k, const Tensor& v, const Tensor& pos) {
  std::vector<Tensor>& cache = levels_[level_];
  const int64_t S = capacity(), T = pos.shape()[0];
  Tensor hit = pos.reshape({T, 1}).eq(Tensor::arange(0, static_cast<double>(S), 1, dtypes::int32).reshape({1, S}));
  Tensor written = T == 1 ? hit.reshape({1, 1, S, 1}) : hit.any({0}).reshape({1, 1, S, 1});
  // Each position's new row, or zeros: (1, 1, S, T, 1) one-hot times (B, H, 1, T, D), summed over T.
  // One position (a decode step) broadcasts its row instead, so the write is one elementwise kernel.
  const auto scattered = [&](const Tensor& fresh) {
    if (T == 1) return fresh;
    return (hit.transpose(0, 1).cast(dtypes::float32).reshape({1, 1, S, T, 1}) * fresh.unsqueeze(2)).sum({3});
  };
  for (size_t i : {2 * layer, 2 * layer + 1})
    cache[i].assign(written.where(scattered(i % 2 == 0 ? k : v), cache[i]));
  return {cache[2 * layer], cache[2 * layer + 1]};
}

}  // namespace kiln::llm
