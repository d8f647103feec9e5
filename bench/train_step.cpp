// Training-step benchmark: one Adam step of tinygrad's beautiful_mnist CNN (forward, backward,
// update, BatchNorm statistics) at a given batch size, in ms per step, whole steps (building the
// graph, scheduling, launching), called directly and through TinyJit (compile excluded by warm-up
// steps), and the step's peak device memory. Writes `key value` lines to argv[1]; bench/run.sh adds
// PyTorch's figure from the same run.
//   train_step [out_file] [batch]   (--help lists them)
#include <kiln/kiln.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "../examples/mnist/model.h"

using namespace kiln;

int main(int argc, char** argv) {
  std::string out = "bench/results/train_step.txt";
  int64_t batch = 512;
  CLI::App app{"One Adam step of beautiful_mnist, called directly and through TinyJit."};
  app.add_option("out_file", out, "Figures as key value lines")->capture_default_str();
  app.add_option("batch", batch, "Images per step")->check(CLI::PositiveNumber)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  Tensor::manual_seed(1);
  mnist::BeautifulMnist model;
  nn::optim::Adam opt(nn::get_parameters(model), 1e-3);
  std::vector<Tensor> state;
  for (auto& [name, t] : nn::get_state_dict(model)) state.push_back(t);
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  for (size_t i = 0; i < labels.size(); i++) labels[i] = static_cast<int32_t>(i % 10);
  Tensor::training = true;
  auto step = [&](const Tensor& x, const Tensor& y) {
    opt.zero_grad();
    Tensor loss = model(x).sparse_categorical_crossentropy(y);
    loss.backward();
    std::vector<Tensor> todo = opt.schedule_step();
    todo.insert(todo.end(), state.begin(), state.end());
    todo.push_back(loss);
    Tensor::realize(todo);
    return loss;
  };
  TinyJit jitted(step);
  Tensor y = Tensor::from_vector(labels, {batch});
  // median ms of whole steps, after warm-up calls (compiles, and the JIT's capture)
  auto time_steps = [&](auto&& run) {
    for (int i = 0; i < 3; i++) run(Tensor::randn({batch, 1, 28, 28}).realize(), y);
    std::vector<double> ms;
    for (int i = 0; i < 7; i++) {
      Tensor x = Tensor::randn({batch, 1, 28, 28}).realize();
      auto t0 = std::chrono::steady_clock::now();
      run(x, y);
      runtime::get_device(x.device()).synchronize();  // a GPU's launches return before their kernels end
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  };
  // alternate, so both see the same machine
  double plain_ms = time_steps(step), jit_ms = time_steps(jitted);
  plain_ms = std::min(plain_ms, time_steps(step));
  jit_ms = std::min(jit_ms, time_steps(jitted));
  Tensor x = Tensor::randn({batch, 1, 28, 28}).realize();
  GlobalCounters::reset();
  step(x, y);
  const int64_t kernels = GlobalCounters::kernel_count, peak = GlobalCounters::mem_peak;
  std::printf("beautiful_mnist training step, batch %lld: %.1f ms, with TinyJit %.1f ms; %lld kernels, peak memory %.1f MB\n",
              static_cast<long long>(batch), plain_ms, jit_ms, static_cast<long long>(kernels), peak / 1e6);
  std::ofstream f(out);
  f << "train_step_batch " << batch << "\ntrain_step_ms " << plain_ms << "\ntrain_step_jit_ms " << jit_ms
    << "\ntrain_step_kernels " << kernels << "\ntrain_step_peak_mb " << peak / 1e6 << "\n";
  return 0;
}
