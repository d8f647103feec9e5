#pragma once
// Fashion-MNIST kept on the host as raw bytes. Batches are assembled here (gathered by index,
// converted to float and standardized) and handed to the device whole with Tensor::from_vector,
// so the device never gathers from the full dataset.
#include <kiln/kiln.h>
#include <kiln/nn/datasets.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace mnist {

inline constexpr int64_t kPixels = 28 * 28;

struct HostSplit {
  std::vector<uint8_t> images;  // count * kPixels, row-major
  std::vector<uint8_t> labels;  // count
  int64_t count() const { return static_cast<int64_t>(labels.size()); }
};

// Pixel statistics of the training set, so inputs have zero mean and unit variance.
struct Standardization {
  double mean = 0, std = 1;
};

struct HostData {
  HostSplit train, test;
};

inline HostSplit to_host(const kiln::Tensor& images, const kiln::Tensor& labels) {
  return HostSplit{images.to_vector<uint8_t>(), labels.to_vector<uint8_t>()};
}

// Throws kiln::Error (saying how to install the dataset) when it is missing.
inline HostData load_fashion_mnist(const std::string& dir) {
  kiln::nn::datasets::Mnist m = kiln::nn::datasets::fashion_mnist(dir);
  return HostData{to_host(m.X_train, m.Y_train), to_host(m.X_test, m.Y_test)};
}

inline Standardization pixel_statistics(const HostSplit& split) {
  // Sums of integers are exact; only the final division rounds.
  uint64_t sum = 0, sum_sq = 0;
  for (uint8_t p : split.images) {
    sum += p;
    sum_sq += static_cast<uint64_t>(p) * p;
  }
  double n = static_cast<double>(split.images.size());
  double mean = static_cast<double>(sum) / n;
  double var = static_cast<double>(sum_sq) / n - mean * mean;
  return Standardization{mean, std::sqrt(std::max(var, 1e-12))};
}

// The order of the training set in `epoch`: a function of (seed, epoch) only, so a resumed run
// visits the same batches as an uninterrupted one. Fisher-Yates with mt19937_64 directly (not
// std::shuffle, whose algorithm differs between standard libraries).
inline std::vector<int64_t> epoch_permutation(int64_t n, uint64_t seed, int64_t epoch) {
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(epoch)};
  std::mt19937_64 rng(seq);
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++) order[static_cast<size_t>(i)] = i;
  for (int64_t i = n - 1; i > 0; i--) std::swap(order[static_cast<size_t>(i)], order[rng() % static_cast<uint64_t>(i + 1)]);
  return order;
}

struct Batch {
  kiln::Tensor images;  // (batch, 1, 28, 28) float32, standardized
  kiln::Tensor labels;  // (batch,) int32
};

// The examples `indices` of `split`, padded with zero images (label 0) up to `batch_size` so every
// batch has the same shape and reuses the same compiled kernels.
inline Batch make_batch(const HostSplit& split, std::span<const int64_t> indices, int64_t batch_size,
                        const Standardization& norm) {
  std::vector<float> images(static_cast<size_t>(batch_size * kPixels), 0.0f);
  std::vector<int32_t> labels(static_cast<size_t>(batch_size), 0);
  const float mean = static_cast<float>(norm.mean), inv_std = static_cast<float>(1.0 / norm.std);
  for (size_t b = 0; b < indices.size(); b++) {
    const uint8_t* src = split.images.data() + indices[b] * kPixels;
    float* dst = images.data() + static_cast<int64_t>(b) * kPixels;
    for (int64_t p = 0; p < kPixels; p++) dst[p] = (static_cast<float>(src[p]) - mean) * inv_std;
    labels[b] = split.labels[static_cast<size_t>(indices[b])];
  }
  return Batch{kiln::Tensor::from_vector(std::move(images), {batch_size, 1, 28, 28}),
               kiln::Tensor::from_vector(std::move(labels), {batch_size})};
}

}  // namespace mnist
