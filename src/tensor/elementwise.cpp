// Elementwise ops: broadcasting and dtype promotion, then compositions of the primitive ALU ops.
// exp, log, sin, cos, sqrt, ... are primitives (the renderer calls libm), so they are as accurate
// as libm; the composites here (tanh, sigmoid, pow) are built to stay within 2 float32 ULPs.
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>

#include "kiln/error.h"
#include "tensor/custom_gradient.h"
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

// b^e for float64 tensors of one shape, as C's pow. exp(e log|b|) is computed in float64 because in
// float32 the rounding of e log|b| (up to 89 * 2^-24) would be a relative error of up to ~100 ULP.
Tensor pow_value(const Tensor& b, const Tensor& e) {
  Tensor magnitude = (b.abs().log() * e).exp();
  // The sign: negative bases keep their sign for odd integer exponents and give NaN for
  // non-integer ones, but for -inf, whose power is the magnitude.
  Tensor e_is_int = e.trunc().eq(e);
  Tensor e_is_odd = e_is_int.mul((e - (e * e.const_like(0.5)).floor() * e.const_like(2)).ne(e.const_like(0)));
  Tensor negative = b.lt(b.const_like(0));
  Tensor signed_mag = (negative.mul(e_is_odd)).where(magnitude.neg(), magnitude);
  Tensor nan = negative.mul(e_is_int.logical_not()).mul(b.gt(b.const_like(-INFINITY)));
  Tensor result = nan.where(b.const_like(NAN), signed_mag);
  return e.eq(e.const_like(0)).where(b.const_like(1), result);  // x^0 is 1, even for 0 and NaN
}

// pow_value with PyTorch's gradients, which the derived ones (through exp and log) would make NaN
// or wrong at the edges: d/db = e b^(e-1) (0 where e is 0), d/de = b^e log b (0 where b is 0 and
// e >= 0).
Tensor pow_float64(const Tensor& b, const Tensor& e) {
  UOpRef base = b.uop(), exponent = e.uop();
  auto backward = [base, exponent](const Tensor& g, const std::vector<bool>& wanted) {
    Tensor b(base), e(exponent), zero = g.const_like(0);
    std::vector<std::optional<Tensor>> grads(2);
    if (wanted[0]) grads[0] = e.eq(zero).where(zero, g * e * pow_float64(b, e - 1.0));
    if (wanted[1]) grads[1] = b.eq(zero).mul(e.ge(zero)).where(zero, g * pow_value(b, e) * b.log());
    return grads;
  };
  return autograd::set_custom_gradient(pow_value(b, e), {b, e}, backward);
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

namespace {

DType unsigned_of_size(int bytes) {
  switch (bytes) {
    case 1: return dtypes::uint8;
    case 2: return dtypes::uint16;
    case 4: return dtypes::uint32;
    default: return dtypes::uint64;
  }
}

}  // namespace

// Between sizes the last axis holds the bytes, little-endian as memory (tinygrad's rule): float32 (..., n)
// is int8 (..., 4n). The graph splits or joins the bits with shifts, so it stays lazy and fuses.
Tensor Tensor::bitcast(DType to) const {
  const int from_size = dtype().itemsize(), to_size = to.itemsize();
  if (from_size == to_size) return to == dtype() ? *this : Tensor(UOp::make(Ops::BITCAST, to, {uop()}));
  if (ndim() == 0)
    throw_error("bitcast: ", dtype().name(), " to ", to.name(), " changes the last axis, which a 0-d tensor lacks");
  if (shape().back() * from_size % to_size != 0)
    throw_error("bitcast: ", dtype().name(), " to ", to.name(), " changes the last axis, so its bytes (",
                shape().back() * from_size, " in shape ", shape_to_string(shape()), ") must be a multiple of ", to_size);
  Shape out = shape();
  out.back() = out.back() * from_size / to_size;
  const DType from_bits = unsigned_of_size(from_size), to_bits = unsigned_of_size(to_size);
  Tensor bits = bitcast(from_bits);
  if (from_size > to_size) {  // each element's pieces, lowest first, on a new last axis
    std::vector<Tensor> pieces;
    for (int k = 0; k < from_size / to_size; k++) pieces.push_back(bits.rshift(8 * to_size * k).cast(to_bits));
    return stack(pieces, -1).reshape(out).bitcast(to);
  }
  Shape grouped = out;
  grouped.push_back(to_size / from_size);
  std::vector<Tensor> pieces = bits.reshape(grouped).cast(to_bits).split(1, -1);
  Tensor joined = pieces[0];
  for (size_t k = 1; k < pieces.size(); k++)
    joined = joined.bitwise_or(pieces[k].lshift(8 * from_size * static_cast<int>(k)));
  return joined.reshape(out).bitcast(to);
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
  // floats through MAX, so that equal inputs split the gradient as PyTorch's minimum does
  if (a.dtype().is_float()) return -(-a).maximum(-b);
  return a.lt(b).where(a, b);
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
  // min(max(x, lo), hi) as PyTorch's clamp (hi wins where lo > hi), with x itself (gradient 1) at
  // the bounds, not a tie of maximum or minimum; an infinite bound clips nothing
  Tensor low = lo == -INFINITY ? *this : lt(scalar_like(*this, lo)).where(scalar_like(*this, lo), *this);
  return hi == INFINITY ? low : low.gt(scalar_like(*this, hi)).where(scalar_like(*this, hi), low);
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
    Tensor nonnegative = x.ge(0);
    Tensor e = nonnegative.where(-x, x).exp();  // e^-|x|, not through abs: its gradient at 0 is 0
    return nonnegative.where(1.0, e) / (1.0 + e);
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
  return *this * sign();  // gradient sign(x): 0 at 0, as PyTorch's
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
  if (dtype().is_int() && e == std::trunc(e)) {  // integers stay integers, as PyTorch's int ** int
    if (e < 0 || e > 0x1p62)
      throw_error("pow: an integer tensor takes whole exponents from 0 to 2^62, got ", e, "; cast it to a float first");
    return e == 0 ? ones_like() : power_by_squaring(*this, static_cast<uint64_t>(e));
  }
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
  Tensor result = e < 0 ? r->reciprocal() : *r;
  // the square root makes -inf's power NaN, where C's pow (and PyTorch's) gives inf, or 0 for e < 0
  if (frac > 0) result = x64.eq(-INFINITY).where(e < 0 ? 0.0 : INFINITY, result);
  return result.cast(x.dtype());
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
