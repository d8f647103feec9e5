// Elementwise math built from the primitives, with tinygrad's formulas (and its argument defaults):
// rounding division, C's fmod, copysign, logaddexp, lerp, closeness tests, inverse and hyperbolic
// trigonometry, and the shifts by a tensor. All are differentiable where tinygrad's are.
#include <cmath>
#include <numbers>
#include <string>

#include "kiln/error.h"
#include "tensor/custom_gradient.h"
#include "tensor/tensor_impl.h"

namespace kiln {
namespace {

// Where floor division rounded down a quotient that truncation would have rounded up: the result
// is inexact (a remainder) and the operands' signs differ.
Tensor floored_away_from_zero(const Tensor& a, const Tensor& b, const Tensor& floor_mod) {
  Tensor zero = floor_mod.const_like(0);
  return floor_mod.ne(zero).mul(a.lt(zero).ne(b.lt(zero)));
}

// ±1 by x's sign, as a constant: odd functions are s * f(|x|), whose gradient at 0 is f'(0) (x.sign()
// would give 0 there)
Tensor sign_factor(const Tensor& x) { return x.lt(x.const_like(0)).where(x.const_like(-1), x.const_like(1)); }
// |x| for those odd functions: its gradient at 0 is 1, where abs's is 0 (PyTorch's)
Tensor odd_abs(const Tensor& x) { return sign_factor(x) * x; }

Tensor as_float(const Tensor& x) { return x.dtype().is_float() ? x : x.cast(dtypes::default_float); }

// asin on [-1, 1]: Abramowitz and Stegun 4.4.46, as tinygrad, but with pi/2 for its constant term
// 1.5707963050, so that asin(0) is 0 and s * f(|x|) has no jump at 0 (absolute error below 5e-8).
Tensor asin_poly(const Tensor& x) {
  constexpr double kCoefficients[] = {-0.0012624911, 0.0066700901, -0.0170881256, 0.0308918810,
                                      -0.0501743046, 0.0889789874, -0.2145988016, std::numbers::pi / 2};
  Tensor ax = odd_abs(x);
  Tensor poly = ax.const_like(kCoefficients[0]);
  for (size_t i = 1; i < std::size(kCoefficients); i++) poly = poly * ax + kCoefficients[i];
  return sign_factor(x) * (std::numbers::pi / 2 - (1.0 - ax).sqrt() * poly);
}

// log(|x| + sqrt(x^2 + c)) for asinh (c = 1) and acosh (c = -1). Beyond kLargeArgument, x^2 + c is
// x^2 to float64 precision, so the result is log|x| + log 2: x^2 could overflow, log 2|x| cannot.
constexpr double kLargeArgument = 1e8;
Tensor log_hypot_sum(const Tensor& x, double c) {
  Tensor ax = odd_abs(x), large = ax.gt(kLargeArgument);
  // each branch gets a harmless value where it is unused, so its gradient there is 0, not NaN
  Tensor xs = large.where(1.0, ax), xl = large.where(ax, 1.0);
  return large.where(xl.log() + std::numbers::ln2, (xs + (xs * xs + c).sqrt()).log());
}

Tensor checked_int_shift(const Tensor& x, const Tensor& bits, Ops op, const char* name) {
  auto [a, b] = x.broadcast_with(bits);
  if (!a.dtype().is_int()) throw_error(name, ": expected integer tensors, got ", x.dtype().name(), " and ", bits.dtype().name());
  // shifts by the width or more (or negative) are undefined in C: they give what shifting one bit at
  // a time would, 0 (or -1 for a negative value shifted right)
  Tensor in_range = b.ge(b.const_like(0)).mul(b.lt(b.const_like(static_cast<double>(8 * a.dtype().itemsize()))));
  Tensor shifted = Tensor(UOp::make(op, a.dtype(), {a.uop(), in_range.where(b, b.const_like(0)).uop()}));
  Tensor fill = op == Ops::SHR ? a.lt(a.const_like(0)).where(a.const_like(-1), a.const_like(0)) : a.const_like(0);
  return in_range.where(shifted, fill);
}

}  // namespace

int64_t Tensor::size(int dim) const { return shape()[normalize_axis(dim, "size")]; }

Tensor Tensor::div(const Tensor& o, std::string_view rounding_mode) const {
  if (rounding_mode == "floor") {
    auto [a, b] = broadcast_with(o);
    return a.dtype().is_float() ? (a / b).floor() : a.idiv(b);
  }
  if (rounding_mode != "trunc")
    throw_error("div: rounding_mode must be \"trunc\" or \"floor\", got \"", std::string(rounding_mode), "\"");
  auto [a, b] = broadcast_with(o);
  if (a.dtype().is_float()) return (a / b).trunc();
  if (a.dtype().is_bool()) throw_error("div: expected numeric tensors for rounding_mode=\"trunc\", got bool");
  Tensor q = a.idiv(b);
  return q + floored_away_from_zero(a, b, a.mod(b)).cast(q.dtype());
}

Tensor Tensor::fmod(const Tensor& o) const {
  auto [a, b] = broadcast_with(o);
  if (a.dtype().is_bool()) throw_error("fmod: expected numeric tensors, got bool; cast to an integer dtype first");
  if (!a.dtype().is_float()) {
    Tensor r = a.mod(b);
    return floored_away_from_zero(a, b, r).where(r - b, r);
  }
  // Narrower floats divide in float64: a quotient just below an integer must not round up to it
  // before the truncation (fmod(2.5, 0.001f) is 0.00099988, not 0).
  Tensor a64 = a.cast(dtypes::float64), b64 = b.cast(dtypes::float64);
  Tensor r = (a64 - (a64 / b64).trunc() * b64).cast(a.dtype());
  // a finite dividend over an infinite divisor is itself (a / inf * inf would be NaN)
  return b.isinf().mul(a.isfinite()).where(a, r);
}

Tensor Tensor::copysign(const Tensor& o) const {
  auto [a, b] = broadcast_with(o);
  Tensor zero = b.const_like(0);
  // 1 / -0.0 is -inf: the reciprocal finds negative zeros
  Tensor negative = b.lt(zero).add(b.reciprocal().lt(b.reciprocal().const_like(0)));
  Tensor mag = a.eq(a.const_like(0)).where(a.const_like(0), a.abs());  // abs(-0.0) is -0.0
  return negative.where(-mag, mag);
}

Tensor Tensor::logaddexp(const Tensor& o) const {
  auto [a0, b0] = broadcast_with(o);
  Tensor a = as_float(a0), b = as_float(b0);
  Tensor m = a.maximum(b);
  return ((a - m).exp() + (b - m).exp()).log() + m;
}

Tensor Tensor::lerp(const Tensor& end, const Tensor& weight) const { return *this + (end - *this) * weight; }
Tensor Tensor::lerp(const Tensor& end, double weight) const { return *this + (end - *this) * weight; }

Tensor Tensor::isclose(const Tensor& o, double rtol, double atol, bool equal_nan) const {
  auto [a, b] = broadcast_with(o);
  Tensor finite_close = a.isfinite().mul(b.isfinite()).mul((a - b).abs().le(b.abs() * rtol + atol));
  Tensor infinite_close = a.isinf().add(b.isinf()).mul(a.eq(b));
  Tensor result = finite_close.add(infinite_close);
  return equal_nan ? result.add(a.isnan().mul(b.isnan())) : result;
}
Tensor Tensor::allclose(const Tensor& o, double rtol, double atol, bool equal_nan) const {
  return isclose(o, rtol, atol, equal_nan).all();
}

Tensor Tensor::lshift(const Tensor& bits) const { return checked_int_shift(*this, bits, Ops::SHL, "lshift"); }
Tensor Tensor::rshift(const Tensor& bits) const { return checked_int_shift(*this, bits, Ops::SHR, "rshift"); }

// ---- logarithms, hyperbolic and inverse trigonometric functions

Tensor Tensor::log10() const { return log2() * std::log10(2.0); }
Tensor Tensor::sinh() const { return (exp() - neg().exp()) / 2.0; }
Tensor Tensor::cosh() const { return (exp() + neg().exp()) / 2.0; }
Tensor Tensor::asinh() const {
  Tensor x = as_float(*this);
  return sign_factor(x) * log_hypot_sum(x, 1);  // odd: no cancellation in x + sqrt(x^2 + 1) for negative x
}
Tensor Tensor::acosh() const {
  Tensor x = as_float(*this);
  Tensor out = x.lt(1.0).where(NAN, log_hypot_sum(x, -1));  // NaN below 1 even where |x| is large
  // PyTorch's gradient 1 / sqrt(x^2 - 1), also below -1 where the value is NaN (the derived one is 0
  // there: the NaN is a constant)
  UOpRef input = x.uop();
  auto backward = [input](const Tensor& g, const std::vector<bool>&) -> std::vector<std::optional<Tensor>> {
    Tensor x(input);
    return {g / ((x - 1.0) * (x + 1.0)).sqrt()};
  };
  return autograd::set_custom_gradient(out, {x}, backward);
}
Tensor Tensor::atanh() const { return ((1.0 + *this) / (1.0 - *this)).log() / 2.0; }
Tensor Tensor::asin() const { return asin_poly(as_float(*this)); }
Tensor Tensor::acos() const { return std::numbers::pi / 2 - asin(); }
Tensor Tensor::atan() const {
  // atan(x) = asin(x / sqrt(1 + x^2)) for |x| <= 1, and pi/2 - atan(1/|x|) (with x's sign) above,
  // so that x^2 never overflows and atan(±inf) is ±pi/2
  Tensor x = as_float(*this);
  Tensor ax = odd_abs(x), big = ax.gt(1.0);
  Tensor y = big.where(big.where(ax, 1.0).reciprocal(), ax);  // no 1/0 where unused: its gradient would be NaN
  Tensor r = (y / (y * y + 1.0).sqrt()).asin();
  return sign_factor(x) * big.where(std::numbers::pi / 2 - r, r);
}

}  // namespace kiln
