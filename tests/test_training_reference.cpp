// Transformer-training features against PyTorch (values made by tests/python/make_training_reference.py):
// clip_grad_norm_, the warm-up + cosine schedule, AdamW with parameter groups (its steps replayed by
// TinyJit while the learning rate changes), gradient accumulation over micro-batches, and
// examples/gpt's model: its loss and every weight's gradient for one batch with torch's weights.
//
// Tolerances (|got - want| <= atol + rtol |want|): the clip and AdamW run in float64 against torch's
// float64 (rtol 1e-9, atol 1e-11); the schedule's rates are float32 (rtol 1e-6); the GPT runs in
// float32 against torch's float64 on the same float32 weights (loss rtol 1e-5, gradients rtol 1e-3
// and atol 1e-5: two layers of float32 sums over at most 48 terms).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "error_message.h"
#include "gpt/model.h"
#include "kiln/jit.h"
#include "kiln/nn/clip_grad.h"
#include "kiln/nn/layers.h"
#include "kiln/nn/optim.h"
#include "kiln/nn/state.h"
#include "kiln/tensor.h"
#include "reference.h"
#include "reference_file.h"

namespace {

using kiln::Tensor;
using ref::NdArray;
namespace dtypes = kiln::dtypes;
namespace optim = kiln::nn::optim;

constexpr kt::Tol kF64{1e-9, 1e-11};

kiln::nn::state::StateDict& file() { return kiln_test::reference_file("KILN_TRAINING_REFERENCE"); }
const Tensor& get(const std::string& key) { return kiln_test::reference_tensor("KILN_TRAINING_REFERENCE", key); }

NdArray host(const Tensor& t) { return NdArray(t.shape(), kt::read(t)); }
Tensor own_copy(const Tensor& t, kiln::DType dtype) { return t.cast(dtype).contiguous().realize(); }

void expect_error(const std::function<void()>& f, const std::string& part) {
  const std::string message = kt::error_of(f);
  EXPECT_NE(message.find(part), std::string::npos) << "the message: " << message;
}

// ---- clip_grad_norm_

void check_clip(const std::string& name, int n) {
  const std::string p = "clip." + name + ".";
  std::vector<Tensor> params;
  for (int i = 0; i < n; i++) {
    Tensor g = get(p + "g" + std::to_string(i));
    params.push_back(Tensor::zeros(g.shape(), dtypes::float64).contiguous().realize().requires_grad_());
    params.back().set_grad(own_copy(g, dtypes::float64));
  }
  std::optional<Tensor> held = params[0].grad();  // in place: a handle taken before sees the clipped values
  Tensor norm = kiln::nn::clip_grad_norm_(params, kt::read(get(p + "max_norm"))[0]);
  EXPECT_NEAR(norm.item<double>(), kt::read(get(p + "norm"))[0], 1e-12) << name;
  for (int i = 0; i < n; i++)
    EXPECT_TRUE(kt::matches(*params[i].grad(), host(get(p + "out" + std::to_string(i))), kF64)) << name << " " << i;
  EXPECT_TRUE(kt::matches(*held, host(get(p + "out0")), kF64)) << name << ": not in place";
}

TEST(TrainingReference, ClipGradNormScalesWhenAbove) { check_clip("active", 3); }
TEST(TrainingReference, ClipGradNormKeepsWhenBelow) { check_clip("inactive", 2); }
TEST(TrainingReference, ClipGradNormToZero) { check_clip("zero", 1); }

TEST(TrainingReference, ClipGradNormSkipsParametersWithoutGradients) {
  Tensor a = Tensor::ones({2}).contiguous().realize().requires_grad_(), b = Tensor::ones({3}).contiguous().realize();
  a.set_grad(Tensor::from_vector(std::vector<float>{3, 4}, {2}));
  EXPECT_FLOAT_EQ(kiln::nn::clip_grad_norm_({a, b}, 1.0).item<float>(), 5.0f);
  EXPECT_FALSE(b.grad().has_value());
  EXPECT_FLOAT_EQ(kiln::nn::clip_grad_norm_({b}, 1.0).item<float>(), 0.0f);
  expect_error([&] { kiln::nn::clip_grad_norm_({a}, -1.0); }, "max_norm must be a finite number >= 0, got -1");
}

// ---- the schedule

TEST(TrainingReference, WarmupCosineMatchesLambdaLR) {
  std::vector<double> hp = kt::read(get("schedule.params")), want = kt::read(get("schedule.lrs"));
  Tensor w = Tensor::zeros({1}).contiguous().realize();
  optim::SGD opt({w}, hp[0]);
  optim::WarmupCosineLR schedule(opt, static_cast<int64_t>(hp[1]), static_cast<int64_t>(hp[2]), hp[3]);
  for (size_t step = 0; step < want.size(); step++) {
    EXPECT_NEAR(opt.lr(), want[step], 1e-6 * want[step]) << "step " << step;
    schedule.step();
  }
  schedule.set_step(4);  // resuming: the rate of step 4 again
  EXPECT_NEAR(opt.lr(), want[4], 1e-6 * want[4]);
  expect_error([&] { optim::WarmupCosineLR(opt, 5, 4); }, "total_steps (4) must be >= warmup_steps (5)");
}

// ---- AdamW with parameter groups, stepped through TinyJit

TEST(TrainingReference, AdamWParameterGroupsUnderTinyJit) {
  std::vector<double> hp = kt::read(get("adamw.params")), lrs = kt::read(get("adamw.lrs"));
  const std::vector<std::string> names{"w", "b", "e"};
  std::map<std::string, Tensor> ps;
  for (const auto& k : names) ps.emplace(k, own_copy(get("adamw.p0." + k), dtypes::float64));
  optim::AdamW opt({{{ps.at("w"), ps.at("e")}, hp[3]}, {{ps.at("b")}, 0.0}}, lrs[0], hp[0], hp[1], hp[2]);
  EXPECT_EQ(opt.weight_decays, (std::vector<double>{hp[3], hp[3], 0.0}));
  auto step = kiln::TinyJit([&](const std::vector<Tensor>& grads) {
    for (size_t i = 0; i < names.size(); i++) ps.at(names[i]).set_grad(grads[i]);
    opt.step();
  });
  for (size_t s = 1; s <= lrs.size(); s++) {  // calls 3 and 4 are replays, with a new rate each
    opt.set_lr(lrs[s - 1]);
    std::vector<Tensor> grads;
    for (const auto& k : names)
      grads.push_back(own_copy(get("adamw.g" + std::to_string(s) + "." + k), dtypes::float64));
    step(grads);
    for (const auto& k : names)
      EXPECT_TRUE(kt::matches(ps.at(k), host(get("adamw.p" + std::to_string(s) + "." + k)), kF64))
          << k << " after step " << s;
  }
}

TEST(TrainingReference, AdamWGroupsRejectConflictingDecays) {
  Tensor w = Tensor::zeros({2}).contiguous().realize();
  expect_error([&] { optim::AdamW({{{w}, 0.1}, {{w}, 0.0}}); },
               "is in two groups with different weight decays (0.1 and 0)");
  optim::AdamW same({{{w}, 0.1}, {{w}, 0.1}});  // listed twice with one decay: kept once
  EXPECT_EQ(same.params.size(), 1u);
}

// ---- the GPT of examples/gpt

struct TinyGpt {
  TinyGpt()
      : model(config()), idx(get("gpt.idx").cast(dtypes::int32).realize()),
        targets(get("gpt.targets").cast(dtypes::int32).realize()) {
    kiln::nn::StateDict weights;
    for (const auto& [key, t] : file())
      if (key.starts_with("gpt.model.")) weights.emplace(key.substr(10), own_copy(t, dtypes::float32));
    kiln::nn::load_state_dict(model, weights);
  }
  static gpt::Config config() {
    std::vector<double> c = kt::read(get("gpt.config"));
    return {static_cast<int64_t>(c[0]), static_cast<int64_t>(c[1]), static_cast<int64_t>(c[2]),
            static_cast<int64_t>(c[3]), static_cast<int64_t>(c[4]), 0.0};
  }
  void expect_gradients(const std::string& what) {
    for (const auto& [name, t] : kiln::nn::get_state_dict(model)) {
      ASSERT_TRUE(t.grad().has_value()) << name;
      EXPECT_TRUE(kt::matches(*t.grad(), host(get("gpt.grad." + name)), kt::Tol{1e-3, 1e-5})) << what << ": " << name;
    }
  }
  gpt::GPT model;
  Tensor idx, targets;
};

TEST(TrainingReference, GptLossAndGradients) {
  TinyGpt g;
  Tensor loss = g.model.loss(g.idx, g.targets);
  loss.backward();
  const double want = kt::read(get("gpt.loss"))[0];
  EXPECT_NEAR(loss.item<float>(), want, 1e-5 * want);
  g.expect_gradients("one batch");
}

// Two micro-batches of one sequence, each loss halved: the gradients accumulate in .grad (realized
// between the two, as the example does) to the whole batch's.
TEST(TrainingReference, GptGradientAccumulation) {
  TinyGpt g;
  const int64_t T = g.idx.shape()[1];
  for (int64_t b = 0; b < 2; b++) {
    Tensor x = g.idx.shrink({{b, b + 1}, {0, T}}), y = g.targets.shrink({{b, b + 1}, {0, T}});
    (g.model.loss(x, y) / 2.0).backward();
    std::vector<Tensor> grads;
    for (const auto& [name, t] : kiln::nn::get_state_dict(g.model)) grads.push_back(*t.grad());
    Tensor::realize(grads);
  }
  g.expect_gradients("two micro-batches");
}

}  // namespace

int main(int argc, char** argv) {
  const char* path = std::getenv("KILN_TRAINING_REFERENCE");
  if (!path || !std::filesystem::exists(path)) {
    std::cout << "skipping: set KILN_TRAINING_REFERENCE to the file make_training_reference.py writes\n";
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
