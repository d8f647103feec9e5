// Elementwise ops: broadcasting and dtype promotion, then compositions of the primitive ALU ops.
// exp, log, sin, cos, sqrt, ... are primitives (the renderer calls libm), so they are as accurate
// as libm; the composites here (tanh, sigmoid, pow) are built to stay within 2 float32 ULPs.
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>

#include "kiln/error.h"
#include "tensor/tensor_impl.h"

namespace kiln {
namespace {

// NumPy broadcasting of several shapes; the error names every input shape.
Shape broadcast_shape(const std::vector<Shape>& shapes) {
  size_t n = 0;
  for (const Shape& s : shapes) n = std::max(n, s.size());
  Shape out(n, 1);
  for (size_t i = 0; i < n; i++)
    for (const Shape& s : shapes) {
      int64_t d = i < n - s.size() ? 1 : s[i - (n - s.size())];
      if (d != out[i] && d != 1 && out[i] != 1) {
        std::string names;
        for (size_t k = 0; k < shapes.size(); k++)
          names += (k ? (k + 1 == shapes.size() ? " and " : ", ") : "") + shape_to_string(shapes[k]);
        throw_error("broadcast: shapes ", names, " are incompatible (axis ",
                    static_cast<int64_t>(i) - static_cast<int64_t>(n), ": ", out[i], " vs ", d, ")");
      }
      if (d != 1) out[i] = d;
    }
  return out;
}

// 16- and 8-bit floats evaluate composite math (exp, log, sigmoid, ...) in float32 and round once, so
// the intermediate steps do not each lose precision.
template <class F>
Tensor in_float32(const Tensor& x, F f) {
  if (x.dtype().itemsize() < 4 && x.dtype().is_float()) return f(x.cast(dtypes::float32)).cast(x.dtype());
  return f(x);
}

// Math functions are defined on floats: integer and bool inputs become the default float.
Tensor float_input(const Tensor& t) { return t.dtype().is_float() ? t : t.cast(dtypes::default_float); }

// Below this |x|, tanh(x) = x + x^3 q(x^2) with q a polynomial; above it, (1 - e) / (1 + e) with
// e = exp(-2|x|) loses at most a bit to cancellation. The coefficients of q (constant term first)
// are Chebyshev fits (mpmath.chebyfit) of (tanh(x)/x - 1) / x^2 over x^2 in [0, 0.55^2], with
// errors of 0.07 float32 and 0.02 float64 ULPs.
constexpr double kTanhPolyBound = 0.55;
constexpr double kTanhQ32[] = {-0.3333333200797698, 0.1333311372902087, -0.05390942882746055, 0.021309388664443474,
                               -0.006610227831114734};
constexpr double kTanhQ64[] = {-0.3333333333333333,    0.13333333333332714,    -0.053968253967434016,
                               0.021869488493666944,   -0.008863234397814355,  0.003592110378689024,
                               -0.001455661830100716,  0.0005889360520074057,  -0.0002346347410887237,
                               8.511313685577672e-05,  -2.060276537636634e-05};

Tensor horner(const Tensor& x, std::span<const double> coefficients) {  // constant term first
  Tensor acc = x.const_like(coefficients.back());
  for (size_t i = coefficients.size() - 1; i-- > 0;) acc = acc * x + coefficients[i];
  return acc;
}

// pow(double) squares its way to integer exponents up to this size. The error of squaring grows
// with the exponent (up to about |e| 2^-53 in float64): far below a float32 ULP, but for float64
// results it would exceed the error of exp(e log|b|) (about |e log b| 2^-53) beyond this.
constexpr double kMaxSquaringExponent = 1024;

Tensor power_by_squaring(const Tensor& x, uint64_t n) {  // x^n, n >= 1
  std::optional<Tensor> result;
  for (Tensor p = x;; p = p * p) {
    if (n & 1) result = result ? *result * p : p;
    if ((n >>= 1) == 0) return *result;
  }
}

// b^e for float64 tensors of one shape. exp(e log|b|) is computed in float64 because in float32
// the rounding of e log|b| (up to 89 * 2^-24) would be a relative error of up to ~100 ULP.
Tensor pow_float64(const Tensor& b, const Tensor& e) {
  Tensor magnitude = (b.abs().log() * e).exp();
  // The sign: negative bases keep their sign for odd integer exponents and give NaN for
  // non-integer ones.
  Tensor e_is_int = e.trunc().eq(e);
  Tensor e_is_odd = (e - (e * e.const_like(0.5)).floor() * e.const_like(2)).ne(e.const_like(0));
  Tensor negative = b.lt(b.const_like(0));
  Tensor signed_mag = (negative.mul(e_is_odd)).where(magnitude.neg(), magnitude);
  Tensor result = (negative.mul(e_is_int.logical_not())).where(b.const_like(NAN), signed_mag);
  return e.eq(e.const_like(0)).where(b.const_like(1), result);  // x^0 is 1, even for 0 and NaN
}

}  // namespace

Tensor Tensor::broadcast_to(const Shape& target) const {
  if (shape() == target) return *this;
  Shape full = broadcast_shape({shape(), target});
  if (full != target)
    throw_error("broadcast_to: cannot broadcast ", shape_to_string(shape()), " to ", shape_to_string(target));
  Shape padded(target.size() - shape().size(), 1);
  padded.insert(padded.end(), shape().begin(), shape().end());
  return reshape(padded).expand(target);
}

std::pair<Tensor, Tensor> Tensor::broadcast_with(const Tensor& o) const {
  if (shape() == o.shape() && dtype() == o.dtype()) return {*this, o};  // the common case, without building shapes
  Shape s = broadcast_shape({shape(), o.shape()});
  DType dt = dtypes::least_upper(dtype(), o.dtype());
  return {cast(dt).broadcast_to(s), o.cast(dt).broadcast_to(s)};
}

Tensor Tensor::alu(Ops op, std::initializer_list<Tensor> srcs) const {
  std::vector<UOpRef> src;
  src.reserve(1 + srcs.size());
  src.push_back(uop());
  for (const Tensor& s : srcs) src.push_back(s.uop());
  DType out = group::Comparison.has(op) ? dtypes::bool_ : dtype();
  if (op == Ops::WHERE) out = srcs.begin()->dtype();
  return Tensor(UOp::make(op, out, std::move(src)));
}

Tensor Tensor::const_like(double value) const { return full(shape(), value, dtype()); }

Tensor Tensor::cast(DType to) const {
  if (to == dtype()) return *this;
  if (to.count != 1 || to.ptr || to.scalar == ScalarType::Void) throw_error("cast: cannot cast to ", to.name());
  return Tensor(UOp::make(Ops::CAST, to, {uop()}));
}

Tensor Tensor::bitcast(DType to) const {
  if (to.itemsize() != dtype().itemsize())
    throw_error("bitcast: ", dtype().name(), " and ", to.name(), " differ in size (", dtype().itemsize(), " vs ",
                to.itemsize(), " bytes)");
  if (to == dtype()) return *this;
  return Tensor(UOp::make(Ops::BITCAST, to, {uop()}));
}

// ---- binary

Tensor Tensor::add(const Tensor& o) const {
  auto [a, b] = broadcast_with(o);
  return a.dtype().is_bool() ? a.alu(Ops::OR, {b}) : a.alu(Ops::ADD, {b});
}
Tensor Tensor::sub(const Tensor& o) const {
  auto [a, b] = broadcast_with(o);
  if (a.dtype().is_bool()) throw_error("sub: subtracting bool tensors is not defined; use logical ops");
  return a.alu(Ops::SUB, {b});
}
Tensor Tensor::mul(const Tensor& o) const {
  auto [a, b] = broadcast_with(o);
  return a.dtype().is_bool() ? a.alu(Ops::AND, {b}) : a.alu(Ops::MUL, {b});
}
Tensor Tensor::div(const Tensor& o) const {
  auto [a, b] = broadcast_with(o);
  return float_input(a).alu(Ops::FDIV, {float_input(b)});
}

// Floats: q = floor(a / b) and r = a - q * b. Integers: C's / and % truncate toward zero, so where
// the remainder is nonzero and its sign differs from the divisor's, the quotient moves down by one
// and the remainder over by one divisor. The divisors C's / cannot take become 1 first: 0 (undefined,
// SIGFPE on x86) gives quotient and remainder 0, and -1 (INT_MIN / -1 traps too) gives the wrapping
// negation a * -1 and remainder 0.
std::pair<Tensor, Tensor> Tensor::floor_divmod(const Tensor& o, std::string_view op) const {
  auto [a, b] = broadcast_with(o);
  if (a.dtype().is_bool()) throw_error(op, ": expected numeric tensors, got bool; cast to an integer dtype first");
  if (a.dtype().is_float()) {
    Tensor q = (a / b).floor();
    return {q, a - q * b};
  }
  Tensor special = b.eq(b.const_like(0));
  if (!b.dtype().is_unsigned()) special = special.add(b.eq(b.const_like(-1)));
  Tensor d = special.where(b.const_like(1), b);
  Tensor q = special.where(a * b, a.alu(Ops::IDIV, {d})), r = a.alu(Ops::MOD, {d});
  if (b.dtype().is_unsigned()) return {q, r};
  Tensor zero = r.const_like(0);
  Tensor rounded_up = r.ne(zero).mul(r.lt(zero).ne(d.lt(zero)));
  return {q - rounded_up.cast(q.dtype()), rounded_up.where(r + d, r)};
}
Tensor Tensor::idiv(const Tensor& o) const { return floor_divmod(o, "idiv").first; }
Tensor Tensor::mod(const Tensor& o) const { return floor_divmod(o, "mod").second; }

Tensor Tensor::maximum(const Tensor& o) const {
  auto [a, b] = broadcast_with(o);
  return a.alu(Ops::MAX, {b});
}
Tensor Tensor::minimum(const Tensor& o) const {
  auto [a, b] = broadcast_with(o);
  return a.lt(b).add(a.ne(a)).where(a, b);  // a NaN on either side wins, as in PyTorch
}
Tensor Tensor::lt(const Tensor& o) const {
  auto [a, b] = broadcast_with(o);
  return a.alu(Ops::CMPLT, {b});
}
Tensor Tensor::gt(const Tensor& o) const { return o.lt(*this); }
// Not "not greater": a NaN compares false every way (IEEE).
Tensor Tensor::le(const Tensor& o) const { return lt(o).add(eq(o)); }
Tensor Tensor::ge(const Tensor& o) const { return gt(o).add(eq(o)); }
Tensor Tensor::eq(const Tensor& o) const {
  auto [a, b] = broadcast_with(o);
  return a.alu(Ops::CMPEQ, {b});
}
Tensor Tensor::ne(const Tensor& o) const {
  auto [a, b] = broadcast_with(o);
  return a.alu(Ops::CMPNE, {b});
}

Tensor Tensor::bitwise(Ops op, const Tensor& o, const char* name) const {
  auto [a, b] = broadcast_with(o);
  if (a.dtype().is_float()) throw_error(name, ": expected integer or bool tensors, got ", a.dtype().name());
  return a.alu(op, {b});
}
Tensor Tensor::bitwise_and(const Tensor& o) const { return bitwise(Ops::AND, o, "bitwise_and"); }
Tensor Tensor::bitwise_or(const Tensor& o) const { return bitwise(Ops::OR, o, "bitwise_or"); }
Tensor Tensor::bitwise_xor(const Tensor& o) const { return bitwise(Ops::XOR, o, "bitwise_xor"); }
Tensor Tensor::bitwise_not() const {
  if (dtype().is_bool()) return logical_not();
  return bitwise_xor(full(shape(), int64_t{-1}, dtype()));  // all ones in every integer width
}

Tensor Tensor::lshift(int bits) const {
  if (!dtype().is_int()) throw_error("lshift: expected an integer tensor, got ", dtype().name());
  if (bits < 0 || bits >= 8 * dtype().itemsize())
    throw_error("lshift: expected a shift in [0, ", 8 * dtype().itemsize(), ") for ", dtype().name(), ", got ", bits);
  return alu(Ops::SHL, {full(shape(), int64_t{bits}, dtype())});
}
Tensor Tensor::rshift(int bits) const {
  if (!dtype().is_int()) throw_error("rshift: expected an integer tensor, got ", dtype().name());
  if (bits < 0 || bits >= 8 * dtype().itemsize())
    throw_error("rshift: expected a shift in [0, ", 8 * dtype().itemsize(), ") for ", dtype().name(), ", got ", bits);
  return alu(Ops::SHR, {full(shape(), int64_t{bits}, dtype())});
}

Tensor Tensor::isnan() const { return dtype().is_float() ? ne(*this) : full(shape(), int64_t{0}, dtypes::bool_); }
Tensor Tensor::isinf(bool positive, bool negative) const {
  Tensor none = full(shape(), int64_t{0}, dtypes::bool_);
  if (!dtype().is_float()) return none;
  return (positive ? eq(INFINITY) : none).add(negative ? eq(-INFINITY) : none);
}
Tensor Tensor::isfinite() const { return isnan().add(isinf()).logical_not(); }

Tensor Tensor::logical_not() const {
  Tensor b = cast(dtypes::bool_);
  return b.alu(Ops::CMPNE, {b.const_like(1)});
}

Tensor Tensor::where(const Tensor& if_true, const Tensor& if_false) const {
  Shape s = broadcast_shape({shape(), if_true.shape(), if_false.shape()});
  DType dt = dtypes::least_upper(if_true.dtype(), if_false.dtype());
  return cast(dtypes::bool_).broadcast_to(s).alu(Ops::WHERE, {if_true.cast(dt).broadcast_to(s), if_false.cast(dt).broadcast_to(s)});
}

Tensor Tensor::clip(double lo, double hi) const {
  if (lo > hi) throw_error("clip: lower bound ", lo, " is above upper bound ", hi);
  return maximum(scalar_like(*this, lo)).minimum(scalar_like(*this, hi));
}

// ---- unary

Tensor Tensor::neg() const { return dtype().is_bool() ? logical_not() : alu(Ops::NEG); }
// NaN passes through (PyTorch); the gradient at 0 is 0.
Tensor Tensor::relu() const { return le(const_like(0)).where(const_like(0), *this); }
Tensor Tensor::exp2() const { return float_input(*this).alu(Ops::EXP2); }
Tensor Tensor::log2() const { return float_input(*this).alu(Ops::LOG2); }
Tensor Tensor::exp() const { return float_input(*this).alu(Ops::EXP); }
Tensor Tensor::log() const { return float_input(*this).alu(Ops::LOG); }
Tensor Tensor::sqrt() const { return float_input(*this).alu(Ops::SQRT); }
Tensor Tensor::rsqrt() const { return sqrt().reciprocal(); }
Tensor Tensor::reciprocal() const { return float_input(*this).alu(Ops::RECIPROCAL); }
Tensor Tensor::sin() const { return float_input(*this).alu(Ops::SIN); }
Tensor Tensor::cos() const { return float_input(*this).alu(Ops::COS); }
Tensor Tensor::tan() const {
  return in_float32(float_input(*this), [](const Tensor& x) { return x.sin() / x.cos(); });
}
Tensor Tensor::sigmoid() const {
  // 1 / (1 + e^-x), or e^x / (1 + e^x) for negative x, so that e^-|x| never overflows and tiny
  // results keep their (denormal) value instead of becoming 0
  return in_float32(float_input(*this), [](const Tensor& x) {
    Tensor e = (-x.abs()).exp();
    return x.ge(0).where(1.0, e) / (1.0 + e);
  });
}
Tensor Tensor::tanh() const {
  return in_float32(float_input(*this), [](const Tensor& x) {
    Tensor small = x.abs().lt(kTanhPolyBound);
    // The polynomial gets 0 where it is unused: its gradient at a huge x would be inf, and 0 * inf is NaN.
    Tensor xs = small.where(x, 0.0), s = xs * xs;
    std::span<const double> q = kTanhQ32;
    if (x.dtype() == dtypes::float64) q = kTanhQ64;
    Tensor near_zero = xs + xs * s * horner(s, q);
    Tensor e = (x.abs() * -2.0).exp();
    Tensor t = (1.0 - e) / (1.0 + e);
    return small.where(near_zero, x.lt(0).where(-t, t));  // NaN fails both tests and stays NaN
  });
}
Tensor Tensor::abs() const {
  if (dtype().is_unsigned() || dtype().is_bool()) return *this;
  return lt(const_like(0)).where(neg(), *this);
}
Tensor Tensor::square() const { return *this * *this; }
Tensor Tensor::sign() const {
  if (dtype().is_bool()) return *this;
  return gt(const_like(0)).cast(dtype()) - lt(const_like(0)).cast(dtype());
}
Tensor Tensor::trunc() const { return dtype().is_float() ? alu(Ops::TRUNC) : *this; }
Tensor Tensor::floor() const {
  if (!dtype().is_float()) return *this;
  Tensor t = trunc();
  return lt(t).where(t - const_like(1), t);
}
Tensor Tensor::ceil() const {
  if (!dtype().is_float()) return *this;
  Tensor t = trunc();
  return gt(t).where(t + const_like(1), t);
}
Tensor Tensor::round() const {  // halves go to the even neighbor, as NumPy and tinygrad do
  if (!dtype().is_float()) return *this;
  // x - trunc(x) is exact, unlike x + 0.5, which rounds for |x| near 2^23 (float32).
  Tensor t = trunc();
  Tensor frac = (*this - t).abs();
  Tensor t_odd = (t - (t * const_like(0.5)).trunc() * const_like(2)).ne(const_like(0));
  Tensor away = frac.gt(const_like(0.5)).add(frac.eq(const_like(0.5)).mul(t_odd));
  return away.where(t + sign(), t);
}

Tensor Tensor::pow(double e) const {
  if (e == 0) return ones_like().cast(dtype().is_float() ? dtype() : dtypes::default_float);
  if (e == 1) return float_input(*this);
  if (e == 2) return float_input(*this).square();
  if (e == 0.5) return sqrt();
  if (e == -1) return reciprocal();
  Tensor x = float_input(*this), x64 = x.cast(dtypes::float64);
  double whole = std::trunc(std::abs(e)), frac = std::abs(e) - whole;
  if (whole > kMaxSquaringExponent || (frac != 0 && frac != 0.5))
    return pow_float64(x64, Tensor::full(shape(), e, dtypes::float64)).cast(x.dtype());
  // Integer and half-integer exponents: repeated squaring (times a square root), in float64 and
  // rounded once, so results that are floats come out exact (3^10 = 59049, as in PyTorch).
  std::optional<Tensor> r;
  if (whole > 0) r = power_by_squaring(x64, static_cast<uint64_t>(whole));
  if (frac > 0) r = r ? *r * x64.sqrt() : x64.sqrt();
  return (e < 0 ? r->reciprocal() : *r).cast(x.dtype());
}

Tensor Tensor::pow(const Tensor& exponent) const {
  auto [b, e] = float_input(*this).broadcast_with(float_input(exponent));
  return pow_float64(b.cast(dtypes::float64), e.cast(dtypes::float64)).cast(b.dtype());
}

// ---- operators

Tensor operator+(const Tensor& a, const Tensor& b) { return a.add(b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return a.sub(b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return a.mul(b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return a.div(b); }
Tensor operator%(const Tensor& a, const Tensor& b) { return a.mod(b); }
Tensor operator-(const Tensor& a) { return a.neg(); }
Tensor operator==(const Tensor& a, const Tensor& b) { return a.eq(b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return a.ne(b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return a.lt(b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return a.le(b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return a.gt(b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return a.ge(b); }

}  // namespace kiln
