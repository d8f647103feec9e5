// Constant evaluation with C semantics per dtype (see const_eval.h), and exec_alu (kiln/ir/symbolic.h)
// on top of it.
#include "uop/const_eval.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kiln/ir/symbolic.h"

namespace kiln {
namespace sym {

int64_t int_from_double(DType d, double v) {
  if (d.is_bool()) return v != 0;
  if (!std::isfinite(v)) throw_error("exec_alu: ", v, " has no ", d.name(), " value");
  const double two63 = 9223372036854775808.0, two64 = 18446744073709551616.0;
  double t = std::trunc(v);
  if (t >= -two63 && t < two63) return wrap(d, static_cast<int64_t>(t));
  double m = std::fmod(t, two64);  // exact; |t| >= 2^63 is a multiple of 2^11, so m + 2^64 is too
  if (m < 0) m += two64;
  return wrap(d, static_cast<uint64_t>(m));
}

namespace {

// Rounds to a binary float with `mant` stored mantissa bits and normal exponents [emin, emax]:
// round to nearest even, subnormals, overflow to infinity.
double round_binary(double v, int mant, int emin, int emax) {
  if (!std::isfinite(v) || v == 0) return v;
  int e;
  std::frexp(v, &e);  // |v| in [2^(e-1), 2^e)
  double quantum = std::ldexp(1.0, std::max(e - 1, emin) - mant);
  double r = std::nearbyint(v / quantum) * quantum;
  double max_finite = std::ldexp(2.0 - std::ldexp(1.0, -mant), emax);
  return std::fabs(r) > max_finite ? std::copysign(std::numeric_limits<double>::infinity(), v) : r;
}

[[noreturn]] void cannot_fold(Ops op, DType d) { throw_error("exec_alu: cannot fold ", op_name(op), " on ", d.name()); }

}  // namespace

double round_float(DType d, double v) {
  switch (d.scalar) {
    case ScalarType::Float16: return round_binary(v, 10, -14, 15);
    case ScalarType::BFloat16: return round_binary(v, 7, -126, 127);
    case ScalarType::Float32: return round_binary(v, 23, -126, 127);
    case ScalarType::Float64: return v;
    case ScalarType::Fp8E4M3: case ScalarType::Fp8E5M2: case ScalarType::Fp8E4M3FNUZ: case ScalarType::Fp8E5M2FNUZ:
      return fp8_to_float(float_to_fp8(static_cast<float>(v), d), d);  // through float32, as kernels convert
    default: throw_error("exec_alu: ", d.name(), " is not a float dtype");
  }
}

int64_t exec_int(Ops op, DType d, std::span<const int64_t> v) {
  const bool uns = d.is_unsigned() || d.is_bool();
  auto U = [](int64_t x) { return static_cast<uint64_t>(x); };
  auto out = [&](uint64_t bits) { return wrap(d, bits); };
  auto less = [&](int64_t a, int64_t b) { return uns ? U(a) < U(b) : a < b; };
  switch (op) {
    case Ops::TRUNC: return v[0];
    case Ops::NEG: return out(0 - U(v[0]));
    case Ops::ADD: return out(U(v[0]) + U(v[1]));
    case Ops::SUB: return out(U(v[0]) - U(v[1]));
    case Ops::MUL: return out(U(v[0]) * U(v[1]));
    case Ops::IDIV:
    case Ops::MOD: {
      int64_t a = v[0], b = v[1];
      if (b == 0) throw_error("exec_alu: ", op == Ops::IDIV ? "division" : "modulo", " by zero");
      if (uns) return out(op == Ops::IDIV ? U(a) / U(b) : U(a) % U(b));
      if (b == -1) return op == Ops::IDIV ? out(0 - U(a)) : 0;  // INT64_MIN / -1 wraps
      return out(U(op == Ops::IDIV ? a / b : a % b));
    }
    case Ops::MAX: return less(v[0], v[1]) ? v[1] : v[0];
    case Ops::CMPLT: return less(v[0], v[1]);
    case Ops::CMPNE: return v[0] != v[1];
    case Ops::CMPEQ: return v[0] == v[1];
    case Ops::AND: return out(U(v[0]) & U(v[1]));
    case Ops::OR: return out(U(v[0]) | U(v[1]));
    case Ops::XOR: return out(U(v[0]) ^ U(v[1]));
    case Ops::SHL:
    case Ops::SHR: {
      // Narrow operands are promoted to int in C, so counts up to 31 are defined for them.
      uint64_t limit = std::max(32, d.itemsize() * 8);
      bool bad = uns ? U(v[1]) >= limit : (v[1] < 0 || U(v[1]) >= limit);
      if (bad) throw_error("exec_alu: shift by ", v[1], " is undefined for ", d.name());
      int n = static_cast<int>(v[1]);
      if (op == Ops::SHL) return out(U(v[0]) << n);
      return uns ? out(U(v[0]) >> n) : out(U(v[0] >> n));
    }
    case Ops::WHERE: return v[0] != 0 ? v[1] : v[2];
    default: cannot_fold(op, d);
  }
}

double exec_float(Ops op, DType d, std::span<const double> in) {
  double v[3] = {};
  for (size_t i = 0; i < in.size(); i++) v[i] = (op == Ops::WHERE && i == 0) ? in[i] : round_float(d, in[i]);
  auto r = [&](double x) { return round_float(d, x); };
  switch (op) {
    case Ops::NEG: return -v[0];
    case Ops::TRUNC: return std::trunc(v[0]);
    case Ops::EXP: return r(std::exp(v[0]));
    case Ops::EXP2: return r(std::exp2(v[0]));
    case Ops::LOG: return r(std::log(v[0]));
    case Ops::LOG2: return r(std::log2(v[0]));
    case Ops::SIN: return r(std::sin(v[0]));
    case Ops::COS: return r(std::cos(v[0]));
    case Ops::SQRT: return r(std::sqrt(v[0]));
    case Ops::RECIPROCAL: return r(1.0 / v[0]);
    case Ops::ADD: return r(v[0] + v[1]);
    case Ops::SUB: return r(v[0] - v[1]);
    case Ops::MUL: return r(v[0] * v[1]);
    case Ops::FDIV: return r(v[0] / v[1]);
    case Ops::MAX: return (v[0] > v[1] || std::isnan(v[0])) ? v[0] : v[1];  // NaN wins, as in PyTorch
    case Ops::CMPLT: return v[0] < v[1];
    case Ops::CMPNE: return v[0] != v[1];
    case Ops::CMPEQ: return v[0] == v[1];
    case Ops::WHERE: return v[0] != 0 ? v[1] : v[2];
    default: cannot_fold(op, d);
  }
}

}  // namespace sym

// =============================================================================================

double exec_alu(Ops op, DType dtype, const std::vector<double>& operands) {
  if (sym::arity(op) == 0) throw_error("exec_alu: ", op_name(op), " is not an ALU op");
  if (static_cast<int>(operands.size()) != sym::arity(op))
    throw_error("exec_alu: ", op_name(op), " takes ", sym::arity(op), " operands, got ", operands.size());
  DType d = dtype.base();
  if (d.ptr) throw_error("exec_alu: cannot fold on pointer dtype ", dtype.name());
  if (d.is_float()) return sym::exec_float(op, d, operands);
  if (!sym::is_intlike(d)) sym::cannot_fold(op, dtype);
  std::vector<int64_t> v;
  for (size_t i = 0; i < operands.size(); i++)
    v.push_back(op == Ops::WHERE && i == 0 ? operands[i] != 0 : sym::int_from_double(d, operands[i]));
  int64_t r = sym::exec_int(op, d, v);
  return group::Comparison.has(op) ? static_cast<double>(r) : sym::int_to_double(d, r);
}

}  // namespace kiln
