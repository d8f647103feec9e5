// KV cache writes as a masked select over the whole cache: cache[s] = new[t] where pos[t] == s.
#include "llm/kv_cache.h"

namespace kiln::llm {

KVCache::KVCache(const Config& c, int64_t batch) : batch_(batch) {
  for (int64_t i = 0; i < 2 * c.layers; i++)
    tensors_.push_back(Tensor::zeros({batch, c.kv_heads, c.max_context, c.head_dim}).realize());
}

void KVCache::reset() {
  for (Tensor& t : tensors_) t.assign(Tensor::zeros(t.shape()));
  Tensor::realize(tensors_);
}

std::pair<Tensor, Tensor> KVCache::update(size_t layer, const Tensor& k, const Tensor& v, const Tensor& pos) {
  const int64_t S = tensors_[0].shape()[2], T = pos.shape()[0];
  Tensor hit = pos.reshape({T, 1}).eq(Tensor::arange(0, static_cast<double>(S), 1, dtypes::int32).reshape({1, S}));
  Tensor written = hit.any({0}).reshape({1, 1, S, 1});
  // (1, 1, S, T, 1) one-hot times (B, H, 1, T, D), summed over T: each position's new row, or zeros
  Tensor select = hit.transpose(0, 1).cast(dtypes::float32).reshape({1, 1, S, T, 1});
  for (size_t i : {2 * layer, 2 * layer + 1}) {
    const Tensor& fresh = i % 2 == 0 ? k : v;
    Tensor scattered = (select * fresh.unsqueeze(2)).sum({3});
    tensors_[i].assign(written.where(scattered, tensors_[i]));
  }
  return {tensors_[2 * layer], tensors_[2 * layer + 1]};
}

}  // namespace kiln::llm
