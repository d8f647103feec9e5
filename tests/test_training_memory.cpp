// Training holds memory flat: after warm-up, resident memory does not grow with the step count
// (lazy graphs, gradients, optimizer state and buffers from earlier steps are all freed).
#include <gtest/gtest.h>

#include <cstdio>
#include <unistd.h>

#include "kiln/kiln.h"

namespace {

using kiln::Tensor;
namespace nn = kiln::nn;

// Resident set size in bytes, from /proc/self/statm.
double resident_bytes() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f || std::fscanf(f, "%ld %ld", &pages, &resident) != 2) ADD_FAILURE() << "cannot read /proc/self/statm";
  if (f) std::fclose(f);
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

struct SmallNet {
  nn::Linear l1{16, 32};
  nn::BatchNorm bn{32};
  nn::Linear l2{32, 4};
  Tensor operator()(const Tensor& x) const { return l2(bn(l1(x)).relu()); }
  void collect(nn::StateDict& out, const std::string& prefix) const {
    l1.collect(out, prefix + "l1.");
    bn.collect(out, prefix + "bn.");
    l2.collect(out, prefix + "l2.");
  }
};

TEST(TrainingMemory, ResidentMemoryAfterStep1000IsWithinTenPercentOfStep100) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's quarantine keeps freed memory resident; the release build measures this";
#endif
  Tensor::manual_seed(7);
  SmallNet net;
  nn::optim::Adam opt(nn::get_parameters(net), 1e-3);
  std::vector<Tensor> state;
  for (auto& [name, t] : nn::get_state_dict(net)) state.push_back(t);
  std::vector<float> xs(8 * 16);
  std::vector<int32_t> ys(8);
  Tensor::training = true;
  double at_100 = 0, first_loss = 0, last_loss = 0;
  for (int step = 1; step <= 1000; step++) {
    for (size_t i = 0; i < xs.size(); i++) xs[i] = static_cast<float>((i * 7 + step % 5) % 11) / 11.0f - 0.5f;
    for (size_t i = 0; i < ys.size(); i++) ys[i] = static_cast<int32_t>((i + step % 3) % 4);
    opt.zero_grad();
    Tensor loss = net(Tensor::from_vector(xs, {8, 16})).sparse_categorical_crossentropy(Tensor::from_vector(ys, {8}));
    loss.backward();
    std::vector<Tensor> todo = opt.schedule_step();
    todo.insert(todo.end(), state.begin(), state.end());
    todo.push_back(loss);
    Tensor::realize(todo);
    if (step == 1) first_loss = loss.item<float>();
    if (step == 100) at_100 = resident_bytes();
    last_loss = loss.item<float>();
  }
  Tensor::training = false;
  double at_1000 = resident_bytes();
  EXPECT_LE(at_1000, at_100 * 1.10) << "resident memory grew from " << at_100 / 1e6 << " MB at step 100 to "
                                    << at_1000 / 1e6 << " MB at step 1000";
  EXPECT_LT(last_loss, first_loss);  // and it did train
}

}  // namespace
