// kiln against PyTorch: conv, transposed conv, pooling, norms, losses, the BatchNorm layer's
// training and eval modes, and SGD/Adam steps, compared with values and gradients that
// tests/python/make_torch_reference.py computed with torch in float64 (see its docstring for the
// file's layout). The file's path comes from KILN_TORCH_REFERENCE; without it (or without the
// file) the binary exits 77, which ctest reports as skipped.
//
// Tolerance: rtol 1e-9, atol 1e-11 everywhere — both sides compute in float64, in different
// orders. The optimizer hyperparameters are dyadic (0.125, 0.875, ...) so kiln's float32
// learning-rate and beta-power buffers hold them exactly.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kiln/dtype.h"
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
using Inputs = std::map<std::string, Tensor>;
using Params = std::vector<double>;

constexpr kt::Tol kTol{1e-9, 1e-11};

kiln::nn::state::StateDict& file() { return kiln_test::reference_file("KILN_TORCH_REFERENCE"); }
const Tensor& get(const std::string& key) { return kiln_test::reference_tensor("KILN_TORCH_REFERENCE", key); }

NdArray host(const Tensor& t) { return NdArray(t.shape(), kt::read(t)); }

// The case names of `op` in the file ("<op>.<case>.<tensor>").
std::set<std::string> cases_of(const std::string& op) {
  std::set<std::string> out;
  for (const auto& [key, t] : file())
    if (key.rfind(op + ".", 0) == 0) out.insert(key.substr(op.size() + 1, key.find('.', op.size() + 1) - op.size() - 1));
  return out;
}

// Runs fn on the case's inputs and compares its output and the gradients of sum(out * r) with
// torch's, for every input torch has a gradient of.
void check_op(const std::string& op, const std::vector<std::string>& input_names,
              const std::function<Tensor(const Inputs&, const Params&)>& fn) {
  std::set<std::string> cases = cases_of(op);
  ASSERT_FALSE(cases.empty()) << "no " << op << " cases in the reference file";
  for (const std::string& c : cases) {
    SCOPED_TRACE(op + "." + c);
    const std::string prefix = op + "." + c + ".";
    Inputs in;
    std::vector<std::string> differentiable;
    for (const std::string& name : input_names) {
      if (!file().count(prefix + name)) continue;  // optional (a bias)
      in.emplace(name, get(prefix + name));
      if (file().count(prefix + "grad." + name)) differentiable.push_back(name);
    }
    Params params = kt::read(get(prefix + "params"));
    Tensor out = fn(in, params);
    // the gradient graph first: realizing `out` replaces its graph by the result
    std::vector<Tensor> targets;
    for (const std::string& name : differentiable) targets.push_back(in.at(name));
    std::vector<Tensor> grads = (out * get(prefix + "r")).sum().gradient(targets);
    EXPECT_TRUE(kt::matches(out, host(get(prefix + "out")), kTol)) << "forward";
    for (size_t i = 0; i < targets.size(); i++)
      EXPECT_TRUE(kt::matches(grads[i], host(get(prefix + "grad." + differentiable[i])), kTol))
          << "gradient of " << differentiable[i];
  }
}

std::optional<Tensor> optional_input(const Inputs& in, const std::string& name) {
  auto it = in.find(name);
  return it == in.end() ? std::nullopt : std::optional<Tensor>(it->second);
}

int as_int(double v) { return static_cast<int>(v); }

TEST(TorchReference, Conv2d) {
  check_op("conv2d", {"x", "w", "b"}, [](const Inputs& in, const Params& p) {
    return in.at("x").conv2d(in.at("w"), optional_input(in, "b"), as_int(p[0]), as_int(p[1]), as_int(p[2]), as_int(p[3]));
  });
}

TEST(TorchReference, ConvTranspose2d) {
  check_op("conv_transpose2d", {"x", "w", "b"}, [](const Inputs& in, const Params& p) {
    return in.at("x").conv_transpose2d(in.at("w"), optional_input(in, "b"), as_int(p[0]), as_int(p[1]), as_int(p[3]),
                                       as_int(p[4]), as_int(p[2]));
  });
}

TEST(TorchReference, MaxPool2d) {
  check_op("max_pool2d", {"x"}, [](const Inputs& in, const Params& p) {
    return in.at("x").max_pool2d(as_int(p[0]), as_int(p[1]), as_int(p[2]), as_int(p[3]), p[4] != 0);
  });
}

TEST(TorchReference, AvgPool2d) {
  check_op("avg_pool2d", {"x"}, [](const Inputs& in, const Params& p) {
    return in.at("x").avg_pool2d(as_int(p[0]), as_int(p[1]), as_int(p[2]), 1, p[3] != 0, p[4] != 0);
  });
}

TEST(TorchReference, BatchNormFunctionalTraining) {
  check_op("batch_norm", {"x", "w", "b"}, [](const Inputs& in, const Params& p) {
    const Tensor& x = in.at("x");
    Tensor mean = x.mean({0, 2, 3}), var = x.var({0, 2, 3}, false, 0);
    return x.batchnorm(in.at("w"), in.at("b"), mean, (var + p[0]).rsqrt());
  });
}

TEST(TorchReference, LayerNorm) {
  check_op("layer_norm", {"x", "w", "b"}, [](const Inputs& in, const Params& p) {
    kiln::nn::LayerNorm ln(in.at("w").shape(), p[0]);
    ln.weight = in.at("w");
    ln.bias = in.at("b");
    return ln(in.at("x"));
  });
}

TEST(TorchReference, GroupNorm) {
  check_op("group_norm", {"x", "w", "b"}, [](const Inputs& in, const Params& p) {
    kiln::nn::GroupNorm gn(static_cast<int64_t>(p[0]), in.at("x").shape()[1], p[1]);
    gn.weight = in.at("w");
    gn.bias = in.at("b");
    return gn(in.at("x"));
  });
}

TEST(TorchReference, Losses) {
  check_op("sparse_categorical_crossentropy", {"x", "target"}, [](const Inputs& in, const Params& p) {
    return in.at("x").sparse_categorical_crossentropy(in.at("target").cast(dtypes::int32), static_cast<int64_t>(p[0]), p[1]);
  });
  check_op("cross_entropy", {"x", "target"}, [](const Inputs& in, const Params& p) {
    Tensor t = p[1] != 0 ? in.at("target").cast(dtypes::int32) : in.at("target");
    return in.at("x").cross_entropy(t, p[0]);
  });
  check_op("nll_loss", {"x", "target"}, [](const Inputs& in, const Params& p) {
    return in.at("x").nll_loss(in.at("target").cast(dtypes::int32), static_cast<int64_t>(p[0]));
  });
  check_op("binary_crossentropy", {"x", "target"},
           [](const Inputs& in, const Params&) { return in.at("x").binary_crossentropy(in.at("target")); });
  check_op("binary_crossentropy_logits", {"x", "target"},
           [](const Inputs& in, const Params&) { return in.at("x").binary_crossentropy_logits(in.at("target")); });
}

// Sets Tensor::training for one scope.
struct TrainingScope {
  bool saved = Tensor::training;
  explicit TrainingScope(bool on) { Tensor::training = on; }
  ~TrainingScope() { Tensor::training = saved; }
};

TEST(TorchReference, BatchNormLayerTrainingStepsThenEval) {
  const std::string p = "batchnorm_layer.steps.";
  kiln::nn::BatchNorm bn(3, 1e-5, 0.1);
  // float64 state throughout, so the comparison is exact to float64 rounding
  bn.weight = get(p + "weight");
  bn.bias = get(p + "bias");
  bn.running_mean = Tensor::zeros({3}, dtypes::float64).contiguous().realize();
  bn.running_var = Tensor::ones({3}, dtypes::float64).contiguous().realize();
  {
    TrainingScope training(true);
    for (int step : {1, 2})
      EXPECT_TRUE(kt::matches(bn(get(p + "x" + std::to_string(step))), host(get(p + "out" + std::to_string(step))), kTol))
          << "training step " << step;
  }
  EXPECT_TRUE(kt::matches(bn.running_mean, host(get(p + "running_mean")), kTol));
  EXPECT_TRUE(kt::matches(bn.running_var, host(get(p + "running_var")), kTol));
  EXPECT_EQ(kt::read(bn.num_batches_tracked)[0], 2);
  TrainingScope eval(false);
  EXPECT_TRUE(kt::matches(bn(get(p + "x3")), host(get(p + "out3")), kTol)) << "eval mode";
}

template <class Opt, class Make>
void check_optimizer_steps(const std::string& name, Make make) {
  const std::string p = name + ".steps.";
  Params hp = kt::read(get(p + "params"));
  Tensor param = (get(p + "p0") + 0.0).contiguous().realize();  // its own buffer
  Opt opt = make(std::vector<Tensor>{param}, hp);
  for (int step : {1, 2, 3}) {
    const std::string s = std::to_string(step);
    param.set_grad(get(p + "g" + s));
    opt.step();
    EXPECT_TRUE(kt::matches(param, host(get(p + "p" + s)), kTol)) << name << " step " << step;
  }
}

TEST(TorchReference, SgdNesterovMomentumWeightDecay) {
  check_optimizer_steps<kiln::nn::optim::SGD>("sgd", [](std::vector<Tensor> ps, const Params& hp) {
    return kiln::nn::optim::SGD(std::move(ps), hp[0], hp[1], hp[2], hp[3] != 0);
  });
}

TEST(TorchReference, Adam) {
  check_optimizer_steps<kiln::nn::optim::Adam>("adam", [](std::vector<Tensor> ps, const Params& hp) {
    return kiln::nn::optim::Adam(std::move(ps), hp[0], hp[1], hp[2], hp[3]);
  });
}

}  // namespace

int main(int argc, char** argv) {
  const char* path = std::getenv("KILN_TORCH_REFERENCE");
  if (!path || !std::filesystem::exists(path)) {
    std::cout << "skipping: set KILN_TORCH_REFERENCE to the file make_torch_reference.py writes\n";
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
