// The memory planner: within one schedule, an intermediate buffer's memory is reused once its last
// reader has run, so a chain of kernels needs about two intermediates at a time, not all of them;
// intermediates a live tensor still refers to keep their buffers (and values).
#include <gtest/gtest.h>

#include <vector>

#include "kiln/kiln.h"

namespace {

using kiln::GlobalCounters;
using kiln::Tensor;

constexpr int64_t kN = 1 << 20;  // 4 MB of float32
constexpr int64_t kBytes = kN * 4;

// x -> 6 stored steps -> a sum: each step is its own kernel (contiguous).
Tensor chain(const Tensor& x, std::vector<Tensor>* steps = nullptr) {
  Tensor y = x;
  for (int i = 0; i < 6; i++) {
    y = (y * 1.5f + static_cast<float>(i)).contiguous();
    if (steps) steps->push_back(y);
  }
  return y.sum();
}

TEST(MemoryPlanner, ChainReusesIntermediateMemory) {
  Tensor x = Tensor::ones({kN}).contiguous().realize();
  Tensor total = chain(x);
  GlobalCounters::reset();
  const int64_t before = GlobalCounters::mem_used;
  total.realize();
  // all six would be 24 MB; reuse needs two at a time (one read, one written)
  EXPECT_LE(GlobalCounters::mem_peak - before, 2 * kBytes + 4096);
  // the value: 1 -> 1.5x + i, six times
  double v = 1;
  for (int i = 0; i < 6; i++) v = v * 1.5 + i;
  EXPECT_FLOAT_EQ(total.item<float>(), static_cast<float>(v * kN));
}

TEST(MemoryPlanner, IntermediatesStillReferencedKeepTheirValues) {
  Tensor x = Tensor::ones({kN}).contiguous().realize();
  std::vector<Tensor> steps;
  Tensor total = chain(x, &steps);
  GlobalCounters::reset();
  const int64_t before = GlobalCounters::mem_used;
  total.realize();
  EXPECT_GE(GlobalCounters::mem_peak - before, 6 * kBytes);  // every step is held by a tensor
  double v = 1;
  for (int i = 0; i < 6; i++) {
    v = v * 1.5 + i;
    std::vector<float> got = steps[i].to_vector<float>();
    EXPECT_EQ(got.front(), static_cast<float>(v)) << "step " << i;
    EXPECT_EQ(got.back(), static_cast<float>(v)) << "step " << i;
  }
}

}  // namespace
