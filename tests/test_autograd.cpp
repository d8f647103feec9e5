// Autograd, part 1: finite-difference checks (float64, see gradcheck.h for the method and the
// tolerance) of the gradient of every differentiable primitive and composite op — elementwise,
// reductions, movement, matmul and the softmax family — over odd shapes (primes, size-1 axes),
// broadcasting and strided views (permuted, shrunk, flipped, padded inputs).
// The semantics of backward()/gradient()/detach()/requires_grad are in test_autograd_semantics.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "gradcheck.h"
#include "kiln/dtype.h"
#include "kiln/tensor.h"
#include "reference.h"

namespace {

using kiln::Tensor;
using ref::NdArray;
using ref::Shape;
using Ts = std::vector<Tensor>;
namespace dtypes = kiln::dtypes;

// Uniform values in [lo, hi); each call draws from a new seed.
NdArray rnd(const Shape& s, double lo = -1, double hi = 1) {
  static uint64_t seed = 1;
  return ref::random(s, seed++, lo, hi);
}

// Values with |v| in [lo, hi) and a random sign: away from the kinks and poles at 0.
NdArray away_from_zero(const Shape& s, double lo = 0.3, double hi = 2) {
  NdArray mag = rnd(s, lo, hi), sign = rnd(s);
  return ref::zip(mag, sign, [](double m, double g) { return g < 0 ? -m : m; });
}

struct Case {
  std::string name;
  std::vector<NdArray> inputs;
  gc::Fn f;
  gc::Options opt = {};
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// ============================================================================ elementwise

std::vector<Case> elementwise_cases() {
  // Cases capture host arrays, not tensors: gtest keeps the cases in static storage, and tensors
  // freed during static destruction crash at exit (see the report in the commit message).
  const NdArray mask_values = ref::map(rnd({3, 5}), [](double v) { return v < 0 ? 1.0 : 0.0; });
  auto mask = [mask_values] { return kt::make(mask_values, dtypes::bool_); };
  return {
      {"add", {rnd({3, 5}), rnd({3, 5})}, [](const Ts& v) { return v[0] + v[1]; }},
      {"add_broadcast", {rnd({3, 1, 5}), rnd({7, 1})}, [](const Ts& v) { return v[0] + v[1]; }},
      {"sub_broadcast", {rnd({5}), rnd({3, 5})}, [](const Ts& v) { return v[0] - v[1]; }},
      {"mul_broadcast", {rnd({3, 1}), rnd({1, 5})}, [](const Ts& v) { return v[0] * v[1]; }},
      {"mul_self", {rnd({7})}, [](const Ts& v) { return v[0] * v[0] * v[0]; }},
      {"div", {rnd({3, 5}), away_from_zero({3, 5}, 0.5, 2)}, [](const Ts& v) { return v[0] / v[1]; }},
      {"div_broadcast", {rnd({2, 3, 1}), away_from_zero({3, 5}, 0.5, 2)}, [](const Ts& v) { return v[0] / v[1]; }},
      {"neg", {rnd({3, 5})}, [](const Ts& v) { return -v[0]; }},
      {"scalars", {away_from_zero({3, 5}, 0.5, 2)},
       [](const Ts& v) { return (v[0] * 2.5 - 1.0) / 3.0 + 2.0 / v[0] - (1.0 - v[0]); }},
      {"maximum", {rnd({3, 5}), rnd({3, 5})}, [](const Ts& v) { return v[0].maximum(v[1]); }},
      {"maximum_broadcast", {rnd({3, 5}), rnd({5})}, [](const Ts& v) { return v[0].maximum(v[1]); }},
      {"maximum_scalar", {away_from_zero({3, 5})}, [](const Ts& v) { return v[0].maximum(0.0); }},
      {"minimum_broadcast", {rnd({3, 1}), rnd({3, 5})}, [](const Ts& v) { return v[0].minimum(v[1]); }},
      {"where", {rnd({3, 5}), rnd({5})}, [mask](const Ts& v) { return mask().where(v[0], v[1]); }},
      {"where_scalar", {rnd({3, 5})}, [mask](const Ts& v) { return mask().where(v[0] * v[0], 0.5); }},
      {"exp", {rnd({3, 5}, -2, 2)}, [](const Ts& v) { return v[0].exp(); }},
      {"log", {rnd({3, 5}, 0.2, 3)}, [](const Ts& v) { return v[0].log(); }},
      {"exp2", {rnd({3, 5}, -2, 2)}, [](const Ts& v) { return v[0].exp2(); }},
      {"log2", {rnd({3, 5}, 0.2, 3)}, [](const Ts& v) { return v[0].log2(); }},
      {"sqrt", {rnd({3, 5}, 0.2, 3)}, [](const Ts& v) { return v[0].sqrt(); }},
      {"rsqrt", {rnd({3, 5}, 0.2, 3)}, [](const Ts& v) { return v[0].rsqrt(); }},
      {"sin", {rnd({3, 5}, -4, 4)}, [](const Ts& v) { return v[0].sin(); }},
      {"cos", {rnd({3, 5}, -4, 4)}, [](const Ts& v) { return v[0].cos(); }},
      {"tan", {rnd({3, 5}, -1.2, 1.2)}, [](const Ts& v) { return v[0].tan(); }},
      {"tanh", {rnd({3, 5}, -3, 3)}, [](const Ts& v) { return v[0].tanh(); }},
      // across the switch from tanh's polynomial (|x| < 0.55) to its exp formula
      {"tanh_near_zero", {rnd({3, 5}, -0.7, 0.7)}, [](const Ts& v) { return v[0].tanh(); }},
      // saturated: the gradients are (nearly) 0, not NaN from the unused branch
      {"tanh_sigmoid_saturated", {away_from_zero({3, 5}, 10, 1e30)},
       [](const Ts& v) { return v[0].tanh() + v[0].sigmoid(); }},
      {"sigmoid", {rnd({3, 5}, -4, 4)}, [](const Ts& v) { return v[0].sigmoid(); }},
      {"sigmoid_wide", {rnd({3, 5}, -30, 30)}, [](const Ts& v) { return v[0].sigmoid(); }},
      {"reciprocal", {away_from_zero({3, 5}, 0.5, 2)}, [](const Ts& v) { return v[0].reciprocal(); }},
      {"abs_relu", {away_from_zero({3, 5}, 0.1, 2)}, [](const Ts& v) { return v[0].abs() + v[0].relu() * 3.0; }},
      {"square", {rnd({3, 5})}, [](const Ts& v) { return v[0].square(); }},
      {"pow_tensor", {rnd({3, 5}, 0.3, 2), rnd({3, 5}, -2, 2)}, [](const Ts& v) { return v[0].pow(v[1]); }},
      {"pow_broadcast_exponent", {rnd({3, 5}, 0.3, 2), rnd({1}, 1, 2)}, [](const Ts& v) { return v[0].pow(v[1]); }},
      {"pow_odd_integer_negative_base", {away_from_zero({3, 5})}, [](const Ts& v) { return v[0].pow(3.0); }},
      {"pow_fraction", {rnd({3, 5}, 0.3, 2)}, [](const Ts& v) { return v[0].pow(2.5); }},
      {"pow_integer_negative_base", {away_from_zero({3, 5}, 0.5, 1.5)}, [](const Ts& v) { return v[0].pow(10.0); }},
      {"pow_negative_half_integer", {rnd({3, 5}, 0.3, 2)}, [](const Ts& v) { return v[0].pow(-1.5); }},
      {"pow_scalar_fraction", {rnd({3, 5}, 0.3, 2)}, [](const Ts& v) { return v[0].pow(1 / 3.0); }},
      {"pow_special_exponents", {rnd({3, 5}, 0.3, 2)},
       [](const Ts& v) { return v[0].pow(0.5) + v[0].pow(-1.0) + v[0].pow(2.0) + v[0].pow(1.0) + v[0].pow(0.0); }},
      {"clip", {away_from_zero({3, 5}, 0.1, 1)}, [](const Ts& v) { return (v[0] * 2.0).clip(-0.5, 1.0); }},
      {"chain", {rnd({3, 5}), rnd({3, 5})},
       [](const Ts& v) { return ((v[0] * v[1]).exp() + v[0]).sigmoid() * (v[1] - v[0]).tanh(); }},
      // floor division is piecewise constant: it adds nothing to the gradient of the product (which
      // connects both inputs to the loss); a % b = a - floor(a / b) * b has gradient 1 for a and
      // -floor(a / b) for b
      {"idiv", {rnd({3, 5}, -3, 3), away_from_zero({3, 5}, 0.5, 2)},
       [](const Ts& v) { return v[0].idiv(v[1]) * (v[0] + v[1]); }},
      {"mod", {rnd({3, 5}, -3, 3), away_from_zero({3, 5}, 0.5, 2)}, [](const Ts& v) { return v[0].mod(v[1]); }},
      {"mod_scalar", {rnd({3, 5}, -3, 3)}, [](const Ts& v) { return v[0] % 0.75; }},
  };
}

// Casts: float32 inputs hold values exactly on a grid and are perturbed by eps = 2^-10 (exact in
// float32); the functions are polynomials of degree <= 2 after the casts, where central
// differences are exact, so only rounding limits the tolerance.
std::vector<Case> cast_cases() {
  auto grid = [](const Shape& s, uint64_t seed) { return ref::random_grid(s, seed, -4, 4, 1.0 / 64); };
  gc::Options f32{.eps = 1.0 / 1024, .rtol = 1e-6, .atol = 1e-6, .dtype = dtypes::float32};
  gc::Options f64{.eps = 1.0 / 1024, .rtol = 1e-6, .atol = 1e-6};
  return {
      {"cast_float32_to_float64", {grid({3, 5}, 7)},
       [](const Ts& v) { return v[0].cast(dtypes::float64).square() * 3.0; }, f32},
      {"cast_float64_to_float32", {grid({3, 5}, 8)},
       [](const Ts& v) { return (v[0].cast(dtypes::float32) * 3.0f).cast(dtypes::float64).square(); }, f64},
  };
}

// ============================================================================ reductions

struct ReduceConfig {
  Shape shape;
  std::vector<int> axes;
  bool keepdim;
};
const std::vector<ReduceConfig> kReduceConfigs = {
    {{2, 3, 5}, {}, false}, {{2, 3, 5}, {1}, true},  {{2, 3, 5}, {0, 2}, false},
    {{3, 1, 5}, {-1}, true}, {{3, 1, 5}, {1}, false}, {{7}, {0}, true},
};

std::vector<Case> reduce_cases() {
  using R = std::function<Tensor(const Tensor&, const std::vector<int>&, bool)>;
  const std::vector<std::tuple<std::string, R, double, double>> ops = {
      {"sum", [](const Tensor& t, const std::vector<int>& a, bool k) { return t.sum(a, k); }, -1, 1},
      {"max", [](const Tensor& t, const std::vector<int>& a, bool k) { return t.max(a, k); }, -1, 1},
      {"min", [](const Tensor& t, const std::vector<int>& a, bool k) { return t.min(a, k); }, -1, 1},
      {"mean", [](const Tensor& t, const std::vector<int>& a, bool k) { return t.mean(a, k); }, -1, 1},
      {"prod", [](const Tensor& t, const std::vector<int>& a, bool k) { return t.prod(a, k); }, 0.5, 1.5},
  };
  std::vector<Case> out;
  for (const auto& [name, op, lo, hi] : ops)
    for (size_t i = 0; i < kReduceConfigs.size(); i++) {
      const ReduceConfig& c = kReduceConfigs[i];
      out.push_back({name + "_" + std::to_string(i), {rnd(c.shape, lo, hi)},
                     [op, c](const Ts& v) { return op(v[0], c.axes, c.keepdim); }});
    }
  out.push_back({"prod_with_negatives", {away_from_zero({3, 4}, 0.5, 1.5)}, [](const Ts& v) { return v[0].prod({1}); }});
  // exact zeros: d prod / d x_i is the product of the others, also where x_i (or another) is 0
  out.push_back({"prod_with_zeros", {NdArray({3, 4}, {0.5, 0, 1.5, -2, 0, 0, 0.7, 1.1, -0.9, 1.3, 0.6, 0})},
                 [](const Ts& v) { return v[0].prod({1}); }});
  // a reduction whose result is used twice, and a reduction of a broadcast input
  out.push_back({"sum_reused", {rnd({3, 5})}, [](const Ts& v) {
                   Tensor s = v[0].sum({1}, true);
                   return v[0] * s + s.square();
                 }});
  out.push_back({"sum_of_broadcast", {rnd({3, 1})}, [](const Ts& v) { return v[0].expand({3, 5}).square().sum({0}); }});
  return out;
}

// ============================================================================ movement and views

std::vector<Case> movement_cases() {
  const NdArray scale = rnd({3, 5});
  return {
      {"reshape", {rnd({2, 3, 5})}, [](const Ts& v) { return v[0].reshape({5, 6}).exp(); }},
      {"reshape_infer", {rnd({3, 5})}, [](const Ts& v) { return v[0].reshape({-1}).sin(); }},
      {"permute", {rnd({2, 3, 5})}, [](const Ts& v) { return v[0].permute({2, 0, 1}) * 2.0; }},
      {"transpose", {rnd({3, 5})}, [](const Ts& v) { return v[0].transpose().square(); }},
      {"expand", {rnd({3, 1})}, [](const Ts& v) { return v[0].expand({2, 3, 5}).square(); }},
      {"expand_keep", {rnd({1, 5})}, [](const Ts& v) { return v[0].expand({3, -1}).sin(); }},
      {"pad", {rnd({3, 5})}, [](const Ts& v) { return v[0].pad({{1, 2}, {0, 3}}).exp(); }},
      {"shrink", {rnd({5, 7})}, [](const Ts& v) { return v[0].shrink({{1, 4}, {2, 7}}).square(); }},
      {"flip", {rnd({3, 5})}, [scale](const Ts& v) { return v[0].flip({0, 1}) * kt::make(scale, dtypes::float64); }},
      {"flatten_squeeze_unsqueeze", {rnd({3, 1, 5})},
       [](const Ts& v) { return v[0].squeeze(1).unsqueeze(0).flatten().square(); }},
      // strided inputs: a view of the input feeds the computation
      {"permuted_input", {rnd({5, 3})}, [](const Ts& v) { return v[0].transpose() * v[0].transpose().exp(); }},
      {"shrunk_and_flipped", {rnd({4, 7})},
       [](const Ts& v) { return v[0].shrink({{1, 4}, {0, 5}}).flip({1}).sin() + v[0].shrink({{0, 3}, {2, 7}}); }},
      {"pad_then_shrink", {rnd({3, 5})},
       [](const Ts& v) { return v[0].pad({{2, 2}, {1, 1}}).shrink({{1, 4}, {0, 6}}).square(); }},
      {"same_input_many_views", {rnd({3, 3})},
       [](const Ts& v) { return v[0] * v[0].transpose() + v[0].flip({0}) * v[0].reshape({9}).reshape({3, 3}); }},
  };
}

// ============================================================================ matmul and softmax

std::vector<Case> matmul_softmax_cases() {
  return {
      {"matmul", {rnd({3, 5}), rnd({5, 2})}, [](const Ts& v) { return v[0].matmul(v[1]); }},
      {"matmul_batched", {rnd({2, 3, 4}), rnd({2, 4, 3})}, [](const Ts& v) { return v[0].matmul(v[1]); }},
      {"matmul_batch_broadcast", {rnd({2, 1, 3, 2}), rnd({3, 2, 2})}, [](const Ts& v) { return v[0].matmul(v[1]); }},
      {"matmul_vector_matrix", {rnd({5}), rnd({5, 3})}, [](const Ts& v) { return v[0].matmul(v[1]); }},
      {"matmul_matrix_vector", {rnd({3, 5}), rnd({5})}, [](const Ts& v) { return v[0].matmul(v[1]); }},
      {"matmul_vector_vector", {rnd({7}), rnd({7})}, [](const Ts& v) { return v[0].dot(v[1]); }},
      {"matmul_transposed_operands", {rnd({5, 3}), rnd({2, 5})},
       [](const Ts& v) { return v[0].transpose().matmul(v[1].transpose()); }},
      {"softmax_last", {rnd({3, 5}, -2, 2)}, [](const Ts& v) { return v[0].softmax(); }},
      {"softmax_axis0", {rnd({3, 1, 5}, -2, 2)}, [](const Ts& v) { return v[0].softmax(0); }},
      {"softmax_size1_axis", {rnd({3, 1, 5}, -2, 2)}, [](const Ts& v) { return v[0].softmax(1); }},
      {"log_softmax_last", {rnd({3, 5}, -2, 2)}, [](const Ts& v) { return v[0].log_softmax(); }},
      {"log_softmax_middle", {rnd({2, 3, 5}, -2, 2)}, [](const Ts& v) { return v[0].log_softmax(1); }},
      {"logsumexp", {rnd({3, 5}, -2, 2)}, [](const Ts& v) { return v[0].logsumexp(1); }},
      {"logsumexp_keepdim", {rnd({3, 5}, -2, 2)}, [](const Ts& v) { return v[0].logsumexp(0, true); }},
      {"softmax_of_permuted", {rnd({5, 3}, -2, 2)}, [](const Ts& v) { return v[0].transpose().softmax(-1); }},
  };
}

class Grad : public ::testing::TestWithParam<Case> {};

TEST_P(Grad, MatchesFiniteDifferences) {
  const Case& c = GetParam();
  EXPECT_TRUE(gc::check(c.f, c.inputs, c.opt));
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Elementwise, Grad, ::testing::ValuesIn(elementwise_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(Cast, Grad, ::testing::ValuesIn(cast_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(Reduce, Grad, ::testing::ValuesIn(reduce_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(Movement, Grad, ::testing::ValuesIn(movement_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(MatmulSoftmax, Grad, ::testing::ValuesIn(matmul_softmax_cases()), case_name);

// The checker itself must notice a wrong gradient: a function whose analytic gradient is cut by
// detach() differs from its finite differences.
TEST(GradCheck, DetectsAWrongGradient) {
  EXPECT_FALSE(gc::check([](const Ts& v) { return v[0] * v[0].detach(); }, {rnd({5})}));
}

// With element sampling (elements 0 and 6 of 7 checked one by one), a wrong gradient at element 3
// is still caught by the random-direction checks.
TEST(GradCheck, SampledCheckDetectsAWrongGradientElsewhere) {
  const Tensor at3 = kt::make(NdArray({7}, {0, 0, 0, 1, 0, 0, 0}), dtypes::bool_);
  gc::Fn f = [at3](const Ts& v) { return v[0] * at3.where(v[0].detach(), v[0]); };
  EXPECT_TRUE(gc::check([](const Ts& v) { return v[0] * v[0]; }, {rnd({7})}, {.max_elements = 2}));
  EXPECT_FALSE(gc::check(f, {rnd({7})}, {.max_elements = 2}));
}

}  // namespace
