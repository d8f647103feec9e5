// Network ops, part 2: activations, statistics and normalization (var, std, batchnorm, layernorm
// and the norm layers), the LSTM cell, losses (sparse categorical / cross entropy, nll, binary) and scaled
// dot-product attention, each against naive float64 loops written here: forward values (rtol 1e-10
// unless stated) and finite-difference gradients (gradcheck.h).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include "gradcheck.h"
#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/nn/layers.h"
#include "kiln/tensor.h"
#include "reference.h"

namespace {

using kiln::Tensor;
using ref::Index;
using ref::NdArray;
using ref::Shape;
using Ts = std::vector<Tensor>;
namespace dtypes = kiln::dtypes;

using kt::kF64;

using kt::f64;
using kt::i32;

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double softplus(double x, double beta = 1) { return std::log1p(std::exp(beta * x)) / beta; }
double relu6(double x) { return std::min(std::max(x, 0.0), 6.0); }

// Random values in [lo, hi) at least 0.05 away from each kink (where finite differences break).
NdArray away_from(const Shape& s, uint64_t seed, double lo, double hi, std::vector<double> kinks) {
  return ref::map(ref::random(s, seed, lo, hi), [&](double v) {
    for (double k : kinks)
      if (std::fabs(v - k) < 0.05) v = k + (v < k ? -0.05 : 0.05);
    return v;
  });
}

// ============================================================================ activations

struct Activation {
  std::string name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> want;
  std::vector<double> kinks;
  double atol = 1e-12;
};
void PrintTo(const Activation& a, std::ostream* os) { *os << a.name; }

const std::vector<Activation>& activations() {
  static const std::vector<Activation> all = {
      {"gelu", [](const Tensor& x) { return x.gelu(); },
       [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x))); }, {}},
      {"quick_gelu", [](const Tensor& x) { return x.quick_gelu(); }, [](double x) { return x * sigmoid(1.702 * x); }, {}},
      {"silu", [](const Tensor& x) { return x.silu(); }, [](double x) { return x * sigmoid(x); }, {}},
      {"relu", [](const Tensor& x) { return x.relu(); }, [](double x) { return std::max(x, 0.0); }, {0}},
      {"relu6", [](const Tensor& x) { return x.relu6(); }, relu6, {0, 6}},
      {"hardswish", [](const Tensor& x) { return x.hardswish(); }, [](double x) { return x * relu6(x + 3) / 6; }, {-3, 3}},
      {"hardtanh", [](const Tensor& x) { return x.hardtanh(-2, 3); },
       [](double x) { return std::min(std::max(x, -2.0), 3.0); }, {-2, 3}},
      {"mish", [](const Tensor& x) { return x.mish(); }, [](double x) { return x * std::tanh(softplus(x)); }, {}},
      {"softplus", [](const Tensor& x) { return x.softplus(); }, [](double x) { return softplus(x); }, {}},
      {"softplus_beta2", [](const Tensor& x) { return x.softplus(2); }, [](double x) { return softplus(x, 2); }, {}},
      {"elu", [](const Tensor& x) { return x.elu(); }, [](double x) { return x > 0 ? x : std::expm1(x); }, {0}},
      {"elu_alpha", [](const Tensor& x) { return x.elu(0.5); }, [](double x) { return x > 0 ? x : 0.5 * std::expm1(x); }, {0}},
      {"leaky_relu", [](const Tensor& x) { return x.leaky_relu(); }, [](double x) { return x < 0 ? 0.01 * x : x; }, {0}},
      {"leaky_relu_slope", [](const Tensor& x) { return x.leaky_relu(0.2); }, [](double x) { return x < 0 ? 0.2 * x : x; }, {0}},
      // Abramowitz-Stegun 7.1.26: absolute error below 1.5e-7
      {"erf", [](const Tensor& x) { return x.erf(); }, [](double x) { return std::erf(x); }, {0}, 2e-7},
      {"sigmoid", [](const Tensor& x) { return x.sigmoid(); }, sigmoid, {}},
  };
  return all;
}

class ActivationTest : public ::testing::TestWithParam<Activation> {};

TEST_P(ActivationTest, ForwardAndGradient) {
  const Activation& a = GetParam();
  NdArray x = away_from({4, 7}, 1, -7.5, 7.5, a.kinks);
  EXPECT_TRUE(kt::matches(a.op(f64(x)), ref::map(x, a.want), kt::Tol{1e-10, a.atol}));
  EXPECT_TRUE(kt::matches(a.op(kt::make(x)), ref::map(x, a.want), kt::Tol{1e-4, std::max(a.atol, 1e-5)}));  // float32
  auto op = a.op;
  EXPECT_TRUE(gc::check([op](const Ts& v) { return op(v[0]); }, {away_from({3, 5}, 2, -4, 7.5, a.kinks)}));
}

INSTANTIATE_TEST_SUITE_P(Activations, ActivationTest, ::testing::ValuesIn(activations()),
                         [](const auto& i) { return i.param.name; });

TEST(Activations, LargeInputsStayFinite) {
  NdArray x({4}, {-800, -100, 100, 800});
  EXPECT_TRUE(kt::matches(f64(x).softplus(), NdArray({4}, {0, softplus(-100), 100, 800}), kF64));
  EXPECT_TRUE(kt::matches(f64(x).silu(), NdArray({4}, {0, -100 * sigmoid(-100), 100, 800}), kF64));
}

// ============================================================================ statistics and norms

// Sum of squared deviations over `axes` / (n - correction).
NdArray var_ref(const NdArray& x, const std::vector<int>& axes, bool keepdim, double correction) {
  NdArray mean = ref::expand(ref::mean(x, axes, true), x.shape);
  NdArray sq = ref::zip(x, mean, [](double a, double m) { return (a - m) * (a - m); });
  NdArray s = ref::sum(sq, axes, keepdim);
  double n = static_cast<double>(x.size() / s.size());
  return ref::map(s, [&](double v) { return v / (n - correction); });
}

TEST(Statistics, VarAndStd) {
  struct C {
    Shape shape;
    std::vector<int> axes;
    bool keepdim;
    double correction;
  };
  for (const C& c : std::vector<C>{{{3, 5}, {}, false, 1}, {{3, 5}, {1}, true, 0}, {{2, 3, 5}, {0, 2}, false, 1},
                                   {{2, 3, 5}, {-1}, false, 2}, {{7, 1}, {0}, true, 1}}) {
    SCOPED_TRACE(ref::shape_str(c.shape) + " correction " + std::to_string(c.correction));
    NdArray x = ref::random(c.shape, 3);
    NdArray v = var_ref(x, c.axes, c.keepdim, c.correction);
    EXPECT_TRUE(kt::matches(f64(x).var(c.axes, c.keepdim, c.correction), v, kF64));
    EXPECT_TRUE(kt::matches(f64(x).std(c.axes, c.keepdim, c.correction), ref::map(v, [](double a) { return std::sqrt(a); }), kF64));
    EXPECT_TRUE(gc::check([c](const Ts& t) { return t[0].var(c.axes, c.keepdim, c.correction); }, {x}));
    EXPECT_TRUE(gc::check([c](const Ts& t) { return t[0].std(c.axes, c.keepdim, c.correction); }, {x}));
  }
}

// y = (x - mean[c]) * weight[c] * invstd[c] + bias[c] along axis 1
TEST(Normalization, Batchnorm) {
  NdArray x = ref::random({2, 3, 2, 2}, 4), w = ref::random({3}, 5), b = ref::random({3}, 6),
          mean = ref::random({3}, 7), invstd = ref::random({3}, 8, 0.5, 2);
  NdArray want(x.shape);
  for (int64_t f = 0; f < x.size(); f++) {
    int64_t c = ref::unravel(f, x.shape)[1];
    want.data[f] = (x.data[f] - mean.data[c]) * w.data[c] * invstd.data[c] + b.data[c];
  }
  EXPECT_TRUE(kt::matches(f64(x).batchnorm(f64(w), f64(b), f64(mean), f64(invstd)), want, kF64));
  EXPECT_TRUE(gc::check([](const Ts& v) { return v[0].batchnorm(v[1], v[2], v[3], v[4]); }, {x, w, b, mean, invstd}));
  EXPECT_TRUE(gc::check([](const Ts& v) { return v[0].batchnorm({}, {}, v[1], v[2]); }, {x, mean, invstd}));
}

// (x - mean) / sqrt(biased var + eps) over `axes` (the trailing ones)
NdArray layernorm_ref(const NdArray& x, const std::vector<int>& axes, double eps) {
  NdArray mean = ref::expand(ref::mean(x, axes, true), x.shape);
  NdArray var = ref::expand(var_ref(x, axes, true, 0), x.shape);
  return ref::zip3(x, mean, var, [eps](double a, double m, double v) { return (a - m) / std::sqrt(v + eps); });
}

TEST(Normalization, Layernorm) {
  NdArray x = ref::random({3, 2, 5}, 9);
  for (const std::vector<int>& axes : std::vector<std::vector<int>>{{-1}, {-2, -1}}) {
    EXPECT_TRUE(kt::matches(f64(x).layernorm(axes, 1e-5), layernorm_ref(x, axes, 1e-5), kF64));
    EXPECT_TRUE(gc::check([axes](const Ts& v) { return v[0].layernorm(axes, 1e-3); }, {x}));
  }
}

// The layers' float32 parameters are replaced by float64 ones, so the comparison is in float64.
TEST(Normalization, LayerGroupAndRmsNormLayers) {
  NdArray x = ref::random({2, 4, 3}, 10), w = ref::random({3}, 11), b = ref::random({3}, 12);
  kiln::nn::LayerNorm ln(3, 1e-5);
  ln.weight = f64(w);
  ln.bias = f64(b);
  NdArray want = ref::zip3(layernorm_ref(x, {-1}, 1e-5), w, b, [](double y, double g, double c) { return y * g + c; });
  EXPECT_TRUE(kt::matches(ln(f64(x)), want, kF64));

  // GroupNorm(2 groups of 2 channels): layernorm over (channels of the group, spatial), affine per channel
  kiln::nn::GroupNorm gn(2, 4, 1e-5);
  NdArray gw = ref::random({4}, 13), gb = ref::random({4}, 14);
  gn.weight = f64(gw);
  gn.bias = f64(gb);
  NdArray grouped = ref::reshape(layernorm_ref(ref::reshape(x, {2, 2, 6}), {-1}, 1e-5), {2, 4, 3});
  NdArray gwant(x.shape);
  for (int64_t f = 0; f < x.size(); f++) {
    int64_t c = ref::unravel(f, x.shape)[1];
    gwant.data[f] = grouped.data[f] * gw.data[c] + gb.data[c];
  }
  EXPECT_TRUE(kt::matches(gn(f64(x)), gwant, kF64));

  // RMSNorm: x / sqrt(mean(x^2) + eps) * weight
  kiln::nn::RMSNorm rms(3, 1e-6);
  rms.weight = f64(w);
  NdArray ms = ref::expand(ref::mean(ref::map(x, [](double v) { return v * v; }), {-1}, true), x.shape);
  NdArray rwant = ref::zip3(x, ms, ref::expand(w, x.shape), [](double a, double m, double g) { return a / std::sqrt(m + 1e-6) * g; });
  EXPECT_TRUE(kt::matches(rms(f64(x)), rwant, kF64));
}

// InstanceNorm: each sample's channel normalized over its spatial axes, affine per channel.
TEST(Normalization, InstanceNormLayer) {
  NdArray x = ref::random({2, 3, 2, 3}, 15), w = ref::random({3}, 16), b = ref::random({3}, 17);
  kiln::nn::InstanceNorm in(3, 1e-5);
  in.weight = f64(w);
  in.bias = f64(b);
  NdArray normalized = ref::reshape(layernorm_ref(ref::reshape(x, {2, 3, 6}), {-1}, 1e-5), x.shape);
  NdArray want(x.shape);
  for (int64_t f = 0; f < x.size(); f++) {
    int64_t c = ref::unravel(f, x.shape)[1];
    want.data[f] = normalized.data[f] * w.data[c] + b.data[c];
  }
  EXPECT_TRUE(kt::matches(in(f64(x)), want, kF64));
  EXPECT_TRUE(kiln::nn::get_state_dict(kiln::nn::InstanceNorm(3, 1e-5, false)).empty());  // no affine parameters
}

// LSTMCell: gates = x W_ih^T + b_ih + h W_hh^T + b_hh in (input, forget, cell, output) blocks;
// c' = sigmoid(f) c + sigmoid(i) tanh(g), h' = sigmoid(o) tanh(c').
TEST(Layers, LSTMCell) {
  const int64_t n = 2, in = 3, hid = 2;
  NdArray x = ref::random({n, in}, 18), h = ref::random({n, hid}, 19), c = ref::random({n, hid}, 20);
  NdArray wih = ref::random({4 * hid, in}, 21), whh = ref::random({4 * hid, hid}, 22);
  NdArray bih = ref::random({4 * hid}, 23), bhh = ref::random({4 * hid}, 24);
  kiln::nn::LSTMCell cell(in, hid);
  cell.weight_ih = f64(wih);
  cell.weight_hh = f64(whh);
  cell.bias_ih = f64(bih);
  cell.bias_hh = f64(bhh);
  NdArray want_h({n, hid}), want_c({n, hid});
  for (int64_t r = 0; r < n; r++) {
    auto gate = [&](int64_t g, int64_t j) {
      int64_t row = g * hid + j;
      double s = bih.data[row] + bhh.data[row];
      for (int64_t k = 0; k < in; k++) s += x.data[r * in + k] * wih.data[row * in + k];
      for (int64_t k = 0; k < hid; k++) s += h.data[r * hid + k] * whh.data[row * hid + k];
      return s;
    };
    for (int64_t j = 0; j < hid; j++) {
      double next_c = sigmoid(gate(1, j)) * c.data[r * hid + j] + sigmoid(gate(0, j)) * std::tanh(gate(2, j));
      want_c.data[r * hid + j] = next_c;
      want_h.data[r * hid + j] = sigmoid(gate(3, j)) * std::tanh(next_c);
    }
  }
  auto [got_h, got_c] = cell(f64(x), std::pair{f64(h), f64(c)});
  EXPECT_TRUE(kt::matches(got_h, want_h, kF64));
  EXPECT_TRUE(kt::matches(got_c, want_c, kF64));
  EXPECT_THROW(cell(f64(ref::random({n, in + 1}, 25))), kiln::Error);
  EXPECT_FALSE(kiln::nn::LSTMCell(in, hid, false).bias_ih.has_value());
}

// Training-mode BatchNorm: batch mean and biased variance over (N, H, W), gradients through them.
TEST(Normalization, BatchNormLayerTrainingGradient) {
  struct Training {
    bool saved = Tensor::training;
    Training() { Tensor::training = true; }
    ~Training() { Tensor::training = saved; }
  } training;
  NdArray x = ref::random({3, 2, 2, 1}, 15), w = ref::random({2}, 16), b = ref::random({2}, 17);
  auto layer = [](const Ts& v) {
    kiln::nn::BatchNorm bn(2, 1e-5, 0.1, true, /*track_running_stats=*/false);
    bn.weight = v[1];
    bn.bias = v[2];
    return bn(v[0]);
  };
  std::vector<int> axes{0, 2, 3};
  NdArray norm = ref::zip3(x, ref::expand(ref::mean(x, axes, true), x.shape),
                           ref::expand(var_ref(x, axes, true, 0), x.shape),
                           [](double a, double m, double v) { return (a - m) / std::sqrt(v + 1e-5); });
  NdArray want = ref::zip3(norm, ref::reshape(w, {1, 2, 1, 1}), ref::reshape(b, {1, 2, 1, 1}),
                           [](double y, double g, double c) { return y * g + c; });
  EXPECT_TRUE(kt::matches(layer({f64(x), f64(w), f64(b)}), want, kF64));
  EXPECT_TRUE(gc::check(layer, {x, w, b}));
}

// Without affine parameters only x has a gradient (the layer's custom backward is asked for x alone).
TEST(Normalization, BatchNormLayerTrainingGradientWithoutAffine) {
  bool saved = Tensor::training;
  Tensor::training = true;
  NdArray x = ref::random({4, 3, 2, 2}, 18);
  auto layer = [](const Ts& v) { return kiln::nn::BatchNorm(3, 1e-5, 0.1, /*affine=*/false, false)(v[0]); };
  EXPECT_TRUE(gc::check(layer, {x}));
  Tensor::training = saved;
}

// A float64 batch through float32 parameters: each gradient has the dtype of what it is for.
TEST(Normalization, BatchNormLayerGradientDtypes) {
  bool saved = Tensor::training;
  Tensor::training = true;
  kiln::nn::BatchNorm bn(2);
  Tensor x = f64(ref::random({4, 2, 3}, 34)).requires_grad_();
  (bn(x) * Tensor::arange(24).reshape({4, 2, 3})).sum().backward();
  Tensor::training = saved;
  EXPECT_EQ(x.grad()->dtype(), dtypes::float64);
  EXPECT_EQ(bn.weight.grad()->dtype(), dtypes::float32);
  EXPECT_EQ(bn.bias.grad()->dtype(), dtypes::float32);
  // d/d bias of sum(y * c) is the sum of c over each channel's positions: 0..23 in (4, 2, 3)
  std::vector<float> bias_grad = bn.bias.grad()->to_vector<float>();
  double want0 = 0, want1 = 0;
  for (int n = 0; n < 4; n++)
    for (int k = 0; k < 3; k++) want0 += n * 6 + k, want1 += n * 6 + 3 + k;
  EXPECT_NEAR(bias_grad[0], want0, 1e-4);
  EXPECT_NEAR(bias_grad[1], want1, 1e-4);
}

// A float64 batch through a layer with the default float32 state: the running statistics stay
// float32 and get the batch's mean and unbiased variance (momentum 0.1 from 0 and 1).
TEST(Normalization, BatchNormLayerFloat64InputUpdatesFloat32Stats) {
  bool saved = Tensor::training;
  Tensor::training = true;
  NdArray x = ref::random({4, 2, 3}, 33);
  kiln::nn::BatchNorm bn(2);
  Tensor y = bn(f64(x));
  Tensor::training = saved;
  EXPECT_EQ(y.dtype(), dtypes::float64);
  EXPECT_EQ(bn.running_mean.dtype(), dtypes::float32);
  NdArray mean = ref::mean(x, {0, 2}), var = var_ref(x, {0, 2}, false, 1);
  EXPECT_TRUE(kt::matches(bn.running_mean, ref::map(mean, [](double m) { return 0.1 * m; })));
  EXPECT_TRUE(kt::matches(bn.running_var, ref::map(var, [](double v) { return 0.9 + 0.1 * v; })));
}

// ============================================================================ losses

// log_softmax along axis 1 (classes) of (N, C, ...) or along 0 of (C,)
NdArray log_probs(const NdArray& x) { return ref::log_softmax(x, x.ndim() == 1 ? 0 : 1); }

TEST(Losses, SparseCategoricalCrossentropy) {
  struct C {
    Shape logits;
    std::vector<double> labels;
    int64_t ignore;
    double smoothing;
  };
  for (const C& c : std::vector<C>{{{5, 7}, {0, 6, 3, 3, 1}, -1, 0},
                                   {{5, 7}, {0, 6, 2, 3, 2}, 2, 0},
                                   {{5, 7}, {0, 6, 3, 3, 1}, -1, 0.1},
                                   {{5, 7}, {4, 6, 2, 3, 2}, 2, 0.25},
                                   {{2, 3, 4}, {0, 3, 1, 2, 2, 0}, -1, 0.1}}) {
    SCOPED_TRACE("ignore " + std::to_string(c.ignore) + " smoothing " + std::to_string(c.smoothing));
    NdArray x = ref::random(c.logits, 18, -2, 2);
    int64_t classes = c.logits.back();
    NdArray lp = ref::log_softmax(x, -1);
    double total = 0, count = 0;
    for (size_t i = 0; i < c.labels.size(); i++) {
      if (c.labels[i] == static_cast<double>(c.ignore)) continue;
      double mean_lp = 0;
      for (int64_t k = 0; k < classes; k++) mean_lp += lp.data[i * classes + k] / static_cast<double>(classes);
      total -= (1 - c.smoothing) * lp.data[i * classes + static_cast<int64_t>(c.labels[i])] + c.smoothing * mean_lp;
      count++;
    }
    Shape ls(c.logits.begin(), c.logits.end() - 1);
    Tensor labels = i32(NdArray(ls, c.labels));
    EXPECT_TRUE(kt::matches(f64(x).sparse_categorical_crossentropy(labels, c.ignore, c.smoothing), NdArray({}, total / count), kF64));
    EXPECT_TRUE(gc::check([=](const Ts& v) { return v[0].sparse_categorical_crossentropy(labels, c.ignore, c.smoothing); }, {x}));
  }
}

// torch.nn.functional.cross_entropy: classes on axis 1, mean over every other position; index
// targets become (1 - s) one_hot + s / C, probability targets (1 - s) p + s / C.
double cross_entropy_ref(const NdArray& x, const NdArray& target, bool indices, double s) {
  NdArray lp = log_probs(x);
  const int ax = x.ndim() == 1 ? 0 : 1;
  const int64_t classes = x.shape[ax];
  double total = 0;
  for (int64_t f = 0; f < x.size(); f++) {
    Index idx = ref::unravel(f, x.shape);
    double y;
    if (indices) {
      Index t = idx;
      t.erase(t.begin() + ax);
      y = (target.at(t) == static_cast<double>(idx[ax]) ? 1 - s : 0) + s / static_cast<double>(classes);
    } else {
      y = (1 - s) * target.data[f] + s / static_cast<double>(classes);
    }
    total -= y * lp.data[f];
  }
  return total / static_cast<double>(x.size() / classes);
}

TEST(Losses, CrossEntropyWithIndicesAndProbabilities) {
  struct C {
    Shape logits;
    bool indices;
    double smoothing;
  };
  for (const C& c : std::vector<C>{{{4, 5}, true, 0}, {{4, 5}, true, 0.2}, {{2, 3, 2, 2}, true, 0.1}, {{5}, true, 0},
                                   {{4, 5}, false, 0}, {{4, 5}, false, 0.3}, {{2, 3, 2}, false, 0}}) {
    SCOPED_TRACE(ref::shape_str(c.logits) + (c.indices ? " indices" : " probabilities"));
    NdArray x = ref::random(c.logits, 19, -2, 2);
    const int ax = x.ndim() == 1 ? 0 : 1;
    NdArray target;
    if (c.indices) {
      Shape ts = c.logits;
      ts.erase(ts.begin() + ax);
      target = ref::random_int(ts, 20, 0, c.logits[ax] - 1);
    } else {
      target = ref::softmax(ref::random(c.logits, 21, -2, 2), ax);
    }
    Tensor t = c.indices ? i32(target) : f64(target);
    EXPECT_TRUE(kt::matches(f64(x).cross_entropy(t, c.smoothing), NdArray({}, cross_entropy_ref(x, target, c.indices, c.smoothing)), kF64));
    EXPECT_TRUE(gc::check([=](const Ts& v) { return v[0].cross_entropy(t, c.smoothing); }, {x}));
  }
}

TEST(Losses, NllLoss) {
  struct C {
    Shape input;
    std::vector<double> target;
    int64_t ignore;
  };
  for (const C& c : std::vector<C>{{{4, 5}, {0, 4, 2, 2}, -100}, {{4, 5}, {0, 4, 2, 2}, 2}, {{5}, {3}, -100},
                                   {{2, 3, 2}, {0, 2, 1, 1}, -100}, {{4, 5}, {0, -100, 3, -100}, -100}}) {
    NdArray x = log_probs(ref::random(c.input, 22, -2, 2));
    Shape ts = c.input;
    ts.erase(ts.begin() + (c.input.size() == 1 ? 0 : 1));
    NdArray target(ts, c.target);
    double total = 0, weight = 0;
    for (int64_t f = 0; f < target.size(); f++) {
      if (target.data[f] == static_cast<double>(c.ignore)) continue;
      Index idx = ref::unravel(f, ts);
      idx.insert(idx.begin() + (c.input.size() == 1 ? 0 : 1), static_cast<int64_t>(target.data[f]));
      total -= x.at(idx);
      weight += 1;
    }
    Tensor t = i32(target);
    EXPECT_TRUE(kt::matches(f64(x).nll_loss(t, c.ignore), NdArray({}, total / weight), kF64)) << ref::shape_str(c.input);
    EXPECT_TRUE(gc::check([=](const Ts& v) { return v[0].nll_loss(t, c.ignore); }, {x}));
  }
}

// Class weights and the three reductions: per item -w[t] x[t] (0 when ignored); the mean divides by
// the weights that count, as PyTorch's.
TEST(Losses, NllLossWeightAndReductions) {
  NdArray x = log_probs(ref::random({2, 4, 3}, 26, -2, 2)), w({4}, {0.5, 2.0, 1.0, 0.25});
  NdArray target({2, 3}, {2, 0, 3, 1, 3, 3});
  const int64_t ignore = 3;
  NdArray per_item({2, 3});
  double total = 0, weight = 0;
  for (int64_t f = 0; f < target.size(); f++) {
    if (target.data[f] == static_cast<double>(ignore)) continue;
    Index idx = ref::unravel(f, target.shape);
    const auto cls = static_cast<int64_t>(target.data[f]);
    per_item.data[f] = -w.data[cls] * x.at({idx[0], cls, idx[1]});
    total += per_item.data[f];
    weight += w.data[cls];
  }
  using kiln::Reduction;
  Tensor t = i32(target), wt = f64(w);
  EXPECT_TRUE(kt::matches(f64(x).nll_loss(t, ignore, Reduction::none, wt), per_item, kF64));
  EXPECT_TRUE(kt::matches(f64(x).nll_loss(t, ignore, Reduction::sum, wt), NdArray({}, total), kF64));
  EXPECT_TRUE(kt::matches(f64(x).nll_loss(t, ignore, Reduction::mean, wt), NdArray({}, total / weight), kF64));
  EXPECT_TRUE(gc::check([=](const Ts& v) { return v[0].nll_loss(t, ignore, Reduction::mean, wt); }, {x}));
  EXPECT_THROW(f64(x).nll_loss(t, ignore, Reduction::mean, f64(NdArray({3}))), kiln::Error);  // a weight per class
}

TEST(Losses, BinaryCrossentropy) {
  NdArray p = ref::random({3, 4}, 23, 0.05, 0.95), y = ref::random({3, 4}, 24, 0, 1), z = ref::random({3, 4}, 25, -4, 4);
  double bce = 0, bce_logits = 0;
  for (int64_t i = 0; i < p.size(); i++) {
    bce -= y.data[i] * std::log(p.data[i]) + (1 - y.data[i]) * std::log(1 - p.data[i]);
    double s = sigmoid(z.data[i]);
    bce_logits -= y.data[i] * std::log(s) + (1 - y.data[i]) * std::log(1 - s);
  }
  Tensor yt = f64(y);
  EXPECT_TRUE(kt::matches(f64(p).binary_crossentropy(yt), NdArray({}, bce / 12), kF64));
  EXPECT_TRUE(kt::matches(f64(z).binary_crossentropy_logits(yt), NdArray({}, bce_logits / 12), kF64));
  EXPECT_TRUE(gc::check([yt](const Ts& v) { return v[0].binary_crossentropy(yt); }, {p}));
  EXPECT_TRUE(gc::check([yt](const Ts& v) { return v[0].binary_crossentropy_logits(yt); }, {z}));
  EXPECT_TRUE(gc::check([](const Ts& v) { return v[0].binary_crossentropy_logits(v[1]); }, {z, y}));  // wrt targets too
  // reductions, and pos_weight (per column) scaling the positive term: -(pw y log s + (1-y) log(1-s))
  NdArray pw({4}, {0.5, 3.0, 1.0, 2.0}), per_item({3, 4});
  double weighted = 0;
  for (int64_t i = 0; i < z.size(); i++) {
    double s = sigmoid(z.data[i]);
    per_item.data[i] = -(pw.data[i % 4] * y.data[i] * std::log(s) + (1 - y.data[i]) * std::log(1 - s));
    weighted += per_item.data[i];
  }
  using kiln::Reduction;
  EXPECT_TRUE(kt::matches(f64(z).binary_crossentropy_logits(yt, Reduction::none, f64(pw)), per_item, kF64));
  EXPECT_TRUE(kt::matches(f64(z).binary_crossentropy_logits(yt, Reduction::sum, f64(pw)), NdArray({}, weighted), kF64));
  EXPECT_TRUE(kt::matches(f64(p).binary_crossentropy(yt, Reduction::sum), NdArray({}, bce), kF64));
  // large logits stay finite
  NdArray big({2}, {-300, 300}), by({2}, {1, 0});
  EXPECT_TRUE(kt::matches(f64(big).binary_crossentropy_logits(f64(by)), NdArray({}, 300), kF64));
}

TEST(Losses, ErrorsAreClear) {
  Tensor logits = Tensor::zeros({4, 5});
  EXPECT_THROW(logits.sparse_categorical_crossentropy(Tensor::zeros({4}, dtypes::int32), -1, 1.5), kiln::Error);
  EXPECT_THROW(logits.sparse_categorical_crossentropy(Tensor::zeros({5}, dtypes::int32)), kiln::Error);
  EXPECT_THROW(logits.sparse_categorical_crossentropy(Tensor::zeros({4})), kiln::Error);  // float labels
  EXPECT_THROW(logits.cross_entropy(Tensor::zeros({3}, dtypes::int32)), kiln::Error);
  EXPECT_THROW(logits.nll_loss(Tensor::zeros({4, 5}, dtypes::int32)), kiln::Error);
}

// ============================================================================ attention

// softmax(q k^T / sqrt(d) + mask) v, with a bool mask giving -inf where false
NdArray attention_ref(const NdArray& q, const NdArray& k, const NdArray& v, const std::optional<NdArray>& mask,
                      bool bool_mask) {
  NdArray scores = ref::map(ref::matmul(q, ref::transpose(k, -2, -1)),
                            [&](double s) { return s / std::sqrt(static_cast<double>(q.shape.back())); });
  if (mask)
    scores = ref::zip(scores, *mask, [&](double s, double m) {
      return bool_mask ? (m != 0 ? s : -std::numeric_limits<double>::infinity()) : s + m;
    });
  return ref::matmul(ref::softmax(scores, -1), v);
}

TEST(Attention, ScaledDotProduct) {
  NdArray q = ref::random({2, 3, 4}, 26), k = ref::random({2, 5, 4}, 27), v = ref::random({2, 5, 3}, 28);
  EXPECT_TRUE(kt::matches(f64(q).scaled_dot_product_attention(f64(k), f64(v)), attention_ref(q, k, v, {}, false), kF64));
  EXPECT_TRUE(gc::check([](const Ts& t) { return t[0].scaled_dot_product_attention(t[1], t[2]); }, {q, k, v}));

  // a bool mask with at least one key per query, and an additive float mask
  NdArray bm({3, 5}, {1, 0, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 0});
  Tensor bmask = kt::make(bm, dtypes::bool_);
  EXPECT_TRUE(kt::matches(f64(q).scaled_dot_product_attention(f64(k), f64(v), bmask), attention_ref(q, k, v, bm, true), kF64));
  EXPECT_TRUE(gc::check([bmask](const Ts& t) { return t[0].scaled_dot_product_attention(t[1], t[2], bmask); }, {q, k, v}));
  NdArray fm = ref::random({3, 5}, 29, -1, 1);
  Tensor fmask = f64(fm);
  EXPECT_TRUE(kt::matches(f64(q).scaled_dot_product_attention(f64(k), f64(v), fmask), attention_ref(q, k, v, fm, false), kF64));
  EXPECT_TRUE(gc::check([fmask](const Ts& t) { return t[0].scaled_dot_product_attention(t[1], t[2], fmask); }, {q, k, v}));
}

TEST(Attention, Causal) {
  NdArray q = ref::random({2, 4, 3}, 30), k = ref::random({2, 4, 3}, 31), v = ref::random({2, 4, 2}, 32);
  NdArray causal({4, 4});
  for (int64_t i = 0; i < 4; i++)
    for (int64_t j = 0; j <= i; j++) causal.at({i, j}) = 1;
  EXPECT_TRUE(kt::matches(f64(q).scaled_dot_product_attention(f64(k), f64(v), {}, true), attention_ref(q, k, v, causal, true), kF64));
  EXPECT_TRUE(gc::check([](const Ts& t) { return t[0].scaled_dot_product_attention(t[1], t[2], {}, true); }, {q, k, v}));
  EXPECT_THROW(f64(q).scaled_dot_product_attention(f64(k), f64(v), kt::make(causal, dtypes::bool_), true), kiln::Error);
}

}  // namespace
