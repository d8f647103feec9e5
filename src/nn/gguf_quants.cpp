// ggml's tensor types: the block layouts of its quantized formats (ggml-common.h), decoding them as
// dequantize_row_* does (ggml-quants.c), and the round-to-nearest Q8_0 / Q4_0 encoders.
//
// Every decoder is bit-exact with ggml's float code: each product of a scale (an fp16, so 11
// significant bits) with small integers has at most 24 significant bits, so it is exact in float, and
// the one subtraction or addition after it rounds once, as it does in ggml (with or without FMA).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include "kiln/error.h"
#include "kiln/nn/gguf.h"

namespace kiln::nn::state {
namespace {

static_assert(std::endian::native == std::endian::little, "GGUF blocks are little-endian");

float fp16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h >> 15) << 31;
  const uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = std::ldexp(float(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  const uint32_t bits = exponent == 31 ? sign | 0x7f800000u | (mantissa << 13)       // inf, NaN
                                       : sign | ((exponent + 112) << 23) | (mantissa << 13);
  return std::bit_cast<float>(bits);
}

// Round to nearest, ties to even, as F16C's vcvtps2ph (ggml's GGML_FP32_TO_FP16 on x86).
uint16_t float_to_fp16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000);
  const uint32_t abs = x & 0x7fffffff;
  if (abs > 0x7f800000) return sign | 0x7e00 | uint16_t((abs >> 13) & 0x3ff);  // NaN stays NaN
  if (abs >= 0x477ff000) return sign | 0x7c00;  // rounds past 65504: inf
  if (abs < 0x38800000) {  // below fp16's smallest normal: a multiple of 2^-24, rounded
    const float magnitude = std::bit_cast<float>(abs);
    return sign | uint16_t(std::nearbyint(std::ldexp(magnitude, 24)));  // the default mode: ties to even
  }
  const uint32_t rounded = abs + 0xfff + ((abs >> 13) & 1);  // ties to even on the 13 dropped bits
  return sign | uint16_t((rounded - (112u << 23)) >> 13);
}

uint16_t u16_at(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
float fp16_at(const uint8_t* p) { return fp16_to_float(u16_at(p)); }
uint32_t u32_at(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

// ---- block decoders: one block's bytes to block_size floats

// Q4_0 (18 bytes): fp16 d, 16 bytes of nibbles; element j is the low nibble of byte j, element j+16 the high.
void decode_q4_0(const uint8_t* b, float* y) {
  const float d = fp16_at(b);
  for (int j = 0; j < 16; ++j) {
    y[j] = float((b[2 + j] & 0xf) - 8) * d;
    y[j + 16] = float((b[2 + j] >> 4) - 8) * d;
  }
}

// Q4_1 (20 bytes): fp16 d, fp16 m, nibbles as Q4_0, unsigned: q * d + m.
void decode_q4_1(const uint8_t* b, float* y) {
  const float d = fp16_at(b), m = fp16_at(b + 2);
  for (int j = 0; j < 16; ++j) {
    y[j] = float(b[4 + j] & 0xf) * d + m;
    y[j + 16] = float(b[4 + j] >> 4) * d + m;
  }
}

// The fifth bits of Q5_0 / Q5_1: bit j of the 32-bit qh belongs to element j.
int fifth_bit(uint32_t qh, int j) { return int((qh >> j) & 1) << 4; }

// Q5_0 (22 bytes): fp16 d, uint32 qh, nibbles as Q4_0; (q | bit << 4) - 16.
void decode_q5_0(const uint8_t* b, float* y) {
  const float d = fp16_at(b);
  const uint32_t qh = u32_at(b + 2);
  for (int j = 0; j < 16; ++j) {
    y[j] = float(((b[6 + j] & 0xf) | fifth_bit(qh, j)) - 16) * d;
    y[j + 16] = float(((b[6 + j] >> 4) | fifth_bit(qh, j + 16)) - 16) * d;
  }
}

// Q5_1 (24 bytes): fp16 d, fp16 m, uint32 qh, nibbles; unsigned 5-bit q * d + m.
void decode_q5_1(const uint8_t* b, float* y) {
  const float d = fp16_at(b), m = fp16_at(b + 2);
  const uint32_t qh = u32_at(b + 4);
  for (int j = 0; j < 16; ++j) {
    y[j] = float((b[8 + j] & 0xf) | fifth_bit(qh, j)) * d + m;
    y[j + 16] = float((b[8 + j] >> 4) | fifth_bit(qh, j + 16)) * d + m;
  }
}

// Q8_0 (34 bytes): fp16 d, 32 int8.
void decode_q8_0(const uint8_t* b, float* y) {
  const float d = fp16_at(b);
  for (int j = 0; j < 32; ++j) y[j] = float(int8_t(b[2 + j])) * d;
}

// The 6-bit scale and min of sub-block j (of 8) in the 12 packed bytes of Q4_K / Q5_K: the first four
// in the low 6 bits of bytes j and j+4; the last four from nibbles of bytes 8..11 and the top 2 bits
// of bytes 0..7.
std::pair<int, int> k_scale_min(const uint8_t* s, int j) {
  if (j < 4) return {s[j] & 63, s[j + 4] & 63};
  return {(s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4), (s[j + 4] >> 4) | ((s[j] >> 6) << 4)};
}

// Q4_K (144 bytes, 256 values): fp16 d, fp16 dmin, 12 bytes of scales, 128 bytes of nibbles. Each 64
// values share 32 bytes: the low nibbles are sub-block 2i, the high ones 2i+1.
void decode_q4_k(const uint8_t* b, float* y) {
  const float d = fp16_at(b), dmin = fp16_at(b + 2);
  const uint8_t *scales = b + 4, *qs = b + 16;
  for (int i = 0; i < 4; ++i, qs += 32, y += 64) {
    auto [s0, m0] = k_scale_min(scales, 2 * i);
    auto [s1, m1] = k_scale_min(scales, 2 * i + 1);
    const float d0 = d * float(s0), min0 = dmin * float(m0), d1 = d * float(s1), min1 = dmin * float(m1);
    for (int l = 0; l < 32; ++l) {
      y[l] = d0 * float(qs[l] & 0xf) - min0;
      y[l + 32] = d1 * float(qs[l] >> 4) - min1;
    }
  }
}

// Q5_K (176 bytes): as Q4_K with 32 bytes qh of fifth bits before the nibbles; sub-block k takes bit k
// of qh[l].
void decode_q5_k(const uint8_t* b, float* y) {
  const float d = fp16_at(b), dmin = fp16_at(b + 2);
  const uint8_t *scales = b + 4, *qh = b + 16, *qs = b + 48;
  for (int i = 0; i < 4; ++i, qs += 32, y += 64) {
    auto [s0, m0] = k_scale_min(scales, 2 * i);
    auto [s1, m1] = k_scale_min(scales, 2 * i + 1);
    const float d0 = d * float(s0), min0 = dmin * float(m0), d1 = d * float(s1), min1 = dmin * float(m1);
    for (int l = 0; l < 32; ++l) {
      y[l] = d0 * float((qs[l] & 0xf) + (((qh[l] >> (2 * i)) & 1) << 4)) - min0;
      y[l + 32] = d1 * float((qs[l] >> 4) + (((qh[l] >> (2 * i + 1)) & 1) << 4)) - min1;
    }
  }
}

// Q6_K (210 bytes): 128 bytes ql (low 4 bits), 64 bytes qh (high 2 bits), 16 int8 scales (one per 16
// values), fp16 d. Each half of 128 values takes 64 bytes of ql and 32 of qh; value 32k + l of the half
// (k = 0..3) has ql's nibble k / 2 of byte l + 32 (k % 2) and bits 2k..2k+1 of qh[l].
void decode_q6_k(const uint8_t* b, float* y) {
  const float d = fp16_at(b + 208);
  const uint8_t *ql = b, *qh = b + 128;
  const auto* scales = reinterpret_cast<const int8_t*>(b + 192);
  for (int half = 0; half < 2; ++half, ql += 64, qh += 32, scales += 8, y += 128) {
    for (int l = 0; l < 32; ++l) {
      for (int k = 0; k < 4; ++k) {
        const int low = (ql[l + 32 * (k % 2)] >> (4 * (k / 2))) & 0xf;
        const int q = (low | (((qh[l] >> (2 * k)) & 3) << 4)) - 32;
        y[l + 32 * k] = d * float(scales[l / 16 + 2 * k]) * float(q);
      }
    }
  }
}

// ---- plain types, one element at a time

template <class T>
void decode_plain(const uint8_t* b, float* y) {
  T v;
  std::memcpy(&v, b, sizeof(T));
  *y = static_cast<float>(v);
}
void decode_f16(const uint8_t* b, float* y) { *y = fp16_at(b); }
void decode_bf16(const uint8_t* b, float* y) { *y = std::bit_cast<float>(uint32_t(u16_at(b)) << 16); }

struct TypeEntry {
  GGMLTypeTraits traits;
  void (*decode)(const uint8_t* block, float* out);
};

const TypeEntry kTypes[] = {
    {{GGMLType::F32, "F32", 1, 4, dtypes::float32}, decode_plain<float>},
    {{GGMLType::F16, "F16", 1, 2, dtypes::float16}, decode_f16},
    {{GGMLType::BF16, "BF16", 1, 2, dtypes::bfloat16}, decode_bf16},
    {{GGMLType::F64, "F64", 1, 8, dtypes::float64}, decode_plain<double>},
    {{GGMLType::I8, "I8", 1, 1, dtypes::int8}, decode_plain<int8_t>},
    {{GGMLType::I16, "I16", 1, 2, dtypes::int16}, decode_plain<int16_t>},
    {{GGMLType::I32, "I32", 1, 4, dtypes::int32}, decode_plain<int32_t>},
    {{GGMLType::I64, "I64", 1, 8, dtypes::int64}, decode_plain<int64_t>},
    {{GGMLType::Q4_0, "Q4_0", 32, 18, dtypes::void_}, decode_q4_0},
    {{GGMLType::Q4_1, "Q4_1", 32, 20, dtypes::void_}, decode_q4_1},
    {{GGMLType::Q5_0, "Q5_0", 32, 22, dtypes::void_}, decode_q5_0},
    {{GGMLType::Q5_1, "Q5_1", 32, 24, dtypes::void_}, decode_q5_1},
    {{GGMLType::Q8_0, "Q8_0", 32, 34, dtypes::void_}, decode_q8_0},
    {{GGMLType::Q4_K, "Q4_K", 256, 144, dtypes::void_}, decode_q4_k},
    {{GGMLType::Q5_K, "Q5_K", 256, 176, dtypes::void_}, decode_q5_k},
    {{GGMLType::Q6_K, "Q6_K", 256, 210, dtypes::void_}, decode_q6_k},
};

std::string known_types() {
  std::string known;
  for (const TypeEntry& e : kTypes) known += std::string(known.empty() ? "" : ", ") + e.traits.name;
  return known;
}

const TypeEntry& entry_of(GGMLType type) {
  for (const TypeEntry& e : kTypes)
    if (e.traits.type == type) return e;
  throw_error("unknown ggml tensor type ", uint32_t(type), "; expected one of ", known_types());
}

// ---- encoders

// Q8_0: d = max|x| / 127, q = round(x / d).
void encode_q8_0(const float* x, uint8_t* b) {
  float amax = 0;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
  const uint16_t d16 = float_to_fp16(d);
  std::memcpy(b, &d16, 2);
  for (int j = 0; j < 32; ++j) b[2 + j] = uint8_t(int8_t(std::round(x[j] * id)));
}

// Q4_0: the value of largest magnitude maps to -8 (d = max / -8); q = min(15, trunc(x / d + 8.5)).
void encode_q4_0(const float* x, uint8_t* b) {
  float amax = 0, max = 0;
  for (int j = 0; j < 32; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -8.0f, id = d != 0 ? 1.0f / d : 0.0f;
  const uint16_t d16 = float_to_fp16(d);
  std::memcpy(b, &d16, 2);
  auto nibble = [&](float v) { return std::min(15, int(int8_t(v * id + 8.5f))); };
  for (int j = 0; j < 16; ++j) b[2 + j] = uint8_t(nibble(x[j]) | (nibble(x[16 + j]) << 4));
}

}  // namespace

const GGMLTypeTraits& ggml_traits(GGMLType type) { return entry_of(type).traits; }

GGMLType ggml_type_named(const std::string& name) {
  for (const TypeEntry& e : kTypes)
    if (name == e.traits.name) return e.traits.type;
  throw_error("unknown ggml type name \"", name, "\"; expected one of ", known_types());
}

uint64_t ggml_nbytes(GGMLType type, int64_t numel) {
  const GGMLTypeTraits& t = ggml_traits(type);
  if (numel < 0 || numel % t.block_size != 0)
    throw_error(t.name, " stores blocks of ", t.block_size, " values; ", numel, " is not a whole number of them");
  return static_cast<uint64_t>(numel / t.block_size) * static_cast<uint64_t>(t.block_bytes);
}

std::vector<float> dequantize(GGMLType type, std::span<const uint8_t> bytes, int64_t numel) {
  const TypeEntry& e = entry_of(type);
  const uint64_t expected = ggml_nbytes(type, numel);
  if (bytes.size() != expected)
    throw_error("dequantize: ", numel, " values of ", e.traits.name, " take ", expected, " bytes, got ", bytes.size());
  std::vector<float> out(static_cast<size_t>(numel));
  const auto block = static_cast<size_t>(e.traits.block_size), block_bytes = static_cast<size_t>(e.traits.block_bytes);
  for (size_t i = 0; i * block < out.size(); ++i) e.decode(bytes.data() + i * block_bytes, out.data() + i * block);
  return out;
}

std::vector<uint8_t> quantize(GGMLType type, std::span<const float> values) {
  if (type != GGMLType::Q8_0 && type != GGMLType::Q4_0)
    throw_error("quantize: kiln encodes Q8_0 and Q4_0, not ", ggml_traits(type).name);
  std::vector<uint8_t> out(ggml_nbytes(type, static_cast<int64_t>(values.size())));
  for (size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i])) throw_error("quantize: value ", i, " is ", values[i], "; expected a finite number");
  const auto block_bytes = static_cast<size_t>(ggml_traits(type).block_bytes);
  auto encode = type == GGMLType::Q8_0 ? encode_q8_0 : encode_q4_0;
  for (size_t i = 0; i * 32 < values.size(); ++i)
    encode(values.data() + i * 32, out.data() + i * block_bytes);
  return out;
}

}  // namespace kiln::nn::state
