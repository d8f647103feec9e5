// TinyJit: replays give what calling the function gives (compared with the same function run
// without the JIT), do no scheduling or codegen (engine counters), keep state updates, reject
// arguments unlike the captured ones, and never let a capture read data.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/kernel_cache.h"
#include "error_message.h"
#include "kiln/kiln.h"
#include "../examples/mnist/model.h"

namespace {

using kiln::Tensor;
using kiln::TinyJit;
namespace dtypes = kiln::dtypes;

Tensor data(int64_t n, float offset) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++) v[i] = std::sin(0.37f * static_cast<float>(i) + offset);
  return Tensor::from_vector<float>(v, {n});
}

struct EngineWork {
  int64_t schedules, kernels;
  static EngineWork now() {
    return {kiln::engine::engine_stats().schedules.load(), kiln::engine::engine_stats().kernels_generated.load()};
  }
};

TEST(Jit, ReplaysMatchTheFunctionAndScheduleNothing) {
  auto f = [](const Tensor& x, const Tensor& y) { return ((x * 2.0f + y).relu() * y).sum(); };
  TinyJit jit(f);
  for (int call = 0; call < 6; call++) {
    Tensor x = data(1000, static_cast<float>(call)), y = data(1000, 10.0f + call);
    float want = f(x, y).item<float>();
    EngineWork before = EngineWork::now();
    float got = jit(x, y).item<float>();
    EngineWork after = EngineWork::now();
    EXPECT_EQ(got, want) << "call " << call;
    if (call >= 2) {  // replays: no scheduling, no codegen
      EXPECT_EQ(after.schedules, before.schedules) << "call " << call;
      EXPECT_EQ(after.kernels, before.kernels) << "call " << call;
    }
  }
  EXPECT_GE(jit.captured_kernels(), 1u);
}

TEST(Jit, ResultsAreFreshEachCall) {
  TinyJit jit([](const Tensor& x) { return x * 3.0f; });
  std::vector<Tensor> results;
  for (int call = 0; call < 5; call++) results.push_back(jit(data(16, static_cast<float>(call))));
  for (int call = 0; call < 5; call++) {
    std::vector<float> want = (data(16, static_cast<float>(call)) * 3.0f).to_vector<float>();
    EXPECT_EQ(results[call].to_vector<float>(), want) << "call " << call;
  }
}

TEST(Jit, SeveralResultsAndVectorArguments) {
  TinyJit jit([](const std::vector<Tensor>& xs) {
    return std::make_pair(xs[0] + xs[1], (xs[0] * xs[1]).sum());
  });
  for (int call = 0; call < 4; call++) {
    Tensor a = data(8, static_cast<float>(call)), b = data(8, 5.0f - call);
    auto [sum, dot] = jit(std::vector<Tensor>{a, b});
    EXPECT_EQ(sum.to_vector<float>(), (a + b).to_vector<float>());
    EXPECT_EQ(dot.item<float>(), (a * b).sum().item<float>());
  }
}

TEST(Jit, StateUpdatedWithAssignPersists) {
  // a running total kept in a tensor, updated in place by every call
  Tensor total = Tensor::zeros({4}).contiguous().realize();
  TinyJit jit([&](const Tensor& x) { total.assign(total + x).realize(); });
  std::vector<float> want(4, 0.0f);
  for (int call = 0; call < 6; call++) {
    Tensor x = Tensor::from_vector<float>({1.0f * call, 2.0f, -1.0f, 0.5f * call}, {4});
    jit(x);
    std::vector<float> xv = x.to_vector<float>();
    for (int i = 0; i < 4; i++) want[i] += xv[i];
    EXPECT_EQ(total.to_vector<float>(), want) << "call " << call;
  }
  // state changed outside the function is what the next replay reads
  total.assign(Tensor::full({4}, 100.0f));
  jit(Tensor::ones({4}).contiguous());
  EXPECT_EQ(total.to_vector<float>(), std::vector<float>(4, 101.0f));
}

TEST(Jit, TrainingStepGivesTheSameLossesAsWithoutIt) {
  auto run = [](bool jitted) {
    Tensor::manual_seed(3);
    kiln::nn::Linear l1(12, 16), l2(16, 3);
    std::vector<Tensor> params{l1.weight, *l1.bias, l2.weight, *l2.bias};
    kiln::nn::optim::Adam opt(params, 0.01);
    auto step = [&](const Tensor& x, const Tensor& labels) {
      Tensor::training = true;
      opt.zero_grad();
      Tensor loss = l2(l1(x).relu()).sparse_categorical_crossentropy(labels);
      loss.backward();
      opt.step();
      Tensor::training = false;
      return loss.realize();
    };
    TinyJit jit(step);
    std::vector<float> losses;
    for (int i = 0; i < 12; i++) {
      // a new batch each step, labelled by a rule the model can learn: how many of x0, x1 are positive
      Tensor::manual_seed(100 + i);
      Tensor x = Tensor::randn({10, 12}).realize();
      std::vector<float> xv = x.to_vector<float>();
      std::vector<int32_t> y(10);
      for (int k = 0; k < 10; k++) y[k] = (xv[k * 12] > 0) + (xv[k * 12 + 1] > 0);
      Tensor labels = Tensor::from_vector<int32_t>(y, {10});
      losses.push_back((jitted ? jit(x, labels) : step(x, labels)).item<float>());
    }
    return losses;
  };
  std::vector<float> plain = run(false), jitted = run(true);
  ASSERT_EQ(plain.size(), jitted.size());
  for (size_t i = 0; i < plain.size(); i++) EXPECT_NEAR(jitted[i], plain[i], 1e-6f * std::abs(plain[i])) << "step " << i;
  EXPECT_LT(plain.back(), plain.front());  // it trains
}

// The main job's step: the MNIST CNN (convolutions, BatchNorm running statistics, Adam) with
// dropout-free training mode, jitted and not, from the same initial weights.
TEST(Jit, MnistTrainingStepReplaysWithoutSchedulingAndMatches) {
  constexpr int64_t kBatch = 8;
  auto run = [](bool jitted, std::vector<EngineWork>* replay_work) {
    Tensor::manual_seed(9);
    mnist::BeautifulMnist model;
    kiln::nn::optim::Adam opt(kiln::nn::get_parameters(model), 1e-3);
    std::vector<Tensor> state;
    for (auto& [name, t] : kiln::nn::get_state_dict(model)) state.push_back(t);
    auto step = [&](const Tensor& x, const Tensor& y) {
      opt.zero_grad();
      Tensor loss = model(x).sparse_categorical_crossentropy(y);
      loss.backward();
      std::vector<Tensor> work = opt.schedule_step();
      work.insert(work.end(), state.begin(), state.end());
      work.push_back(loss);
      Tensor::realize(work);
      return loss;
    };
    TinyJit jit(step);
    Tensor::training = true;
    std::vector<float> losses;
    for (int i = 0; i < 5; i++) {
      Tensor::manual_seed(200 + i);
      Tensor x = Tensor::randn({kBatch, 1, 28, 28}).realize();
      Tensor y = Tensor::randint({kBatch}, 0, 10).realize();
      EngineWork before = EngineWork::now();
      losses.push_back((jitted ? jit(x, y) : step(x, y)).item<float>());
      if (jitted && i >= 2) replay_work->push_back({EngineWork::now().schedules - before.schedules,
                                                    EngineWork::now().kernels - before.kernels});
    }
    Tensor::training = false;
    return losses;
  };
  std::vector<EngineWork> replay_work;
  std::vector<float> plain = run(false, nullptr), jitted = run(true, &replay_work);
  for (size_t i = 0; i < plain.size(); i++) EXPECT_NEAR(jitted[i], plain[i], 1e-5f * std::abs(plain[i])) << "step " << i;
  ASSERT_EQ(replay_work.size(), 3u);
  for (const EngineWork& w : replay_work) {
    EXPECT_EQ(w.schedules, 0);  // item() of the returned loss reads a realized buffer: nothing to schedule
    EXPECT_EQ(w.kernels, 0);
  }
}

TEST(Jit, RandomNumbersAdvanceBetweenReplays) {
  Tensor::manual_seed(42);
  TinyJit jit([](const Tensor& x) { return x + Tensor::rand({256}); });
  Tensor zeros = Tensor::zeros({256}).contiguous().realize();
  std::vector<std::vector<float>> draws;
  for (int call = 0; call < 5; call++) draws.push_back(jit(zeros).to_vector<float>());
  for (int a = 0; a < 5; a++)
    for (int b = a + 1; b < 5; b++) EXPECT_NE(draws[a], draws[b]) << "calls " << a << " and " << b;
  // the same numbers as five draws without the JIT
  Tensor::manual_seed(42);
  for (int call = 0; call < 5; call++) EXPECT_EQ(Tensor::rand({256}).to_vector<float>(), draws[call]) << "call " << call;
}

TEST(Jit, KernelsThatDependOnNoInputRunOnce) {
  TinyJit jit([](const Tensor& x) { return x + (Tensor::ones({64}) * 3.0f).contiguous(); });
  for (int call = 0; call < 4; call++) {
    Tensor x = data(64, static_cast<float>(call));
    EXPECT_EQ(jit(x).to_vector<float>(), (x + 3.0f).to_vector<float>());
  }
  EXPECT_EQ(jit.captured_kernels(), 1u);  // the add; the constant's kernel ran at capture only
}

TEST(Jit, ArgumentsUnlikeTheCapturedOnesAreErrors) {
  TinyJit jit([](const Tensor& x) { return x * 2.0f; });
  for (int call = 0; call < 3; call++) jit(data(8, 0));
  std::string wrong_shape = kt::error_of([&] { jit(data(9, 0)); });
  for (const char* part : {"argument 0", "(9,)", "(8,)"}) EXPECT_NE(wrong_shape.find(part), std::string::npos) << wrong_shape;
  std::string wrong_dtype = kt::error_of([&] { jit(Tensor::ones({8}, dtypes::float64)); });
  EXPECT_NE(wrong_dtype.find("float64"), std::string::npos) << wrong_dtype;
  EXPECT_EQ(jit(data(8, 1)).to_vector<float>(), (data(8, 1) * 2.0f).to_vector<float>());  // still usable
}

TEST(Jit, ReadingDataWhileCapturingIsAnError) {
  TinyJit jit([](const Tensor& x) {
    float first = x.to_vector<float>()[0];
    return x * first;
  });
  jit(data(4, 0));  // the first call runs normally
  std::string msg = kt::error_of([&] { jit(data(4, 0)); });
  EXPECT_NE(msg.find("inside a captured call"), std::string::npos) << msg;
  // reading data outside works again after the failed capture
  EXPECT_EQ(data(4, 0).to_vector<float>().size(), 4u);
}

TEST(Jit, LazyArgumentsAreRealizedFirst) {
  TinyJit jit([](const Tensor& x) { return x.sum(); });
  for (int call = 0; call < 4; call++) {
    Tensor lazy = data(32, static_cast<float>(call)) * 2.0f;  // not realized
    EXPECT_FLOAT_EQ(jit(lazy).item<float>(), (data(32, static_cast<float>(call)) * 2.0f).sum().item<float>());
  }
}

}  // namespace
