// tinygrad's beautiful_mnist, in kiln: a small CNN trained on Fashion-MNIST on the CPU with Adam
// and a one-cycle learning rate. After every epoch it measures test accuracy and writes a
// checkpoint (model and optimizer state) that --resume continues from and --eval evaluates.
// Ctrl-C saves a checkpoint at the next step boundary, which --resume continues mid-epoch; a loss
// that is no longer finite stops training with an error and leaves the last checkpoint as it was.
//
//   beautiful_mnist                          train with the defaults (see --help)
//   beautiful_mnist --steps 5 --epochs 1     a quick run: 5 steps per epoch
//   beautiful_mnist --resume                 continue from the checkpoint's next epoch
//   beautiful_mnist --eval FILE              only measure the test accuracy of FILE's weights
#include <kiln/kiln.h>
#include <kiln/nn/layers.h>
#include <kiln/nn/optim.h>
#include <kiln/nn/state.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mnist/checkpoint.h"
#include "mnist/data.h"
#include "mnist/evaluate.h"
#include "mnist/flags.h"
#include "mnist/interrupt.h"
#include "mnist/model.h"
#include "mnist/progress.h"

using namespace kiln;
using mnist::evaluate;
using mnist::ModeGuard;

namespace {

constexpr int kInterruptedExit = 130;  // the shell's code for a program ended by SIGINT

struct Flags {
  int64_t epochs = 3, batch_size = 128, steps = 0, test_examples = 0, log_every = 10;
  double lr = 3e-3;
  uint64_t seed = 42;
  std::string data, checkpoint = "checkpoints/beautiful_mnist.safetensors", eval_file;
  bool resume = false;
};

std::string exact(double v) {  // a double that parses back to the same value
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

mnist::Metadata run_metadata(const Flags& f, const mnist::Standardization& norm) {
  return {{"format", "kiln beautiful_mnist 1"},
          {"epochs", std::to_string(f.epochs)},
          {"batch_size", std::to_string(f.batch_size)},
          {"lr", exact(f.lr)},
          {"seed", std::to_string(f.seed)},
          {"steps", std::to_string(f.steps)},
          {"input_mean", exact(norm.mean)},
          {"input_std", exact(norm.std)}};
}

// --resume: the flags that shape the run (batch size, learning rate, seed, steps per epoch) come
// from the checkpoint, so training continues exactly as an uninterrupted run would; changing one
// explicitly is an error. --epochs may be raised to train further.
void adopt_checkpoint_flags(Flags& f, const CLI::App& app, const mnist::Metadata& meta) {
  // A damaged or edited file must not smuggle in a value the command line would refuse.
  auto check = [&](const std::string& key, const CLI::Validator& validator) {
    std::string text = mnist::metadata_value(meta, key, f.checkpoint);
    if (std::string problem = validator(text); !problem.empty())
      throw Error(f.checkpoint + ": metadata \"" + key + "\": " + problem);
  };
  auto adopt = [&](auto& value, const std::string& key, const std::string& option, const CLI::Validator& validator) {
    check(key, validator);
    auto saved = mnist::metadata_number<std::remove_reference_t<decltype(value)>>(meta, key, f.checkpoint);
    if (app.count(option) > 0 && value != saved)
      throw Error("--resume: " + f.checkpoint + " was trained with " + option + " " + meta.at(key) +
                  "; it cannot change when resuming");
    value = saved;
  };
  adopt(f.batch_size, "batch_size", "--batch-size", mnist::whole_number(1, mnist::kMaxCount));
  adopt(f.steps, "steps", "--steps", mnist::whole_number(0, mnist::kMaxCount));
  adopt(f.lr, "lr", "--lr", mnist::positive_finite());
  adopt(f.seed, "seed", "--seed", mnist::whole_number(0, UINT64_MAX));
  check("epochs", mnist::whole_number(1, mnist::kMaxCount));
  if (app.count("--epochs") == 0) f.epochs = mnist::metadata_number<int64_t>(meta, "epochs", f.checkpoint);
}

int eval_only(const Flags& f, const mnist::HostData& data) {
  mnist::BeautifulMnist model;
  mnist::load_model_weights(model, f.eval_file);
  // The statistics the model was trained with, from its checkpoint when it has them.
  mnist::Metadata meta = nn::state::safe_load_metadata(f.eval_file);
  mnist::Standardization norm = mnist::pixel_statistics(data.train);
  if (meta.count("input_mean") && meta.count("input_std"))
    norm = {mnist::metadata_number<double>(meta, "input_mean", f.eval_file),
            mnist::metadata_number<double>(meta, "input_std", f.eval_file)};
  mnist::Clock::time_point start = mnist::Clock::now();
  double accuracy = evaluate(model, data.test, norm, f.batch_size, f.test_examples);
  std::printf("%s: test accuracy %.2f%% in %s\n", f.eval_file.c_str(), 100 * accuracy,
              mnist::format_duration(mnist::seconds_since(start)).c_str());
  return 0;
}

int train(Flags f, const CLI::App& app) {
  const mnist::Clock::time_point wall_start = mnist::Clock::now();
  std::optional<mnist::Metadata> resumed;
  if (f.resume) {
    if (!std::filesystem::exists(f.checkpoint))
      throw Error("--resume: no checkpoint at " + f.checkpoint + " (train without --resume first, or pass --checkpoint)");
    resumed = nn::state::safe_load_metadata(f.checkpoint);
    adopt_checkpoint_flags(f, app, *resumed);
  }
  mnist::prepare_checkpoint_path(f.checkpoint);
  const mnist::HostData data = mnist::load_fashion_mnist(f.data);
  const mnist::Standardization norm = mnist::pixel_statistics(data.train);
  const int64_t train_count = data.train.count();
  int64_t steps_per_epoch = train_count / f.batch_size;  // the last partial batch is dropped
  if (f.steps > 0) steps_per_epoch = std::min(steps_per_epoch, f.steps);
  if (steps_per_epoch == 0)
    throw Error("--batch-size " + std::to_string(f.batch_size) + " is larger than the training set (" +
                std::to_string(train_count) + " images)");

  Tensor::manual_seed(f.seed);
  mnist::BeautifulMnist model;
  const nn::StateDict model_state = nn::get_state_dict(model);
  const mnist::NamedParameters params = mnist::named_parameters(model_state);
  nn::optim::Adam opt(params.tensors, f.lr);
  nn::optim::OneCycleLR schedule(opt, f.lr, f.epochs * steps_per_epoch);
  const nn::StateDict checkpoint_state = mnist::training_state(model, opt, params.names);

  // Where training starts: the epochs done, then the steps done of the next one (a checkpoint saved
  // on Ctrl-C is mid-epoch).
  int64_t first_epoch = 0, first_step = 0;
  double accuracy = NAN;  // of the last evaluation; a checkpoint saved before any has none
  if (resumed) {
    mnist::load_checkpoint(f.checkpoint, checkpoint_state);
    first_epoch = mnist::metadata_number<int64_t>(*resumed, "epoch", f.checkpoint);
    if (resumed->count("epoch_step"))
      first_step = mnist::metadata_number<int64_t>(*resumed, "epoch_step", f.checkpoint);
    if (first_step < 0 || first_step >= steps_per_epoch)
      throw Error(f.checkpoint + ": metadata \"epoch_step\" is " + std::to_string(first_step) +
                  ", outside the epoch's " + std::to_string(steps_per_epoch) + " steps");
    schedule.epoch_counter = mnist::metadata_number<int64_t>(*resumed, "step", f.checkpoint);
    if (resumed->count("accuracy")) accuracy = mnist::metadata_number<double>(*resumed, "accuracy", f.checkpoint);
    if (first_step > 0)
      std::printf("resuming %s in epoch %lld after step %lld\n", f.checkpoint.c_str(),
                  static_cast<long long>(first_epoch + 1), static_cast<long long>(first_step));
    else
      std::printf("resuming %s after epoch %lld (test accuracy %.2f%%)\n", f.checkpoint.c_str(),
                  static_cast<long long>(first_epoch), 100 * accuracy);
    if (first_epoch >= f.epochs) {
      std::printf("nothing to train: %lld of %lld epochs done (pass a larger --epochs to continue)\n",
                  static_cast<long long>(first_epoch), static_cast<long long>(f.epochs));
      return 0;
    }
  }
  std::printf("beautiful_mnist: %lld training / %lld test images, batch %lld, %lld steps/epoch, epochs %lld..%lld, "
              "Adam with one-cycle lr (peak %g), seed %llu\n",
              static_cast<long long>(train_count), static_cast<long long>(data.test.count()),
              static_cast<long long>(f.batch_size), static_cast<long long>(steps_per_epoch),
              static_cast<long long>(first_epoch + 1), static_cast<long long>(f.epochs), f.lr,
              static_cast<unsigned long long>(f.seed));
  std::fflush(stdout);

  // The training step, as a replay of its kernels from the third call on (TinyJit): no scheduling
  // or codegen per step.
  auto train_step = TinyJit([&](const Tensor& images, const Tensor& labels) {
    opt.zero_grad();
    Tensor loss = model(images).sparse_categorical_crossentropy(labels);
    loss.backward();
    // One schedule for the whole step: the updates, Adam's state, the BatchNorm running
    // statistics (assigned by the forward pass) and the loss.
    std::vector<Tensor> work = opt.schedule_step();
    for (const auto& [name, tensor] : model_state) work.push_back(tensor);
    work.push_back(loss);
    Tensor::realize(work);
    return loss;
  });
  // Writes the checkpoint after `epochs_done` epochs and `epoch_step` steps of the next, unless the
  // state is no longer finite: then the last good checkpoint stays as it is.
  auto save = [&](int64_t epochs_done, int64_t epoch_step) {
    if (std::optional<std::string> bad = mnist::first_non_finite(checkpoint_state))
      throw Error("the training state is no longer finite: " + *bad + " (try a smaller --lr); stopped without "
                  "saving, " + f.checkpoint + " is unchanged");
    mnist::Metadata meta = run_metadata(f, norm);
    meta["epoch"] = std::to_string(epochs_done);
    if (epoch_step > 0) meta["epoch_step"] = std::to_string(epoch_step);
    meta["step"] = std::to_string(schedule.epoch_counter);
    if (!std::isnan(accuracy)) meta["accuracy"] = exact(accuracy);
    mnist::save_checkpoint(f.checkpoint, checkpoint_state, meta);
  };
  mnist::Progress progress((f.epochs - first_epoch) * steps_per_epoch - first_step, f.batch_size, f.log_every);
  double train_seconds = 0;
  int64_t steps_run = 0;
  mnist::catch_interrupt();
  for (int64_t epoch = first_epoch; epoch < f.epochs; epoch++) {
    const std::vector<int64_t> order = mnist::epoch_permutation(train_count, f.seed, epoch);
    {
      ModeGuard train_mode(/*training=*/true, /*no_grad=*/false);
      const mnist::Clock::time_point epoch_start = mnist::Clock::now();
      for (int64_t step = epoch == first_epoch ? first_step : 0; step < steps_per_epoch; step++) {
        if (mnist::interrupted()) {
          progress.end_line();
          if (steps_run == 0) {
            std::printf("interrupted before any step: nothing to save, %s is unchanged\n", f.checkpoint.c_str());
            return kInterruptedExit;
          }
          save(epoch, step);
          std::printf("interrupted: saved epoch %lld step %lld/%lld to %s (--resume continues from there)\n",
                      static_cast<long long>(epoch + 1), static_cast<long long>(step),
                      static_cast<long long>(steps_per_epoch), f.checkpoint.c_str());
          return kInterruptedExit;
        }
        std::span<const int64_t> indices = std::span(order).subspan(step * f.batch_size, f.batch_size);
        mnist::Batch batch = mnist::make_batch(data.train, indices, f.batch_size, norm);
        Tensor loss = train_step(batch.images, batch.labels);
        schedule.step();
        steps_run++;
        // The loss is already computed; reading it is a small copy, done only when it is shown.
        const bool last = step + 1 == steps_per_epoch;
        std::optional<float> shown;
        if ((step + 1) % f.log_every == 0 || last || steps_run == 1) shown = loss.item<float>();
        progress.step_done(epoch + 1, f.epochs, step + 1, steps_per_epoch, shown);
        if (shown && !std::isfinite(*shown)) {
          progress.end_line();
          throw Error("epoch " + std::to_string(epoch + 1) + " step " + std::to_string(step + 1) + ": the loss is " +
                      std::to_string(*shown) + " (try a smaller --lr); stopped without saving, " + f.checkpoint +
                      " is unchanged");
        }
      }
      train_seconds += mnist::seconds_since(epoch_start);
    }
    progress.end_line();

    progress.status("epoch " + std::to_string(epoch + 1) + ": evaluating on the test set...");
    accuracy = evaluate(model, data.test, norm, f.batch_size, f.test_examples);
    progress.clear_status();
    save(epoch + 1, 0);
    std::printf("epoch %lld/%lld: test accuracy %.2f%%, checkpoint %s\n", static_cast<long long>(epoch + 1),
                static_cast<long long>(f.epochs), 100 * accuracy, f.checkpoint.c_str());
    std::fflush(stdout);
    if (mnist::interrupted() && epoch + 1 < f.epochs) {
      std::printf("interrupted: the checkpoint of epoch %lld is saved\n", static_cast<long long>(epoch + 1));
      return kInterruptedExit;
    }
  }
  std::printf("done: %lld steps in %s (%.3f steps/s), wall time %s, test accuracy %.2f%%\n",
              static_cast<long long>(steps_run), mnist::format_duration(train_seconds).c_str(),
              static_cast<double>(steps_run) / train_seconds,
              mnist::format_duration(mnist::seconds_since(wall_start)).c_str(), 100 * accuracy);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"Trains tinygrad's beautiful_mnist CNN on Fashion-MNIST with kiln, on the CPU."};
  const CLI::Validator positive = mnist::whole_number(1, mnist::kMaxCount);
  const CLI::Validator non_negative = mnist::whole_number(0, mnist::kMaxCount);
  app.add_option("--epochs", f.epochs, "Epochs to train (with --resume: the total, counting those done)")
      ->check(positive)->capture_default_str();
  app.add_option("--batch-size", f.batch_size, "Images per step")->check(positive)->capture_default_str();
  app.add_option("--lr", f.lr, "Peak learning rate of the one-cycle schedule")
      ->check(mnist::positive_finite())->capture_default_str();
  app.add_option("--seed", f.seed, "Seed of the initial weights and of the shuffling")
      ->check(mnist::whole_number(0, UINT64_MAX))->capture_default_str();
  app.add_option("--steps", f.steps, "Steps per epoch at most (0: the whole training set), for quick runs")
      ->check(non_negative)->capture_default_str();
  app.add_option("--test-examples", f.test_examples, "Evaluate on the first N test images (0: all)")
      ->check(non_negative)->capture_default_str();
  app.add_option("--log-every", f.log_every, "Read the loss and, off a terminal, print progress every N steps")
      ->check(positive)->capture_default_str();
  app.add_option("--data", f.data, "Directory of the Fashion-MNIST idx files (default: $KILN_FASHION_MNIST, "
                                   "else Debian's /usr/share/datasets/fashion-mnist)");
  app.add_option("--checkpoint", f.checkpoint, "Checkpoint written after every epoch and on Ctrl-C")->capture_default_str();
  auto* resume = app.add_flag("--resume", f.resume, "Continue from --checkpoint's next epoch");
  app.add_option("--eval", f.eval_file, "Only evaluate the weights of this checkpoint on the test set")
      ->excludes(resume);
  CLI11_PARSE(app, argc, argv);

  try {
    if (!f.eval_file.empty()) return eval_only(f, mnist::load_fashion_mnist(f.data));
    return train(f, app);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "beautiful_mnist: error: %s\n", e.what());
    return 1;
  }
}
