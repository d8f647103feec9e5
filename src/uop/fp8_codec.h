#pragma once
// fp8 <-> float32 bit conversions, written once in plain C: kiln compiles them for its host conversions
// (constant folding, tensor data) and the C-style renderers paste their text (kFp8CodecSource) into
// kernels, so host and kernels round alike.
//
// A format is (mantissa bits `man`, exponent `bias`, `kind`): kind 0 is OCP e4m3fn (no infinities, NaN is
// S.1111.111, overflow gives NaN), 1 is e5m2 (IEEE-like: overflow gives inf), 2 is fnuz (no infinities, no
// -0, NaN is 0x80). Rounding is to nearest even, as PyTorch's float8 types round.
#define KILN_FP8_CODEC                                                                                         \
  static inline unsigned char kiln_fp8_from_f32_bits(unsigned int x, int man, int bias, int kind) {            \
    unsigned int sign = (x >> 24) & 0x80, a = x & 0x7fffffffu;                                                 \
    unsigned int nan_code = kind == 2 ? 0x80 : sign | 0x7f;                                                    \
    unsigned int max_code = kind == 0 ? 0x7e : kind == 1 ? 0x7b : 0x7f;  /* largest finite */                  \
    if (a > 0x7f800000u) return (unsigned char)nan_code;                                                       \
    if (a == 0x7f800000u) return (unsigned char)(kind == 1 ? sign | 0x7c : nan_code);                          \
    int e = (int)(a >> 23) - 127, min_e = 1 - bias;                                                            \
    /* float32 subnormals are far below the smallest fp8 subnormal */                                          \
    int shift = (a >> 23) == 0 ? 32 : 23 - man + (e < min_e ? min_e - e : 0);                                  \
    unsigned int m = (a & 0x7fffffu) | 0x800000u, code = 0;                                                    \
    if (shift <= 24) {                                                                                         \
      unsigned int q = m >> shift, rest = m & ((1u << shift) - 1), tie = 1u << (shift - 1);                    \
      if (rest > tie || (rest == tie && (q & 1))) q++;                                                         \
      /* q counts quanta, the implicit bit included: a carry moves into the exponent field */                  \
      code = ((unsigned int)(e > min_e ? e - min_e : 0) << man) + q;                                           \
    }                                                                                                          \
    if (code > max_code) return (unsigned char)(kind == 1 ? sign | 0x7c : nan_code);                           \
    if (kind == 2 && code == 0) return 0;                                                                      \
    return (unsigned char)(sign | code);                                                                       \
  }                                                                                                            \
  static inline unsigned int kiln_fp8_to_f32_bits(unsigned char b, int man, int bias, int kind) {              \
    unsigned int sign = (unsigned int)(b & 0x80) << 24, m = b & ((1u << man) - 1);                             \
    int ex = (b & 0x7f) >> man, ex_max = (1 << (7 - man)) - 1;                                                 \
    if (kind == 2 && b == 0x80) return 0x7fc00000u;                                                            \
    if (kind == 0 && ex == ex_max && m == (1u << man) - 1) return sign | 0x7fc00000u;                          \
    if (kind == 1 && ex == ex_max) return sign | (m ? 0x7fc00000u : 0x7f800000u);                              \
    if (ex == 0) {                                                                                             \
      if (m == 0) return sign;                                                                                 \
      /* subnormal: normalize the mantissa's leading one into the implicit bit */                              \
      ex = 1;                                                                                                  \
      while (!(m & (1u << man))) { m <<= 1; ex--; }                                                            \
      m &= (1u << man) - 1;                                                                                    \
    }                                                                                                          \
    return sign | ((unsigned int)(ex - bias + 127) << 23) | (m << (23 - man));                                 \
  }

#define KILN_FP8_STRINGIFY_(...) #__VA_ARGS__
#define KILN_FP8_STRINGIFY(...) KILN_FP8_STRINGIFY_(__VA_ARGS__)
inline constexpr const char* kFp8CodecSource = KILN_FP8_STRINGIFY(KILN_FP8_CODEC) "\n";

namespace kiln {
struct DType;
struct Fp8Format {
  int man, bias, kind;  // the codec's parameters above
  const char* suffix;   // kernels' conversion functions: kiln_<suffix>_to_float, kiln_float_to_<suffix>
};
const Fp8Format& fp8_format(DType d);  // throws for a dtype that is not fp8
}  // namespace kiln
