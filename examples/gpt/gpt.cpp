// A small GPT trained on Debian's fortunes (byte-level: one token per byte) on the CPU: AdamW with
// weight decay on the matrices only, linear warm-up then cosine decay of the learning rate,
// gradient accumulation over micro-batches and gradient-norm clipping. It reports the validation
// loss and bits per byte at intervals and writes a checkpoint (model, optimizer state, step) that
// --resume continues from and --sample generates text with.
//
//   gpt                                   train with the defaults (see --help)
//   gpt --steps 20 --layers 1 --dim 32    a quick run
//   gpt --steps 2000 --stop-at 500        the first 500 steps of a 2000-step schedule
//   gpt --resume --steps 2000             continue the checkpoint up to step 2000
//   gpt --sample 500 --prompt "Q: "       500 bytes of text from the checkpoint
#include <kiln/kiln.h>
#include <kiln/nn/clip_grad.h>
#include <kiln/nn/layers.h>
#include <kiln/nn/optim.h>
#include <kiln/nn/state.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "../mnist/flags.h"
#include "../mnist/progress.h"
#include "checkpoint.h"
#include "data.h"
#include "model.h"

using namespace kiln;

namespace {

struct Flags {
  int64_t steps = 1000, batch = 16, block = 64, layers = 2, heads = 4, dim = 128, warmup = 50, accum = 1;
  int64_t eval_every = 100, eval_batches = 8, log_every = 10, sample = 0, stop_at = 0;
  double lr = 1e-3, min_lr = 1e-4, weight_decay = 0.1, clip = 1.0, dropout = 0, temperature = 0.8;
  uint64_t seed = 1337;
  std::string data = "/usr/share/games/fortunes", out = "checkpoints/gpt.safetensors", prompt = "\n";
  bool resume = false;
};

// Sets Tensor::training and Tensor::no_grad for a scope, then restores them.
class ModeGuard {
 public:
  ModeGuard(bool training, bool no_grad) : training_(Tensor::training), no_grad_(Tensor::no_grad) {
    Tensor::training = training;
    Tensor::no_grad = no_grad;
  }
  ~ModeGuard() {
    Tensor::training = training_;
    Tensor::no_grad = no_grad_;
  }

 private:
  bool training_, no_grad_;
};

// The batches of step `step` (one per micro-batch): drawn from a generator seeded by the run's seed
// and the step, so a resumed run sees the batches the uninterrupted one would have.
std::vector<gpt::Batch> step_batches(const std::vector<uint8_t>& data, const Flags& f, int64_t step) {
  std::mt19937_64 rng(f.seed * 1000003 + static_cast<uint64_t>(step));
  std::vector<gpt::Batch> out;
  for (int64_t i = 0; i < f.accum; i++) out.push_back(gpt::sample_batch(data, f.batch, f.block, rng));
  return out;
}

// Mean loss (nats per byte) over the same `eval_batches` validation batches every time; `loss` is
// the model's loss, through a TinyJit.
template <class LossFn>
double validation_loss(LossFn& loss, const std::vector<uint8_t>& val, const Flags& f) {
  ModeGuard eval_mode(/*training=*/false, /*no_grad=*/true);
  std::mt19937_64 rng(f.seed ^ 0x5eed);
  double sum = 0;
  for (int64_t i = 0; i < f.eval_batches; i++) {
    gpt::Batch b = gpt::sample_batch(val, f.batch, f.block, rng);
    sum += loss(b.x, b.y).template item<float>();
  }
  return sum / static_cast<double>(f.eval_batches);
}

// Generates `n` bytes after the prompt. The model always sees a full block (the context followed by
// padding, which causal attention keeps from the prediction) so every call has one shape.
int sample(const Flags& f) {
  gpt::GPT model(gpt::read_config(f.out, 0));
  gpt::load_weights(model, f.out);
  ModeGuard eval_mode(/*training=*/false, /*no_grad=*/true);
  const int64_t T = model.config.block_size, V = model.config.vocab_size;
  auto forward = TinyJit([&](const Tensor& idx) { return model(idx).realize(); });
  std::vector<int32_t> text(f.prompt.begin(), f.prompt.end());
  if (text.empty()) text.push_back('\n');
  std::mt19937_64 rng(f.seed);
  std::fputs(f.prompt.c_str(), stdout);
  for (int64_t i = 0; i < f.sample; i++) {
    const auto n = static_cast<int64_t>(std::min<size_t>(text.size(), static_cast<size_t>(T)));
    std::vector<int32_t> window(text.end() - n, text.end());
    window.resize(static_cast<size_t>(T), 0);
    std::vector<float> logits = forward(Tensor::from_vector(window, {1, T})).to_vector<float>();
    std::vector<double> weights(static_cast<size_t>(V));
    const float* row = logits.data() + (n - 1) * V;
    const float top = *std::max_element(row, row + V);
    for (int64_t v = 0; v < V; v++) weights[static_cast<size_t>(v)] = std::exp((row[v] - top) / f.temperature);
    const auto next = static_cast<int32_t>(std::discrete_distribution<int32_t>(weights.begin(), weights.end())(rng));
    text.push_back(next);
    std::fputc(next, stdout);
  }
  std::fputc('\n', stdout);
  return 0;
}

int train(Flags f) {
  std::optional<gpt::Metadata> resumed;
  gpt::Config config{256, f.block, f.layers, f.heads, f.dim, f.dropout};
  if (f.resume) {
    if (!std::filesystem::exists(f.out)) throw Error("--resume: no checkpoint at " + f.out + " (train first)");
    resumed = nn::state::safe_load_metadata(f.out);
    config = gpt::read_config(f.out, f.dropout);  // the checkpoint's shape, whatever the flags say
    f.block = config.block_size;
  }
  const std::filesystem::path dir = std::filesystem::path(f.out).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir);
  nn::state::safe_save_check(f.out);
  const gpt::Corpus corpus = gpt::load_corpus(f.data);

  Tensor::manual_seed(f.seed);
  gpt::GPT model(config);
  const gpt::ParamGroups groups = gpt::param_groups(nn::get_state_dict(model), f.weight_decay);
  nn::optim::AdamW opt(groups.groups, f.lr, 0.9, 0.95);
  nn::optim::WarmupCosineLR schedule(opt, std::min(f.warmup, f.steps), f.steps, f.min_lr);
  const nn::StateDict state = gpt::training_state(model, opt, groups.names);
  int64_t first_step = 0;
  if (resumed) {
    nn::load_state_dict_into(state, nn::state::safe_load(f.out));
    first_step = gpt::metadata_int(*resumed, "step", f.out);
    schedule.set_step(first_step);
    std::printf("resuming %s after step %lld\n", f.out.c_str(), static_cast<long long>(first_step));
  }
  int64_t n_params = 0;
  for (const Tensor& p : opt.params) n_params += p.numel();
  std::printf("gpt: %lld parameters (%lld layers, %lld heads, dim %lld, block %lld); %zu train / %zu val bytes "
              "from %lld files; batch %lld x %lld micro-batches, AdamW lr %g (warm-up %lld, cosine to %g)\n",
              static_cast<long long>(n_params), static_cast<long long>(config.n_layer),
              static_cast<long long>(config.n_head), static_cast<long long>(config.n_embd),
              static_cast<long long>(config.block_size), corpus.train.size(), corpus.val.size(),
              static_cast<long long>(corpus.files), static_cast<long long>(f.batch), static_cast<long long>(f.accum),
              f.lr, static_cast<long long>(f.warmup), f.min_lr);
  std::fflush(stdout);

  // One optimizer step over the micro-batches, replayed from its third call on (TinyJit). The
  // gradients of all but the last micro-batch are realized as they accumulate, so memory holds one
  // micro-batch's activations; the last one's fuse with the clip and the update.
  auto train_step = TinyJit([&](const std::vector<Tensor>& xs, const std::vector<Tensor>& ys) {
    opt.zero_grad();
    Tensor total = Tensor::zeros({});
    for (size_t i = 0; i < xs.size(); i++) {
      Tensor loss = model.loss(xs[i], ys[i]) / static_cast<double>(xs.size());
      loss.backward();
      total = total + loss;
      if (i + 1 == xs.size()) break;
      std::vector<Tensor> done{total};
      for (const Tensor& p : opt.params) done.push_back(*p.grad());
      Tensor::realize(done);
    }
    Tensor norm = f.clip > 0 ? nn::clip_grad_norm_(opt.params, f.clip) : Tensor::zeros({});
    std::vector<Tensor> work = opt.schedule_step();
    work.insert(work.end(), {total, norm});
    Tensor::realize(work);
    return std::make_pair(total, norm);
  });
  auto save = [&](int64_t step) {
    gpt::Metadata meta = gpt::config_metadata(config);
    meta["step"] = std::to_string(step);
    nn::state::safe_save(state, f.out, meta);
  };
  auto eval_loss = TinyJit([&](const Tensor& x, const Tensor& y) { return model.loss(x, y).realize(); });
  auto report_validation = [&](int64_t step) {
    const double loss = validation_loss(eval_loss, corpus.val, f);
    std::printf("step %lld: val loss %.4f, %.3f bits per byte\n", static_cast<long long>(step), loss,
                loss / std::log(2.0));
    std::fflush(stdout);
  };

  const int64_t tokens_per_step = f.batch * f.block * f.accum;
  const mnist::Clock::time_point start = mnist::Clock::now();
  mnist::Clock::time_point timed_from = start;
  int64_t timed_steps = 0;
  for (int64_t step = first_step; step < f.steps; step++) {
    std::vector<Tensor> xs, ys;
    for (gpt::Batch& b : step_batches(corpus.train, f, step)) {
      xs.push_back(b.x);
      ys.push_back(b.y);
    }
    auto [loss_t, norm_t] = train_step(xs, ys);
    const double lr = opt.lr();
    schedule.step();
    const float loss = loss_t.item<float>();
    if (!std::isfinite(loss))
      throw Error("the loss is no longer finite at step " + std::to_string(step + 1) + " (try a smaller --lr); " +
                  f.out + " is unchanged");
    // The first steps compile kernels and the second captures them, so rates are measured after those.
    if (step - first_step == 1) timed_from = mnist::Clock::now();
    if (step - first_step >= 2) timed_steps++;
    const int64_t done = step + 1;
    if (done % f.log_every == 0 || done == f.steps || done == first_step + 1) {
      const double per_step = timed_steps > 0 ? mnist::seconds_since(timed_from) / static_cast<double>(timed_steps)
                                               : mnist::seconds_since(start) / static_cast<double>(done - first_step);
      std::printf("step %lld/%lld  loss %.4f  lr %.2e  grad norm %.3f  %.0f tokens/s  ETA %s\n",
                  static_cast<long long>(done), static_cast<long long>(f.steps), loss, lr, norm_t.item<float>(),
                  static_cast<double>(tokens_per_step) / per_step,
                  mnist::format_duration(per_step * static_cast<double>(f.steps - done)).c_str());
      std::fflush(stdout);
    }
    if (done % f.eval_every == 0 || done == f.steps || done == f.stop_at) {
      report_validation(done);
      save(done);
    }
    if (done == f.stop_at) break;
  }
  if (first_step >= f.steps)
    std::printf("nothing to train: %lld of %lld steps done (pass a larger --steps)\n",
                static_cast<long long>(first_step), static_cast<long long>(f.steps));
  std::printf("done in %s; checkpoint %s\n", mnist::format_duration(mnist::seconds_since(start)).c_str(),
              f.out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train a small GPT on Debian's fortunes (byte-level), or sample text from a checkpoint"};
  Flags f;
  auto count = [](uint64_t min) { return mnist::whole_number(min, mnist::kMaxCount); };
  app.add_option("--steps", f.steps, "Optimizer steps in all (a resumed run continues up to it)")->check(count(1));
  app.add_option("--batch", f.batch, "Sequences per micro-batch")->check(count(1));
  app.add_option("--block", f.block, "Context length in bytes")->check(mnist::whole_number(1, 1 << 16));
  app.add_option("--layers", f.layers, "Transformer blocks")->check(mnist::whole_number(1, 1024));
  app.add_option("--heads", f.heads, "Attention heads (dividing --dim)")->check(mnist::whole_number(1, 1024));
  app.add_option("--dim", f.dim, "Embedding width")->check(mnist::whole_number(1, 1 << 16));
  app.add_option("--lr", f.lr, "Peak learning rate")->check(mnist::positive_finite());
  app.add_option("--min-lr", f.min_lr, "Learning rate at the end of the cosine")->check(CLI::NonNegativeNumber);
  app.add_option("--warmup", f.warmup, "Steps of linear warm-up")->check(mnist::whole_number(0, mnist::kMaxCount));
  app.add_option("--accum", f.accum, "Micro-batches per optimizer step (gradient accumulation)")->check(count(1));
  app.add_option("--clip", f.clip, "Clip the gradient norm to this (0: no clipping)")->check(CLI::NonNegativeNumber);
  app.add_option("--weight-decay", f.weight_decay, "AdamW's decay of the weight matrices")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--dropout", f.dropout, "Dropout probability while training")->check(CLI::Range(0.0, 0.99));
  app.add_option("--seed", f.seed, "Seed of the weights, the batches and sampling")
      ->check(mnist::whole_number(0, UINT64_MAX));
  app.add_option("--eval-every", f.eval_every, "Steps between validation (and checkpoints)")->check(count(1));
  app.add_option("--eval-batches", f.eval_batches, "Validation batches each time")->check(count(1));
  app.add_option("--log-every", f.log_every, "Steps between progress lines")->check(count(1));
  app.add_option("--data", f.data, "Directory of text files (fortune files)");
  app.add_option("--out", f.out, "Checkpoint file (safetensors) to write, --resume or --sample");
  app.add_flag("--resume", f.resume, "Continue training from --out");
  app.add_option("--stop-at", f.stop_at, "Stop after this step with a checkpoint, as if interrupted (--resume goes on)")
      ->check(count(1));
  app.add_option("--sample", f.sample, "Generate this many bytes from --out instead of training")
      ->check(count(1));
  app.add_option("--prompt", f.prompt, "Text the sample continues");
  app.add_option("--temperature", f.temperature, "Sampling temperature")->check(mnist::positive_finite());
  CLI11_PARSE(app, argc, argv);
  try {
    return f.sample > 0 ? sample(f) : train(f);
  } catch (const Error& e) {
    std::fprintf(stderr, "gpt: %s\n", e.what());
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    std::fprintf(stderr, "gpt: %s\n", e.what());
    return 1;
  }
}
