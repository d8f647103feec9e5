// DistributedSampler: each rank's share of a dataset, the same split on every rank for a seed and epoch.
#include <random>

#include "kiln/distributed.h"
#include "kiln/error.h"

namespace kiln::distributed {

DistributedSampler::DistributedSampler(int64_t size, uint64_t seed, bool shuffle, bool drop_last)
    : size_(size), seed_(seed), shuffle_(shuffle), drop_last_(drop_last) {
  if (size < 0) throw_error("kiln::distributed::DistributedSampler: expected a dataset size >= 0, got ", size);
}

int64_t DistributedSampler::num_samples() const {
  const int64_t world = world_size();
  return drop_last_ ? size_ / world : (size_ + world - 1) / world;
}

std::vector<int64_t> DistributedSampler::indices(int64_t epoch) const {
  std::vector<int64_t> order(static_cast<size_t>(size_));
  for (int64_t i = 0; i < size_; i++) order[static_cast<size_t>(i)] = i;
  if (shuffle_) {  // Fisher-Yates from a generator every rank seeds alike
    std::seed_seq seq{static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32), static_cast<uint32_t>(epoch),
                      static_cast<uint32_t>(static_cast<uint64_t>(epoch) >> 32)};
    std::mt19937_64 rng(seq);
    for (int64_t i = size_ - 1; i > 0; i--)
      std::swap(order[static_cast<size_t>(i)], order[rng() % static_cast<uint64_t>(i + 1)]);
  }
  const int64_t world = world_size(), per_rank = num_samples();
  std::vector<int64_t> share(static_cast<size_t>(per_rank));
  for (int64_t j = 0; j < per_rank; j++)  // past the end: the permutation again from its start (padding)
    share[static_cast<size_t>(j)] = order[static_cast<size_t>((rank() + j * world) % size_)];
  return share;
}

}  // namespace kiln::distributed
