// shared/API.md's first C++ block, name by name, through <kiln/kiln.h> only: this file must compile
// against the contract as written, and each call is checked against a double-precision value.
#include <kiln/kiln.h>

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

using namespace kiln;

namespace {

// Every element of `t` (float32) against `f(i)` computed in double; tolerance 1e-4 relative.
template <class F>
void expect_values(const Tensor& t, F f) {
  std::vector<float> v = t.to_vector<float>();
  for (size_t i = 0; i < v.size(); i++) {
    double want = f(i);
    EXPECT_NEAR(v[i], want, 1e-4 * std::max(1.0, std::abs(want))) << "element " << i;
  }
}

}  // namespace

TEST(ApiContract, CreationAndProperties) {
  Tensor v(std::vector<float>{1, 2, 3});
  EXPECT_EQ(v.shape(), (Shape{3}));
  EXPECT_EQ(v.dtype(), dtypes::float32);
  EXPECT_EQ(v.device(), "CPU");
  EXPECT_EQ(v.numel(), 3);
  EXPECT_EQ(v.ndim(), 1);
  Tensor i = Tensor::from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(i.dtype(), dtypes::int32);
  EXPECT_EQ(i.to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
  expect_values(Tensor::zeros({2, 2}), [](size_t) { return 0.0; });
  expect_values(Tensor::ones({2, 2}), [](size_t) { return 1.0; });
  expect_values(Tensor::full({3}, 2.5), [](size_t) { return 2.5; });
  EXPECT_EQ(Tensor::empty({4}).numel(), 4);
  EXPECT_EQ(Tensor::arange(0, 5).to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3, 4}));
  expect_values(Tensor::arange(1, 2, 0.25, dtypes::float32), [](size_t k) { return 1 + 0.25 * k; });
  expect_values(Tensor::eye(3), [](size_t k) { return k % 4 == 0 ? 1.0 : 0.0; });
  Tensor::manual_seed(3);
  std::vector<float> r1 = Tensor::rand({5}).to_vector<float>();
  Tensor::manual_seed(3);
  EXPECT_EQ(Tensor::rand({5}).to_vector<float>(), r1);
  EXPECT_EQ(Tensor::randn({2, 3}).shape(), (Shape{2, 3}));
  EXPECT_FLOAT_EQ(Tensor::full({1}, 4).item<float>(), 4.0f);
}

TEST(ApiContract, Elementwise) {
  std::vector<float> x{0.5f, 1.5f, 2.0f, 3.25f};
  Tensor a(x), b(std::vector<float>{2, 3, 4, 5});
  auto xa = [&](size_t k) { return double(x[k]); };
  auto xb = [&](size_t k) { return double(2 + k); };
  expect_values(a + b, [&](size_t k) { return xa(k) + xb(k); });
  expect_values(a - b, [&](size_t k) { return xa(k) - xb(k); });
  expect_values(a * b, [&](size_t k) { return xa(k) * xb(k); });
  expect_values(a / b, [&](size_t k) { return xa(k) / xb(k); });
  expect_values(-a, [&](size_t k) { return -xa(k); });
  expect_values(2.0f * a - 1.0f, [&](size_t k) { return 2 * xa(k) - 1; });
  expect_values((a - 1.0f).relu(), [&](size_t k) { return std::max(0.0, xa(k) - 1); });
  expect_values(a.exp(), [&](size_t k) { return std::exp(xa(k)); });
  expect_values(a.log(), [&](size_t k) { return std::log(xa(k)); });
  expect_values(a.sqrt(), [&](size_t k) { return std::sqrt(xa(k)); });
  expect_values(a.sin(), [&](size_t k) { return std::sin(xa(k)); });
  expect_values(a.cos(), [&](size_t k) { return std::cos(xa(k)); });
  expect_values(a.tanh(), [&](size_t k) { return std::tanh(xa(k)); });
  expect_values(a.sigmoid(), [&](size_t k) { return 1 / (1 + std::exp(-xa(k))); });
  expect_values((a - 2.0f).abs(), [&](size_t k) { return std::abs(xa(k) - 2); });
  expect_values(a.reciprocal(), [&](size_t k) { return 1 / xa(k); });
  expect_values(a.pow(b), [&](size_t k) { return std::pow(xa(k), xb(k)); });
  expect_values(a.pow(1.5), [&](size_t k) { return std::pow(xa(k), 1.5); });
  expect_values(a.maximum(b - 2.0f), [&](size_t k) { return std::max(xa(k), xb(k) - 2); });
  expect_values(a.minimum(b - 2.0f), [&](size_t k) { return std::min(xa(k), xb(k) - 2); });
  Tensor two = Tensor::full({4}, 2.0);
  EXPECT_EQ(a.lt(two).to_vector<bool>(), (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(a.gt(two).to_vector<bool>(), (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(a.eq(two).to_vector<bool>(), (std::vector<bool>{false, false, true, false}));
  EXPECT_EQ(a.ne(two).to_vector<bool>(), (std::vector<bool>{true, true, false, true}));
  EXPECT_EQ(a.lt(2.0f).to_vector<bool>(), (std::vector<bool>{true, true, false, false}));
  expect_values(a.gt(two).where(a, b), [&](size_t k) { return xa(k) > 2 ? xa(k) : xb(k); });
  EXPECT_EQ(a.cast(dtypes::int32).to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3}));
  // the scalar rules: int stays int with an int scalar, a floating scalar makes it float32
  Tensor i = Tensor::from_vector<int32_t>({1, 2}, {2});
  EXPECT_EQ((i * 3).dtype(), dtypes::int32);
  EXPECT_EQ((i * 0.5).dtype(), dtypes::float32);
  EXPECT_EQ((a * 2.0f).dtype(), dtypes::float32);
}

TEST(ApiContract, ReductionsAndMovement) {
  std::vector<float> x(24);
  std::iota(x.begin(), x.end(), -5.0f);
  Tensor t = Tensor::from_vector(x, {2, 3, 4});
  auto at = [&](int i, int j, int k) { return double(x[(i * 3 + j) * 4 + k]); };
  expect_values(t.sum({1}), [&](size_t n) { return at(n / 4, 0, n % 4) + at(n / 4, 1, n % 4) + at(n / 4, 2, n % 4); });
  expect_values(t.sum(), [&](size_t) { return std::accumulate(x.begin(), x.end(), 0.0); });
  expect_values(t.max({-1}, true), [&](size_t n) { return at(n / 3, n % 3, 3); });
  expect_values(t.min({0}), [&](size_t n) { return at(0, n / 4, n % 4); });
  expect_values(t.mean({2}), [&](size_t n) { return (at(n / 3, n % 3, 0) + at(n / 3, n % 3, 3)) / 2; });
  EXPECT_EQ(t.argmax(2).to_vector<int32_t>(), std::vector<int32_t>(6, 3));
  expect_values(t.softmax(2), [&](size_t n) {
    double s = 0;
    for (int k = 0; k < 4; k++) s += std::exp(at(n / 12, n / 4 % 3, k) - at(n / 12, n / 4 % 3, 3));
    return std::exp(at(n / 12, n / 4 % 3, n % 4) - at(n / 12, n / 4 % 3, 3)) / s;
  });
  expect_values(t.log_softmax(-1).exp().sum({-1}), [](size_t) { return 1.0; });
  expect_values(t.reshape({6, 4}), [&](size_t n) { return double(x[n]); });
  expect_values(t.permute({2, 0, 1}), [&](size_t n) { return at(n / 3 % 2, n % 3, n / 6); });
  expect_values(t.shrink({{1, 2}, {0, 3}, {1, 3}}), [&](size_t n) { return at(1, n / 2, 1 + n % 2); });
  expect_values(t.flip({2}), [&](size_t n) { return at(n / 12, n / 4 % 3, 3 - n % 4); });
  expect_values(t.transpose(0, 2), [&](size_t n) { return at(n % 2, n / 2 % 3, n / 6); });
  expect_values(t.shrink({{0, 1}, {0, 1}, {0, 4}}).reshape({4}).pad({{1, 2}}),
                [&](size_t n) { return n >= 1 && n < 5 ? at(0, 0, n - 1) : 0.0; });
  expect_values(Tensor(std::vector<float>{1, 2}).reshape({2, 1}).expand({2, 3}), [](size_t n) { return 1.0 + n / 3; });
  Tensor m = t.reshape({6, 4});
  expect_values(m.matmul(m.transpose()), [&](size_t n) {
    double s = 0;
    for (int k = 0; k < 4; k++) s += double(x[n / 6 * 4 + k]) * x[n % 6 * 4 + k];
    return s;
  });
}

TEST(ApiContract, IntrospectionAndCounters) {
  Tensor a = Tensor::ones({4, 4});
  std::vector<ScheduleItem> items = (a * 2.0f).schedule();
  ASSERT_EQ(items.size(), 1u);
  EXPECT_FALSE(items[0].str().empty());
  UOpRef graph = (a * 2.0f).uop();
  EXPECT_EQ(graph->op, Ops::MUL);
  GlobalCounters::reset();
  (a * 3.0f).realize();
  EXPECT_EQ(GlobalCounters::kernel_count, 1);
  EXPECT_GT(GlobalCounters::global_mem, 0);
  EXPECT_THROW(a.to_vector<int32_t>(), Error);
}

// shared/API.md's "training" block (TinyJit belongs to the JIT issue): names and argument order as
// written, with values checked against hand-derived double results.
TEST(ApiContract, Training) {
  // d/dx sum(x^2 * 3) = 6x; gradient() leaves grad() alone, backward() fills it
  Tensor x = Tensor::from_vector<float>({1, -2, 0.5f}, {3});
  x.requires_grad_();
  EXPECT_TRUE(x.requires_grad());
  Tensor loss = (x * x * 3.0f).sum();
  std::vector<Tensor> g = loss.gradient({x});
  expect_values(g[0], [](size_t i) { return 6.0 * std::vector<double>{1, -2, 0.5}[i]; });
  EXPECT_FALSE(x.grad().has_value());
  loss.backward();
  expect_values(*x.grad(), [](size_t i) { return 6.0 * std::vector<double>{1, -2, 0.5}[i]; });
  EXPECT_FALSE(x.detach().requires_grad());
  // sparse_categorical_crossentropy: -mean(log softmax(logits)[label])
  Tensor logits = Tensor::from_vector<float>({1, 2, 3, 0, 0, 0}, {2, 3});
  Tensor labels = Tensor::from_vector<int32_t>({2, 0}, {2});
  double l0 = -(3 - std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0))), l1 = std::log(3.0);
  EXPECT_NEAR(logits.sparse_categorical_crossentropy(labels).item<float>(), (l0 + l1) / 2, 1e-5);
  // assign and to
  Tensor w = Tensor::zeros({2});
  w.assign(Tensor::ones({2}) * 4.0f);
  expect_values(w, [](size_t) { return 4.0; });
  EXPECT_EQ(w.to("CPU").device(), "CPU");
  Tensor::training = true;
  Tensor::no_grad = true;
  EXPECT_FALSE((x * 2.0f).requires_grad());
  Tensor::no_grad = false;
  Tensor::training = false;

  nn::Linear lin(3, 2, true);
  nn::Conv2d conv(1, 2, 3, 1, 1, true);
  nn::BatchNorm bn(2, 1e-5, 0.1);
  nn::LayerNorm ln(2, 1e-5);
  nn::Embedding emb(5, 2);
  EXPECT_EQ(lin(Tensor::ones({4, 3})).shape(), (Shape{4, 2}));
  EXPECT_EQ(conv(Tensor::ones({1, 1, 4, 4})).shape(), (Shape{1, 2, 4, 4}));
  EXPECT_EQ(bn(conv(Tensor::ones({1, 1, 4, 4}))).shape(), (Shape{1, 2, 4, 4}));
  EXPECT_TRUE(lin.weight.requires_grad() && lin.bias->requires_grad() && conv.weight.requires_grad());
  EXPECT_EQ(bn.weight.shape(), (Shape{2}));
  EXPECT_EQ(bn.running_mean.shape(), bn.running_var.shape());

  // one SGD step: p - lr * grad, grad of sum(p) is 1
  Tensor p = Tensor::from_vector<float>({1, 2}, {2});
  nn::optim::SGD sgd({p}, 0.5, 0, 0, false);
  sgd.zero_grad();
  p.sum().backward();
  sgd.step();
  expect_values(p, [](size_t i) { return (i + 1) - 0.5; });
  // Adam's first step moves each parameter by lr (times sign of its gradient)
  Tensor q = Tensor::from_vector<float>({1, -1}, {2});
  nn::optim::Adam adam({q}, 0.1, 0.9, 0.999, 1e-8);
  (q * q).sum().backward();
  adam.step();
  expect_values(q, [](size_t i) { return i == 0 ? 0.9 : -0.9; });
  nn::optim::AdamW adamw({q}, 0.1, 0.9, 0.999, 1e-8, 0.01);
  adamw.zero_grad();

  // safetensors round trip
  std::string path = ::testing::TempDir() + "kiln_api_contract.safetensors";
  nn::state::StateDict sd{{"w", Tensor::from_vector<float>({1.5f, -2}, {2})}};
  nn::state::safe_save(sd, path);
  expect_values(nn::state::safe_load(path).at("w"), [](size_t i) { return i == 0 ? 1.5 : -2.0; });
}
