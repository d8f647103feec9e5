// beautiful_mnist trained data-parallel over MPI: `mpirun -np N mnist_data_parallel` runs N ranks that
// start from rank 0's weights, each computing the gradient of its share of every batch
// (kiln::distributed::DistributedSampler); average_gradients makes every rank's gradient the mean
// over the ranks, so all take the same Adam step that one process would take on the whole batch
// (up to float rounding; BatchNorm normalizes with each rank's own batch statistics, as PyTorch DDP
// does without SyncBatchNorm). Rank 0 prints, evaluates and writes the checkpoint (no --resume: see
// beautiful_mnist for that). Without mpirun it trains as one process.
//
//   mpirun -np 2 mnist_data_parallel --epochs 1 --steps 50
#include <kiln/distributed.h>
#include <kiln/kiln.h>
#include <kiln/nn/layers.h>
#include <kiln/nn/optim.h>
#include <kiln/nn/state.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "mnist/checkpoint.h"
#include "mnist/data.h"
#include "mnist/evaluate.h"
#include "mnist/flags.h"
#include "mnist/model.h"
#include "mnist/progress.h"

using namespace kiln;
namespace dist = kiln::distributed;

namespace {

struct Flags {
  int64_t epochs = 1, batch_size = 128, steps = 0, test_examples = 0, log_every = 10;
  double lr = 3e-3;
  uint64_t seed = 42;
  std::string data, checkpoint = "checkpoints/mnist_data_parallel.safetensors";
};

int train(const Flags& f) {
  const int rank = dist::rank(), world = dist::world_size();
  if (f.batch_size % world != 0)
    throw Error("--batch-size " + std::to_string(f.batch_size) + " must be a multiple of the " +
                std::to_string(world) + " ranks");
  const int64_t per_rank = f.batch_size / world;
  if (rank == 0) mnist::prepare_checkpoint_path(f.checkpoint);
  const mnist::HostData data = mnist::load_fashion_mnist(f.data);
  const mnist::Standardization norm = mnist::pixel_statistics(data.train);
  const dist::DistributedSampler sampler(data.train.count(), f.seed, /*shuffle=*/true, /*drop_last=*/true);
  int64_t steps_per_epoch = sampler.num_samples() / per_rank;  // the last partial batch is dropped
  if (f.steps > 0) steps_per_epoch = std::min(steps_per_epoch, f.steps);
  if (steps_per_epoch == 0)
    throw Error("--batch-size " + std::to_string(f.batch_size) + " is larger than the training set");

  Tensor::manual_seed(f.seed);
  mnist::BeautifulMnist model;
  const nn::StateDict model_state = nn::get_state_dict(model);
  std::vector<Tensor> state_tensors;
  for (const auto& [name, tensor] : model_state) state_tensors.push_back(tensor);
  dist::broadcast_parameters(state_tensors);  // the weights and BatchNorm statistics of rank 0
  const mnist::NamedParameters params = mnist::named_parameters(model_state);
  nn::optim::Adam opt(params.tensors, f.lr);
  nn::optim::OneCycleLR schedule(opt, f.lr, f.epochs * steps_per_epoch);
  if (rank == 0)
    std::printf("mnist_data_parallel: %d ranks x %lld images per step, %lld steps/epoch, %lld epochs\n", world,
                static_cast<long long>(per_rank), static_cast<long long>(steps_per_epoch),
                static_cast<long long>(f.epochs));

  mnist::Progress progress(f.epochs * steps_per_epoch, f.batch_size, f.log_every);
  double accuracy = NAN;
  for (int64_t epoch = 0; epoch < f.epochs; epoch++) {
    const std::vector<int64_t> share = sampler.indices(epoch);
    {
      mnist::ModeGuard train_mode(/*training=*/true, /*no_grad=*/false);
      for (int64_t step = 0; step < steps_per_epoch; step++) {
        mnist::Batch batch = mnist::make_batch(data.train, std::span(share).subspan(step * per_rank, per_rank),
                                               per_rank, norm);
        opt.zero_grad();
        Tensor loss = model(batch.images).sparse_categorical_crossentropy(batch.labels);
        loss.backward();
        // Backward, the loss and BatchNorm's statistics in one schedule; average_gradients then
        // finds the gradients realized.
        std::vector<Tensor> work = state_tensors;
        for (const Tensor& p : params.tensors) work.push_back(*p.grad());
        work.push_back(loss);
        Tensor::realize(work);
        dist::average_gradients(params.tensors);
        opt.step();
        schedule.step();
        const bool shown = (step + 1) % f.log_every == 0 || step + 1 == steps_per_epoch;
        std::optional<float> mean_loss;  // every rank takes part in the all_reduce
        if (shown) mean_loss = dist::all_reduce(loss, "mean").item<float>();
        if (rank == 0) progress.step_done(epoch + 1, f.epochs, step + 1, steps_per_epoch, mean_loss);
        if (mean_loss && !std::isfinite(*mean_loss))
          throw Error("epoch " + std::to_string(epoch + 1) + " step " + std::to_string(step + 1) +
                      ": the loss is not finite (try a smaller --lr)");
      }
    }
    if (rank != 0) continue;
    progress.end_line();
    accuracy = mnist::evaluate(model, data.test, norm, f.batch_size, f.test_examples);
    nn::StateDict checkpoint_state = mnist::training_state(model, opt, params.names);
    mnist::save_checkpoint(f.checkpoint, checkpoint_state,
                           {{"format", "kiln mnist_data_parallel 1"}, {"epoch", std::to_string(epoch + 1)},
                            {"ranks", std::to_string(world)}, {"batch_size", std::to_string(f.batch_size)}});
    std::printf("epoch %lld/%lld: test accuracy %.2f%%, checkpoint %s\n", static_cast<long long>(epoch + 1),
                static_cast<long long>(f.epochs), 100 * accuracy, f.checkpoint.c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // First: mpirun's ranks learn who they are; a rank that fails from here on ends the whole job.
  dist::init();
  Flags f;
  CLI::App app{"Trains tinygrad's beautiful_mnist CNN on Fashion-MNIST data-parallel, one MPI rank per process."};
  const CLI::Validator positive = mnist::whole_number(1, mnist::kMaxCount);
  const CLI::Validator non_negative = mnist::whole_number(0, mnist::kMaxCount);
  app.add_option("--epochs", f.epochs, "Epochs to train")->check(positive)->capture_default_str();
  app.add_option("--batch-size", f.batch_size, "Images per step, over all ranks")
      ->check(positive)->capture_default_str();
  app.add_option("--lr", f.lr, "Peak learning rate of the one-cycle schedule")
      ->check(mnist::positive_finite())->capture_default_str();
  app.add_option("--seed", f.seed, "Seed of the initial weights and of the shuffling")
      ->check(mnist::whole_number(0, UINT64_MAX))->capture_default_str();
  app.add_option("--steps", f.steps, "Steps per epoch at most (0: the whole training set)")
      ->check(non_negative)->capture_default_str();
  app.add_option("--test-examples", f.test_examples, "Evaluate on the first N test images (0: all)")
      ->check(non_negative)->capture_default_str();
  app.add_option("--log-every", f.log_every, "Print the mean loss over the ranks every N steps")
      ->check(positive)->capture_default_str();
  app.add_option("--data", f.data, "Directory of the Fashion-MNIST idx files (default: $KILN_FASHION_MNIST, "
                                   "else Debian's /usr/share/datasets/fashion-mnist)");
  app.add_option("--checkpoint", f.checkpoint, "Checkpoint rank 0 writes after every epoch")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    return train(f);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "mnist_data_parallel: rank %d: error: %s\n", dist::rank(), e.what());
    return 1;  // a nonzero exit ends the other ranks too (kiln/distributed.h)
  }
}
