#pragma once
// Test accuracy of the beautiful_mnist model, and the training/no-grad mode guard it runs under;
// shared by the training examples.
#include <kiln/kiln.h>

#include <algorithm>
#include <numeric>
#include <span>
#include <vector>

#include "data.h"
#include "model.h"

namespace mnist {

// Sets kiln::Tensor::training and kiln::Tensor::no_grad for a scope, then restores them.
class ModeGuard {
 public:
  ModeGuard(bool training, bool no_grad) : training_(kiln::Tensor::training), no_grad_(kiln::Tensor::no_grad) {
    kiln::Tensor::training = training;
    kiln::Tensor::no_grad = no_grad;
  }
  ~ModeGuard() {
    kiln::Tensor::training = training_;
    kiln::Tensor::no_grad = no_grad_;
  }

 private:
  bool training_, no_grad_;
};

// Fraction of the first `limit` test images (0: all) classified correctly. The argmax runs on the
// device; only the predicted classes come back to compare with the labels on the host.
inline double evaluate(const BeautifulMnist& model, const HostSplit& test, const Standardization& norm,
                int64_t batch_size, int64_t limit) {
  ModeGuard eval_mode(/*training=*/false, /*no_grad=*/true);
  const int64_t n = limit > 0 ? std::min(limit, test.count()) : test.count();
  std::vector<int64_t> indices(static_cast<size_t>(n));
  std::iota(indices.begin(), indices.end(), 0);
  int64_t correct = 0;
  for (int64_t start = 0; start < n; start += batch_size) {
    const int64_t size = std::min(batch_size, n - start);
    Batch batch = make_batch(test, std::span(indices).subspan(start, size), batch_size, norm);
    std::vector<int32_t> predicted = model(batch.images).argmax(1).to_vector<int32_t>();
    for (int64_t i = 0; i < size; i++)  // the padding past `size` is ignored
      correct += predicted[i] == test.labels[static_cast<size_t>(start + i)];
  }
  return static_cast<double>(correct) / static_cast<double>(n);
}

}  // namespace mnist
