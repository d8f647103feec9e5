// Autograd, part 2: the semantics around the gradient rules — backward() accumulating into grad(),
// gradient() leaving it alone, detach(), which tensors may and do require gradients, no_grad, the
// errors, gradients summed over broadcast axes, and that gradient graphs fuse into few kernels.
// Expected values come from closed-form derivatives computed on the host.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/tensor.h"
#include "reference.h"
#include "tensor/custom_gradient.h"
#include "tensor/tensor_impl.h"

namespace {

using kiln::Tensor;
using ref::NdArray;
namespace dtypes = kiln::dtypes;

constexpr kt::Tol kExact{1e-12, 1e-12};  // float64 sums of a few terms

Tensor f64(const NdArray& a) { return kt::make(a, dtypes::float64); }

NdArray scaled(const NdArray& a, double k) {
  return ref::map(a, [k](double v) { return v * k; });
}

// Sets Tensor::no_grad for one scope.
struct NoGradScope {
  bool saved = Tensor::no_grad;
  NoGradScope() { Tensor::no_grad = true; }
  ~NoGradScope() { Tensor::no_grad = saved; }
};

// The message of the kiln::Error that `fn` throws ("" if it throws none).
template <class F>
std::string error_of(F fn) {
  try {
    fn();
  } catch (const kiln::Error& e) {
    return e.what();
  }
  return "";
}

TEST(Backward, AccumulatesUntilCleared) {
  NdArray xv = ref::random({3, 5}, 1);
  Tensor x = f64(xv).requires_grad_();
  EXPECT_FALSE(x.grad().has_value());
  (x * x).sum().backward();  // d/dx = 2x
  ASSERT_TRUE(x.grad().has_value());
  EXPECT_TRUE(kt::matches(*x.grad(), scaled(xv, 2), kExact));
  (x * x).sum().backward();  // accumulates: 4x
  EXPECT_TRUE(kt::matches(*x.grad(), scaled(xv, 4), kExact));
  (x * 3.0).sum().backward();  // + 3
  EXPECT_TRUE(kt::matches(*x.grad(), ref::map(xv, [](double v) { return 4 * v + 3; }), kExact));
  x.set_grad(std::nullopt);
  EXPECT_FALSE(x.grad().has_value());
  (x * x).sum().backward();
  EXPECT_TRUE(kt::matches(*x.grad(), scaled(xv, 2), kExact));
}

TEST(Backward, ReachesEveryLeafAndSumsSharedPaths) {
  NdArray xv = ref::random({5}, 2), yv = ref::random({5}, 3);
  Tensor x = f64(xv).requires_grad_(), y = f64(yv).requires_grad_();
  Tensor z = x * y;                 // used twice below
  (z * z + z * x).sum().backward();  // d/dx = 2 z y + 2 x y ... computed on the host below
  NdArray gx = ref::zip(xv, yv, [](double a, double b) { return 2 * a * b * b + 2 * a * b; });
  NdArray gy = ref::zip(xv, yv, [](double a, double b) { return 2 * a * a * b + a * a; });
  EXPECT_TRUE(kt::matches(*x.grad(), gx, kExact));
  EXPECT_TRUE(kt::matches(*y.grad(), gy, kExact));
}

TEST(Backward, GradKeepsTheParameterDtype) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3}, {3}).requires_grad_();
  (x.cast(dtypes::float64) * 2.0).sum().backward();
  ASSERT_TRUE(x.grad().has_value());
  EXPECT_EQ(x.grad()->dtype(), dtypes::float32);
  EXPECT_TRUE(kt::matches(*x.grad(), NdArray({3}, {2, 2, 2})));
}

TEST(Backward, NonScalarNeedsAnExplicitGradient) {
  Tensor x = f64(ref::random({3}, 4)).requires_grad_();
  Tensor y = x * 3.0;
  std::string msg = error_of([&] { y.backward(); });
  EXPECT_NE(msg.find("one element"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(3,)"), std::string::npos) << "the message should name the shape: " << msg;
  y.backward(f64(NdArray({3}, {1, 2, -1})));  // d(sum(g * y))/dx = 3 g
  EXPECT_TRUE(kt::matches(*x.grad(), NdArray({3}, {3, 6, -3}), kExact));
  EXPECT_NE(error_of([&] { y.backward(f64(NdArray({4}, 1.0))); }), "");  // wrong shape
}

TEST(Backward, WithoutAnyTensorRequiringGradientsDoesNothing) {
  Tensor x = f64(ref::random({3}, 5));
  EXPECT_EQ(error_of([&] { (x * x).sum().backward(); }), "");  // tinygrad's and PyTorch's leaves: no-op
  EXPECT_FALSE(x.grad().has_value());
}

TEST(Backward, FlowsThroughRealizedIntermediatesAndLoss) {
  NdArray xv = ref::random({4}, 21);
  Tensor x = f64(xv).requires_grad_();
  Tensor y = x * x;
  y.to_vector<double>();  // reading realizes y: its graph becomes a buffer
  EXPECT_TRUE(y.requires_grad());
  Tensor z = (y * x).exp();
  z.realize();
  Tensor loss = z.sum();
  loss.item<double>();
  loss.backward();  // d/dx sum(exp(x^3)) = 3 x^2 exp(x^3)
  EXPECT_TRUE(kt::matches(*x.grad(), ref::map(xv, [](double v) { return 3 * v * v * std::exp(v * v * v); }), kExact));
  EXPECT_FALSE(x.grad()->requires_grad());  // a gradient is data, as PyTorch's
  // gradient() reaches realized targets too: d/dy sum(exp(y x)) = x exp(y x)
  std::vector<Tensor> g = z.sum().gradient({y});
  EXPECT_TRUE(kt::matches(g[0], ref::map(xv, [](double v) { return v * std::exp(v * v * v); }), kExact));
}

TEST(Backward, RealizedTensorAssignedAnewUsesItsNewValue) {
  NdArray xv = ref::random({3}, 22);
  Tensor x = f64(xv).requires_grad_();
  Tensor y = x * x;
  y.realize();
  y.assign(x * 5.0);  // y's old graph no longer stands for its value
  y.realize();
  y.sum().backward();
  EXPECT_TRUE(kt::matches(*x.grad(), NdArray({3}, 5.0), kExact));
}

// backward_live, the Python package's backward (tinygrad's rule): every live float tensor of the
// graph gets its gradient, requires_grad or not, but for those marked never_needs_grad.
TEST(BackwardLive, FillsEveryLiveFloatTensorOfTheGraph) {
  NdArray xv = ref::random({4}, 30), yv = ref::random({4}, 31);
  Tensor x = f64(xv), y = f64(yv), unrelated = f64(yv), n = Tensor::from_vector<int32_t>({1, 2, 3, 4}, {4});
  kiln::TensorRegistry::impl_of(y)->never_needs_grad = true;
  Tensor h = x * y;
  kiln::backward_live((h * h + n.cast(dtypes::float64)).sum(), std::nullopt);
  ASSERT_TRUE(x.grad().has_value() && h.grad().has_value());
  EXPECT_TRUE(kt::matches(*x.grad(), ref::zip(xv, yv, [](double a, double b) { return 2 * a * b * b; }), kExact));
  EXPECT_TRUE(kt::matches(*h.grad(), ref::zip(xv, yv, [](double a, double b) { return 2 * a * b; }), kExact));
  EXPECT_FALSE(y.grad().has_value());
  EXPECT_FALSE(unrelated.grad().has_value());
  EXPECT_FALSE(n.grad().has_value());
  x.set_grad(std::nullopt);
  (x * 3.0).sum().backward();  // the default backward stays PyTorch's: x got a gradient, so it counts as a leaf now
  EXPECT_TRUE(kt::matches(*x.grad(), NdArray({4}, 3.0), kExact));
}

TEST(BackwardLive, AddsUpAfterReadingTheGradientsBetweenCalls) {
  NdArray xv = ref::random({4}, 32);
  Tensor x = f64(xv);
  Tensor loss = (x * x).exp().sum();
  NdArray once = ref::map(xv, [](double v) { return 2 * v * std::exp(v * v); });
  kiln::backward_live(loss, std::nullopt);
  EXPECT_TRUE(kt::matches(*x.grad(), once, kExact));  // reading it realizes nodes the loss shares
  kiln::backward_live(loss, std::nullopt);
  EXPECT_TRUE(kt::matches(*x.grad(), scaled(once, 2), kExact));
}

TEST(Gradient, DoesNotTouchGrad) {
  NdArray xv = ref::random({2, 3}, 6);
  Tensor x = f64(xv).requires_grad_();
  std::vector<Tensor> g = (x * x).sum().gradient({x});
  EXPECT_TRUE(kt::matches(g[0], scaled(xv, 2), kExact));
  EXPECT_FALSE(x.grad().has_value());
  (x * 5.0).sum().backward();
  (x * x * x).sum().gradient({x})[0].realize();
  EXPECT_TRUE(kt::matches(*x.grad(), NdArray({2, 3}, 5.0), kExact));
}

TEST(Gradient, WithRespectToIntermediatesAndNonLeaves) {
  NdArray xv = ref::random({4}, 7);
  Tensor x = f64(xv);  // gradient() needs no requires_grad
  Tensor z = x * 2.0;
  std::vector<Tensor> g = (z * z).sum().gradient({z, x});
  EXPECT_TRUE(kt::matches(g[0], scaled(xv, 4), kExact));  // 2 z
  EXPECT_TRUE(kt::matches(g[1], scaled(xv, 8), kExact));  // 2 z * 2
}

TEST(Gradient, IsZeroForTargetsOutsideTheGraphAndErrorsOnIntegers) {
  Tensor x = f64(ref::random({4}, 8)), other = f64(ref::random({4}, 9));
  Tensor loss = (x * x).sum();
  EXPECT_TRUE(kt::matches(loss.gradient({other})[0], NdArray({4}, 0.0), kExact));  // tinygrad's
  EXPECT_TRUE(kt::matches(x.sign().sum().gradient({x})[0], NdArray({4}, 0.0), kExact));  // only through comparisons
  Tensor i = Tensor::from_vector<int32_t>({1, 2, 3, 4}, {4});
  EXPECT_NE(error_of([&] { (x * i).sum().gradient({i}); }), "");
  EXPECT_NE(error_of([&] { (x * x).gradient({x}); }).find("one element"), std::string::npos);
}

TEST(Detach, StopsTheGradient) {
  NdArray xv = ref::random({5}, 10);
  Tensor x = f64(xv).requires_grad_();
  // d/dx (x * stop(x)) = stop(x) = x, not 2x
  EXPECT_TRUE(kt::matches((x * x.detach()).sum().gradient({x})[0], xv, kExact));
  (x * x.detach()).sum().backward();
  EXPECT_TRUE(kt::matches(*x.grad(), xv, kExact));
  EXPECT_FALSE(x.detach().requires_grad());
  EXPECT_TRUE(kt::matches((x.detach() * 2.0).sum().gradient({x})[0], NdArray({5}, 0.0), kExact));
  x.set_grad(std::nullopt);
  (x.detach() * 2.0).sum().backward();  // nothing requires a gradient there: no-op
  EXPECT_FALSE(x.grad().has_value());
  // the values are the same
  EXPECT_TRUE(kt::matches(x.detach(), xv, kExact));
}

TEST(RequiresGrad, OnlyFloatTensors) {
  Tensor i = Tensor::from_vector<int32_t>({1, 2}, {2});
  std::string msg = error_of([&] { i.requires_grad_(); });
  EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
  EXPECT_NE(error_of([&] { Tensor::from_vector<bool>({true}, {1}).requires_grad_(); }), "");
  EXPECT_EQ(error_of([&] { i.requires_grad_(false); }), "");  // turning it off is fine
  EXPECT_FALSE(i.requires_grad());
}

TEST(RequiresGrad, PropagatesToDerivedTensors) {
  Tensor x = f64(ref::random({3}, 11)).requires_grad_(), c = f64(ref::random({3}, 12));
  EXPECT_TRUE(x.requires_grad());
  EXPECT_FALSE(c.requires_grad());
  EXPECT_TRUE((x * 2.0).requires_grad());
  EXPECT_TRUE((c + x).exp().sum().requires_grad());
  EXPECT_FALSE((c * 2.0).requires_grad());
  EXPECT_FALSE(x.lt(c).requires_grad());  // bool results carry no gradient
  x.requires_grad_(false);
  EXPECT_FALSE((x * 2.0).requires_grad());
}

TEST(RequiresGrad, FalseUnderNoGrad) {
  Tensor x = f64(ref::random({3}, 13)).requires_grad_();
  std::optional<Tensor> made;
  {
    NoGradScope scope;
    made = x * 2.0;
    EXPECT_FALSE(made->requires_grad());
    EXPECT_FALSE(made->sum().requires_grad());
    std::string msg = error_of([&] { made->sum().backward(); });
    EXPECT_NE(msg.find("no_grad"), std::string::npos) << msg;
  }
  EXPECT_FALSE(made->requires_grad());
  EXPECT_TRUE((x * 2.0).requires_grad());  // recorded again after the scope
  // what was made under no_grad stays cut off from x: d(made*x)/dx is made, not 4x
  std::vector<Tensor> g = (*made * x).sum().gradient({x});
  std::vector<double> got = g[0].to_vector<double>(), xs = x.to_vector<double>();
  for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], 2 * xs[i], 1e-12);
}

TEST(BroadcastGradient, SumsOverExpandedAxes) {
  NdArray xv = ref::random({3, 1}, 14), yv = ref::random({1, 5}, 15), bv = ref::random({5}, 16);
  Tensor x = f64(xv), y = f64(yv), b = f64(bv);
  Tensor m = f64(ref::random({3, 5}, 17));
  std::vector<Tensor> g = (x * y + b * m).sum().gradient({x, y, b});
  // d/dx[i] = sum_j y[j], d/dy[j] = sum_i x[i], d/db[j] = sum_i m[i][j]
  double sy = ref::sum(yv).data[0], sx = ref::sum(xv).data[0];
  EXPECT_TRUE(kt::matches(g[0], NdArray({3, 1}, sy), kExact));
  EXPECT_TRUE(kt::matches(g[1], NdArray({1, 5}, sx), kExact));
  NdArray mv = ref::random({3, 5}, 17);
  EXPECT_TRUE(kt::matches(g[2], ref::sum(mv, {0}), kExact));
  // a scalar broadcast everywhere: the sum of all weights
  Tensor s = f64(NdArray({}, 0.5));
  EXPECT_TRUE(kt::matches((s * m).sum().gradient({s})[0], NdArray({}, ref::sum(mv).data[0]), kExact));
}

// Ties of a max share its gradient equally (as torch.amax); elementwise maximum splits it in half.
TEST(MaxGradient, TiesShareTheGradient) {
  Tensor x = f64(NdArray({2, 3}, {1, 3, 3, 2, 2, 2}));
  EXPECT_TRUE(kt::matches(x.max({1}).sum().gradient({x})[0], NdArray({2, 3}, {0, 0.5, 0.5, 1.0 / 3, 1.0 / 3, 1.0 / 3}), kExact));
  Tensor a = f64(NdArray({3}, {1, 2, 3})), b = f64(NdArray({3}, {1, 1, 4}));
  std::vector<Tensor> g = a.maximum(b).sum().gradient({a, b});
  EXPECT_TRUE(kt::matches(g[0], NdArray({3}, {0.5, 1, 0}), kExact));
  EXPECT_TRUE(kt::matches(g[1], NdArray({3}, {0.5, 0, 1}), kExact));
}

TEST(Fusion, ElementwiseChainGradientIsOneKernel) {
  Tensor x = Tensor::randn({16, 16}), y = Tensor::randn({16, 16});
  x.realize();
  y.realize();
  Tensor gx = ((x * y).exp() + x).sum().gradient({x})[0];
  EXPECT_EQ(gx.schedule().size(), 1u);
  // and its values: y e^(xy) + 1
  NdArray xv({16, 16}, kt::read(x)), yv({16, 16}, kt::read(y));
  EXPECT_TRUE(kt::matches(gx, ref::zip(xv, yv, [](double a, double b) { return b * std::exp(a * b) + 1; })));
}

TEST(Fusion, GradientOfBothInputsIsFewKernels) {
  Tensor x = Tensor::randn({16, 16}), y = Tensor::randn({16, 16});
  Tensor::realize({x, y});
  std::vector<Tensor> g = ((x * y).sin() * x).sum().gradient({x, y});
  EXPECT_EQ((g[0] + g[1]).schedule().size(), 1u);
}

}  // namespace

namespace {

// y = sum over axis 0 of x * x, whose gradient is declared to be `factor` * grad instead of 2x * grad.
Tensor square_with_declared_gradient(const Tensor& x, double factor) {
  Tensor y = (x * x).sum({0}, true);
  kiln::Shape shape = x.shape();
  return kiln::autograd::set_custom_gradient(y, {x}, [factor, shape](const Tensor& g, const std::vector<bool>& wanted) {
    EXPECT_TRUE(wanted.at(0));
    return std::vector<std::optional<Tensor>>{g.expand(shape) * factor};
  });
}

// An elementwise result (its node an ADD) gets a custom gradient through the view handed back.
TEST(CustomGradient, OfAnElementwiseResult) {
  NdArray xv = ref::random({3, 4}, 33);
  Tensor x = f64(xv).requires_grad_();
  Tensor y = kiln::autograd::set_custom_gradient(x + x, {x}, [](const Tensor& g, const std::vector<bool>&) {
    return std::vector<std::optional<Tensor>>{g * 5.0};
  });
  EXPECT_EQ(y.shape(), x.shape());
  EXPECT_TRUE(kt::matches(y.sum().gradient({x})[0], ref::map(xv, [](double) { return 5.0; }), kExact));
  EXPECT_TRUE(kt::matches(y, ref::map(xv, [](double v) { return 2 * v; }), kExact));
}

TEST(CustomGradient, ReplacesTheDerivedGradient) {
  NdArray xv = ref::random({3, 4}, 31);
  Tensor x = f64(xv).requires_grad_();
  Tensor y = square_with_declared_gradient(x, 3.0);
  (y.sum() + x.sum()).backward();  // x is also reached directly: both paths add up
  EXPECT_TRUE(kt::matches(*x.grad(), ref::map(xv, [](double) { return 4.0; }), kExact));
}

TEST(CustomGradient, IsForgottenWithItsNode) {
  // The same graph built again after the first one was freed gets the derived gradient: the
  // registry entry died with its node, before the address could be reused.
  NdArray xv = ref::random({5}, 32);
  Tensor x = f64(xv).requires_grad_();
  { Tensor y = square_with_declared_gradient(x, 3.0); }
  Tensor y2 = (x * x).sum({0}, true);
  EXPECT_TRUE(kt::matches(y2.sum().gradient({x})[0], scaled(xv, 2), kExact));
}

TEST(CustomGradient, ConvolutionsUseTheirTransposedForm) {
  // conv2d's input gradient is a convolution over the stored, padded output gradient: one of the
  // kernels reads a buffer the size of the padded gradient (2x3x(6+2*2)x(7+2*2)).
  Tensor x = Tensor::randn({2, 4, 8, 9}).requires_grad_(), w = Tensor::randn({3, 4, 3, 3}).requires_grad_();
  Tensor gx = x.conv2d(w).sum().gradient({x})[0];
  bool padded_buffer = false;
  for (const kiln::ScheduleItem& item : gx.schedule())
    padded_buffer |= item.buffers.at(0)->arg_as<kiln::BufferArg>().size == 2 * 3 * 10 * 11;
  EXPECT_TRUE(padded_buffer);
}

}  // namespace
