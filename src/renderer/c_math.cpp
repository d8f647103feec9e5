// exp and exp2 of float32 for the C language as inline arithmetic, for scalars and for each vector
// type. glibc's expf is one call per value, and clang turns loops of it only into calls of libmvec's
// 8-lane AVX2 version (clang 14 knows no AVX-512 one); plain arithmetic the compiler vectorizes at
// the registers' full width, without calls (a softmax's exp-and-sum is bound by its exps).
//
// The method (Cephes' expf): x = n ln2 + r with n an integer and |r| <= ln2/2, so e^x = 2^n e^r;
// e^r comes from a polynomial 1 + r + r^2 q(r), q of degree 4 fitted for the least maximum error
// on |r| <= ln2/2 (4.4e-9 relative, far below float rounding: within 1 ULP of the float nearest the
// true value; tests check it against double-precision exp). Cephes' Taylor-like q has degree 5:
// one multiply-add more on the two pipes that bound the function. n is rounded by adding
// 1.5 * 2^23, which leaves it in the low mantissa bits, and 2^n is built in the exponent bits as
// two factors 2^(n/2) 2^(n-n/2), so results down in the subnormals (n >= -150) and up to
// overflow (n = 128 -> inf) stay right.
// Inputs are clamped to where that holds, by comparisons that are false for NaN and so pass it
// through: a NaN input makes every later step NaN, without a final select (~10% of the function).
#include "renderer/c_math.h"

namespace kiln::renderer {
namespace {

// How a scalar and a vector of floats are written: selects, bit casts between float and int32,
// and a constant of the type.
struct Syntax {
  std::string F, I;  // the float type, the int32 type of the same shape
  bool vector;
  std::string select(const std::string& mask, const std::string& a, const std::string& b) const {
    if (!vector) return "(" + mask + " ? " + a + " : " + b + ")";
    return "(" + F + ")(((" + I + ")(" + mask + ") & (" + I + ")" + a + ") | (~(" + I + ")(" + mask + ") & (" + I +
           ")" + b + "))";
  }
  std::string to_int(const std::string& x) const {
    return vector ? "((" + I + ")" + x + ")" : "KILN_BITCAST(int, float, " + x + ")";
  }
  std::string to_float(const std::string& x) const {
    return vector ? "((" + F + ")" + x + ")" : "KILN_BITCAST(float, int, " + x + ")";
  }
  // Vectors need a whole vector where a select or cast takes one.
  std::string constant(const std::string& c) const { return vector ? "((" + F + "){} + " + c + ")" : c; }
};

// e^x (exp) or 2^x (exp2) of x in a function `name(F x)`.
std::string exp_function(const std::string& name, const Syntax& s, bool base2) {
  // exp2 rounds x itself and scales the fraction by ln2; exp divides by ln2 first and takes
  // x - n ln2 in two steps (ln2's leading bits, then the rest), exact for |n| <= 2^9.
  const std::string hi = s.constant(base2 ? "128.5f" : "88.8f"), lo = s.constant(base2 ? "-150.5f" : "-104.0f");
  const std::string scaled = base2 ? "c" : "c * 1.44269504f";
  const std::string reduced = base2 ? "(c - n) * 0.693147181f" : "(c - n * 0.693359375f) - n * -2.12194440e-4f";
  std::string vector_int_type;
  if (s.vector) vector_int_type = "  typedef int " + s.I + " __attribute__((vector_size(sizeof(" + s.F + "))));\n";
  return "static inline " + s.F + " " + name + "(" + s.F + " x) {\n" + vector_int_type +
         "  " + s.F + " c = " + s.select(hi + " < x", hi, "x") + ";\n" +
         "  c = " + s.select(lo + " > c", lo, "c") + ";\n" +
         "  " + s.F + " v = " + scaled + " + 12582912.0f, n = v - 12582912.0f, r = " + reduced + ";\n" +
         "  " + s.I + " k = " + s.to_int("v") + " - 0x4B400000, h = k >> 1;\n" +
         "  " + s.F + " p = (((((1.3950485617e-3f * r + 8.3688899068e-3f) * r + 4.1666205878e-2f) * r + "
         "1.6666518834e-1f) * r + 5.0000000952e-1f) * r) * r + r + 1.0f;\n" +
         "  return p * " + s.to_float("((h + 127) << 23)") + " * " + s.to_float("((k - h + 127) << 23)") + ";\n}\n";
}

}  // namespace

std::optional<std::string> c_inline_math_name(const std::string& f, const std::string& float_type) {
  if (f != "exp" && f != "exp2") return std::nullopt;
  return "kiln_" + f + "_" + float_type;
}

std::string c_inline_math_definition(const std::string& f, const std::string& float_type, bool vector) {
  const std::optional<std::string> name = c_inline_math_name(f, float_type);
  if (!name) return "";
  const Syntax syntax{float_type, vector ? "kiln_int_of_" + float_type : "int", vector};
  return exp_function(*name, syntax, f == "exp2");
}

}  // namespace kiln::renderer
