#pragma once
// Constant evaluation for the symbolic simplifier (kiln/ir/symbolic.h): one ALU op on constant
// operands with C semantics per dtype, on the int64 form integer and bool CONSTs keep their
// value in. const_eval.cpp also holds exec_alu, which evaluates through these.
#include <cstdint>
#include <span>

#include "kiln/error.h"
#include "kiln/ir/uop.h"

namespace kiln::sym {

inline bool is_intlike(DType d) { return !d.ptr && (d.is_int() || d.is_bool()); }
inline bool is_int(DType d) { return !d.ptr && d.is_int(); }
// Integer dtypes whose every value is its own int64: the index math (linear.h) works on these.
inline bool is_index_int(DType d) { return is_int(d) && d.scalar != ScalarType::UInt64; }

inline int arity(Ops op) {
  if (group::Unary.has(op)) return 1;
  if (group::Binary.has(op)) return 2;
  if (group::Ternary.has(op)) return 3;
  return 0;
}

// Integer and bool CONSTs keep their C value in an int64 arg (as UOp::const_ does): signed types
// sign-extended, narrower unsigned zero-extended, uint64 as its bit pattern, bool as 0/1.
// wrap() is a C conversion of a 64-bit pattern to that form.
inline int64_t wrap(DType d, uint64_t bits) {
  switch (d.scalar) {
    case ScalarType::Bool: return bits != 0;
    case ScalarType::Int8: return static_cast<int8_t>(bits);
    case ScalarType::Int16: return static_cast<int16_t>(bits);
    case ScalarType::Int32: return static_cast<int32_t>(bits);
    case ScalarType::UInt8: return static_cast<uint8_t>(bits);
    case ScalarType::UInt16: return static_cast<uint16_t>(bits);
    case ScalarType::UInt32: return static_cast<uint32_t>(bits);
    case ScalarType::Int64: case ScalarType::UInt64: return static_cast<int64_t>(bits);
    default: throw_error("exec_alu: ", d.name(), " is not an integer dtype");
  }
}
inline int64_t wrap(DType d, int64_t v) { return wrap(d, static_cast<uint64_t>(v)); }
inline bool representable(DType d, int64_t v) { return wrap(d, v) == v; }

inline double int_to_double(DType d, int64_t v) {
  return d.scalar == ScalarType::UInt64 ? static_cast<double>(static_cast<uint64_t>(v)) : static_cast<double>(v);
}

// C conversion of a floating value to an integer dtype: truncation toward zero; bool is `v != 0`.
// Values out of the dtype's range (undefined in C) wrap modulo 2^64 and then to the width;
// NaN and infinities have no integer value and throw.
int64_t int_from_double(DType d, double v);

// Rounds `v` to the float dtype `d`: to nearest even, with subnormals and overflow to infinity.
double round_float(DType d, double v);

// Integer/bool ALU on canonical values of dtype `d` (for comparisons the operands' dtype, result
// 0/1; for WHERE the result dtype, operand 0 is the condition). Arithmetic is done on 64-bit
// patterns and wrapped to the width, which is what C computes (narrow types promote to int and are
// converted back; bool results are `!= 0`).
int64_t exec_int(Ops op, DType d, std::span<const int64_t> v);

// Float ALU: operands are rounded to `d`, computed in double, and the result rounded to `d`
// (for float32 that is "rounded through float"; + - * / sqrt are then correctly rounded).
// MAX is (a > b ? a : b). Comparisons return 0/1.
double exec_float(Ops op, DType d, std::span<const double> in);

}  // namespace kiln::sym
