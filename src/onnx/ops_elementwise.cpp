// Elementwise ops: arithmetic, math functions, activations, comparisons and logic, casts.
#include "onnx/op.h"
#include "onnx/tensor_proto.h"

namespace kiln::onnx {

namespace {

using Unary = Tensor (Tensor::*)() const;
using Binary = Tensor (Tensor::*)(const Tensor&) const;

OpFn unary(Unary f) {
  return [f](const Node& n) { return std::vector<Tensor>{(n.in(0).*f)()}; };
}
OpFn binary(Binary f) {
  return [f](const Node& n) { return std::vector<Tensor>{(n.in(0).*f)(n.in(1))}; };
}
// A scalar of x's dtype (ONNX keeps every op's dtype; kiln would promote an int tensor times 0.5).
Tensor c(const Tensor& x, double v) { return x.const_like(v); }

// Max, Min, Sum, Mean: any number of inputs, broadcast together.
OpFn variadic(Binary f, bool mean = false) {
  return [f, mean](const Node& n) {
    Tensor acc = n.in(0);
    for (int k = 1; k < n.count(); k++) acc = (acc.*f)(n.in(k));
    if (mean) acc = acc / c(acc, n.count());
    return std::vector<Tensor>{acc};
  };
}

std::vector<Tensor> div(const Node& n) {
  const Tensor &a = n.in(0), &b = n.in(1);
  return {a.dtype().is_float() ? a.div(b) : a.div(b, "trunc")};  // integers truncate, as C and NumPy's astype
}

std::vector<Tensor> mod(const Node& n) {
  const Tensor &a = n.in(0), &b = n.in(1);
  if (n.i("fmod", 0)) return {a.fmod(b)};
  return {a.mod(b)};  // the remainder takes the divisor's sign, as Python's %
}

std::vector<Tensor> pow(const Node& n) {
  const Tensor &x = n.in(0), &y = n.in(1);
  if (x.dtype().is_float()) return {x.pow(y.cast(x.dtype()))};
  // integer bases: compute in float64 (exact for the integers a float64 holds) and keep the base's dtype
  return {x.cast(dtypes::float64).pow(y.cast(dtypes::float64)).cast(x.dtype())};
}

std::vector<Tensor> clip(const Node& n) {
  Tensor x = n.in(0);
  std::optional<Tensor> lo, hi;
  if (n.opset() < 11) {
    lo = c(x, n.f("min", -std::numeric_limits<float>::infinity()));
    hi = c(x, n.f("max", std::numeric_limits<float>::infinity()));
  } else {
    lo = n.opt(1), hi = n.opt(2);
  }
  if (lo) x = x.maximum(*lo);
  if (hi) x = x.minimum(*hi);
  return {x};
}

std::vector<Tensor> cast(const Node& n) {
  int to = static_cast<int>(n.i("to", 0));
  auto dt = dtype_from_onnx(to);
  if (!dt) n.fail("cast to ", onnx_type_name(to), " is not supported");
  return {n.in(0).cast(*dt)};
}
void check_cast(const NodeAttrs& n) {
  int to = static_cast<int>(n.i("to", 0));
  if (!dtype_from_onnx(to)) n.fail("cast to ", onnx_type_name(to), " is not supported");
}

std::vector<Tensor> bitshift(const Node& n) {
  return {n.s("direction", "") == "LEFT" ? n.in(0).lshift(n.in(1)) : n.in(0).rshift(n.in(1))};
}
void check_bitshift(const NodeAttrs& n) { check_string(n, "direction", "", {"LEFT", "RIGHT"}); }

std::vector<Tensor> prelu(const Node& n) {
  const Tensor& x = n.in(0);
  Tensor slope = n.in(1);
  // before opset 7 a 1-D slope of C values is per channel (axis 1), not NumPy-broadcast
  if (n.opset() < 7 && slope.ndim() == 1 && x.ndim() > 2 && slope.numel() == x.shape()[1]) {
    Shape shape(x.ndim() - 1, 1);
    shape[0] = slope.numel();
    slope = slope.reshape(shape);
  }
  return {x.lt(c(x, 0)).where(x * slope, x)};
}

std::vector<Tensor> shrink(const Node& n) {
  const Tensor& x = n.in(0);
  double lambd = n.f("lambd", 0.5), bias = n.f("bias", 0);
  return {x.lt(c(x, -lambd)).where(x + c(x, bias), x.gt(c(x, lambd)).where(x - c(x, bias), c(x, 0)))};
}

std::vector<Tensor> thresholded_relu(const Node& n) {
  const Tensor& x = n.in(0);
  return {x.gt(c(x, n.f("alpha", 1.0))).where(x, c(x, 0))};
}

std::vector<Tensor> isinf(const Node& n) {
  return {n.in(0).isinf(n.i("detect_positive", 1) != 0, n.i("detect_negative", 1) != 0)};
}

std::vector<Tensor> hardsigmoid(const Node& n) {
  const Tensor& x = n.in(0);
  return {(x * c(x, n.f("alpha", 0.2)) + c(x, n.f("beta", 0.5))).maximum(c(x, 0)).minimum(c(x, 1))};
}

std::vector<Tensor> celu(const Node& n) { return {n.in(0).celu(n.f("alpha", 1.0))}; }
std::vector<Tensor> elu(const Node& n) { return {n.in(0).elu(n.f("alpha", 1.0))}; }
std::vector<Tensor> leaky_relu(const Node& n) { return {n.in(0).leaky_relu(n.f("alpha", 0.01))}; }
std::vector<Tensor> selu(const Node& n) {
  // the defaults are float32 constants in the operator docs
  return {n.in(0).selu(n.f("alpha", 1.67326319217681884765625), n.f("gamma", 1.05070102214813232421875))};
}
std::vector<Tensor> gelu(const Node& n) { return {n.in(0).gelu(n.s("approximate", "none"))}; }
void check_gelu(const NodeAttrs& n) { check_string(n, "approximate", "none", {"none", "tanh"}); }
std::vector<Tensor> identity(const Node& n) { return {n.in(0)}; }
std::vector<Tensor> where(const Node& n) { return {n.in(0).where(n.in(1), n.in(2))}; }
std::vector<Tensor> logical_not(const Node& n) { return {n.in(0).logical_not()}; }
std::vector<Tensor> relu(const Node& n) { return {n.in(0).relu()}; }  // relu() keeps integer dtypes

// A per-axis quantization parameter (1-D, one per element of x's `axis`) shaped to broadcast.
Tensor quant_param(const Node& n, const Tensor& p, const Tensor& x) {
  if (p.ndim() == 0 || p.numel() == 1) return p.reshape({});
  Shape shape(x.ndim(), 1);
  shape[axis_of(n, n.i("axis", 1), x.ndim())] = p.numel();
  return p.reshape(shape);
}

std::vector<Tensor> quantize(const Node& n) {
  const Tensor& x = n.in(0);
  auto zp = n.opt(2);
  DType dt = zp ? zp->dtype() : dtypes::uint8;
  Tensor scale = quant_param(n, n.in(1), x).cast(x.dtype());
  Tensor q = (x / scale).round();
  if (zp) q = q + quant_param(n, *zp, x).cast(x.dtype());
  return {q.clip(dt.min_value(), dt.max_value()).cast(dt)};  // saturate
}

std::vector<Tensor> dequantize(const Node& n) {
  const Tensor &x = n.in(0), &scale = n.in(1);
  Tensor v = x.cast(scale.dtype());
  if (auto zp = n.opt(2)) v = v - quant_param(n, *zp, x).cast(scale.dtype());
  return {v * quant_param(n, scale, x)};
}

// uint8 quantization over x's own range (widened to hold 0): outputs y, scale and zero point.
std::vector<Tensor> dynamic_quantize(const Node& n) {
  const Tensor& x = n.in(0);
  Tensor lo = x.min().minimum(0.0f), hi = x.max().maximum(0.0f);
  Tensor scale = (hi - lo) / 255.0f;
  Tensor zp = (-lo / scale).round().clip(0, 255);
  Tensor y = ((x / scale).round() + zp).clip(0, 255).cast(dtypes::uint8);
  return {y, scale, zp.cast(dtypes::uint8)};
}

}  // namespace

OpTable elementwise_ops() {
  return {
      {"Add", binary(&Tensor::add)},
      {"Sub", binary(&Tensor::sub)},
      {"Mul", binary(&Tensor::mul)},
      {"Div", div},
      {"Mod", mod},
      {"Pow", pow},
      {"Neg", unary(&Tensor::neg)},
      {"Abs", unary(&Tensor::abs)},
      {"Sqrt", unary(&Tensor::sqrt)},
      {"Exp", unary(&Tensor::exp)},
      {"Log", unary(&Tensor::log)},
      {"Reciprocal", unary(&Tensor::reciprocal)},
      {"Floor", unary(&Tensor::floor)},
      {"Ceil", unary(&Tensor::ceil)},
      {"Round", unary(&Tensor::round)},
      {"Sign", unary(&Tensor::sign)},
      {"Sin", unary(&Tensor::sin)},
      {"Cos", unary(&Tensor::cos)},
      {"Tan", unary(&Tensor::tan)},
      {"Asin", unary(&Tensor::asin)},
      {"Acos", unary(&Tensor::acos)},
      {"Atan", unary(&Tensor::atan)},
      {"Sinh", unary(&Tensor::sinh)},
      {"Cosh", unary(&Tensor::cosh)},
      {"Asinh", unary(&Tensor::asinh)},
      {"Acosh", unary(&Tensor::acosh)},
      {"Atanh", unary(&Tensor::atanh)},
      {"Erf", unary(&Tensor::erf)},
      {"Relu", relu},
      {"Sigmoid", unary(&Tensor::sigmoid)},
      {"Tanh", unary(&Tensor::tanh)},
      {"Softsign", unary(&Tensor::softsign)},
      {"HardSwish", unary(&Tensor::hardswish)},
      {"Softplus", [](const Node& n) { return std::vector<Tensor>{n.in(0).softplus()}; }},
      {"Mish", unary(&Tensor::mish)},
      {"Gelu", gelu, check_gelu},
      {"Elu", elu},
      {"Celu", celu},
      {"Selu", selu},
      {"LeakyRelu", leaky_relu},
      {"HardSigmoid", hardsigmoid},
      {"ThresholdedRelu", thresholded_relu},
      {"PRelu", prelu},
      {"Shrink", shrink},
      {"Clip", clip},
      {"IsNaN", unary(&Tensor::isnan)},
      {"IsInf", isinf},
      {"Identity", identity},
      {"Where", where},
      {"Not", logical_not},
      {"And", binary(&Tensor::bitwise_and)},
      {"Or", binary(&Tensor::bitwise_or)},
      {"Xor", binary(&Tensor::bitwise_xor)},
      {"BitShift", bitshift, check_bitshift},
      {"Equal", binary(&Tensor::eq)},
      {"Less", binary(&Tensor::lt)},
      {"Greater", binary(&Tensor::gt)},
      {"LessOrEqual", binary(&Tensor::le)},
      {"GreaterOrEqual", binary(&Tensor::ge)},
      {"Max", variadic(&Tensor::maximum)},
      {"Min", variadic(&Tensor::minimum)},
      {"Sum", variadic(&Tensor::add)},
      {"Mean", variadic(&Tensor::add, true)},
      {"QuantizeLinear", quantize},
      {"DequantizeLinear", dequantize},
      {"DynamicQuantizeLinear", dynamic_quantize},
      {"Cast", cast, check_cast},
      {"CastLike", [](const Node& n) { return std::vector<Tensor>{n.in(0).cast(n.in(1).dtype())}; }},
  };
}

}  // namespace kiln::onnx
