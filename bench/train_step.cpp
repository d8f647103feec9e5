// Training-step benchmark: one Adam step of tinygrad's beautiful_mnist CNN (forward, backward,
// update, BatchNorm statistics) at a given batch size, in ms per step (compile excluded by warm-up
// steps). Writes `key value` lines to argv[1]; bench/run.sh adds PyTorch's figure from the same run.
//   train_step [out_file] [batch]
#include <kiln/kiln.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "../examples/mnist/model.h"

using namespace kiln;

int main(int argc, char** argv) {
  const std::string out = argc > 1 ? argv[1] : "bench/results/train_step.txt";
  const int64_t batch = argc > 2 ? std::stoll(argv[2]) : 512;
  Tensor::manual_seed(1);
  mnist::BeautifulMnist model;
  nn::optim::Adam opt(nn::get_parameters(model), 1e-3);
  std::vector<Tensor> state;
  for (auto& [name, t] : nn::get_state_dict(model)) state.push_back(t);
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  for (size_t i = 0; i < labels.size(); i++) labels[i] = static_cast<int32_t>(i % 10);
  Tensor::training = true;
  auto step = [&] {
    Tensor x = Tensor::randn({batch, 1, 28, 28});
    opt.zero_grad();
    Tensor loss = model(x).sparse_categorical_crossentropy(Tensor::from_vector(labels, {batch}));
    loss.backward();
    std::vector<Tensor> todo = opt.schedule_step();
    todo.insert(todo.end(), state.begin(), state.end());
    todo.push_back(loss);
    auto t0 = std::chrono::steady_clock::now();
    Tensor::realize(todo);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  for (int i = 0; i < 2; i++) step();  // compile (or load from the disk cache)
  std::vector<double> ms;
  for (int i = 0; i < 5; i++) ms.push_back(step());
  std::sort(ms.begin(), ms.end());
  GlobalCounters::reset();
  step();
  std::printf("beautiful_mnist training step, batch %lld: median %.1f ms (best %.1f), %lld kernels\n",
              static_cast<long long>(batch), ms[ms.size() / 2], ms[0], static_cast<long long>(GlobalCounters::kernel_count));
  std::ofstream f(out);
  f << "train_step_batch " << batch << "\ntrain_step_ms " << ms[ms.size() / 2] << "\ntrain_step_kernels "
    << GlobalCounters::kernel_count << "\n";
  return 0;
}
