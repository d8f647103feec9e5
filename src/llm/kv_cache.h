#pragma once
// The KV cache: per layer, the keys and values of every position so far, in buffers of the model's
// whole context. Writes go through a mask computed from the positions (data, not constants), so a
// decode step's graph is the same at every position and compiles once.
#include <vector>

#include "kiln/tensor.h"
#include "llm/config.h"

namespace kiln::llm {

class KVCache {
 public:
  KVCache(const Config& c, int64_t batch);

  // Writes k and v (B, kv_heads, T, head_dim) at positions pos (T) int32 of `layer`; returns that
  // layer's whole keys and values (B, kv_heads, max_context, head_dim), lazily, after the write.
  // Positions past the cache are dropped (a padded chunk's tail).
  std::pair<Tensor, Tensor> update(size_t layer, const Tensor& k, const Tensor& v, const Tensor& pos);

  const std::vector<Tensor>& tensors() const { return tensors_; }  // keys and values of every layer
  int64_t batch() const { return batch_; }
  void reset();  // zeros: stale entries are never attended, but stay finite for the masked products

 private:
  std::vector<Tensor> tensors_;  // layer l: keys at 2l, values at 2l+1
  int64_t batch_;
};

}  // namespace kiln::llm
