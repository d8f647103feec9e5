#pragma once
// The KV cache: per layer, the keys and values of every position so far. Writes go through a mask
// computed from the positions (data, not constants), so a step's graph is the same at every position
// and compiles once. The buffers hold a capacity of positions that grows with the sequence (64, 128,
// 256, ... up to the model's context), so the masked write and attention read about the positions
// written so far, not the whole context: each capacity is its own graph, the way tinygrad binds the
// sequence length to a symbolic variable.
#include <vector>

#include "kiln/tensor.h"
#include "llm/config.h"

namespace kiln::llm {

class KVCache {
 public:
  static constexpr int64_t kSmallestCapacity = 64;

  KVCache(const Config& c, int64_t batch);

  // Makes the buffers hold positions [0, end): grows them, contents kept, to the smallest capacity
  // that does (callers check that end is within the context).
  void reserve(int64_t end);
  int64_t capacity() const { return capacities_[level_]; }
  // Which capacity is in use, 0 for the smallest: a graph captured over the cache replays at its level.
  size_t level() const { return level_; }

  // Writes k and v (B, kv_heads, T, head_dim) at positions pos (T) int32 of `layer`; returns that
  // layer's keys and values (B, kv_heads, capacity(), head_dim), lazily, after the write. Positions
  // past the capacity are dropped (a padded chunk's tail).
  std::pair<Tensor, Tensor> update(size_t layer, const Tensor& k, const Tensor& v, const Tensor& pos);

  const std::vector<Tensor>& tensors() const { return levels_[level_]; }  // keys and values of every layer
  int64_t batch() const { return batch_; }
  // Back to the smallest capacity, zeros: stale entries are never attended, but stay finite for the
  // masked products.
  void reset();

 private:
  // One set of tensors per capacity (layer l: keys at 2l, values at 2l+1), each living as long as the
  // cache so that a TinyJit captured over a level finds the same tensors whenever that level is in
  // use again; only the current level holds buffers, the others are unrealized zeros.
  std::vector<std::vector<Tensor>> levels_;
  std::vector<int64_t> capacities_;
  size_t level_ = 0;
  int64_t batch_;
};

}  // namespace kiln::llm
