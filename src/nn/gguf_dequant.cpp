// dequantize_lazy: ggml's block formats decoded by tensor ops over the raw uint8 blocks, so the decode
// fuses into whatever kernel reads the weight. Each decoder follows its twin in gguf_quants.cpp, in the
// same order of float operations, so the results agree to the bit.
#include "kiln/error.h"
#include "kiln/nn/gguf.h"

namespace kiln::nn::state {
namespace {

// Bytes [begin, end) of every block of (blocks, block_bytes).
Tensor field(const Tensor& b, int64_t begin, int64_t end) { return b.shrink({{0, b.shape()[0]}, {begin, end}}); }

// The little-endian fp16 at byte `at` of every block, as float32: (blocks, 1).
Tensor fp16(const Tensor& b, int64_t at) { return field(b, at, at + 2).bitcast(dtypes::float16).cast(dtypes::float32); }

Tensor mask(const Tensor& t, int64_t bits) { return t.bitwise_and(Tensor::full({}, bits, t.dtype())); }

// Splits each byte of `bytes` (..., n) into its 8/width fields of `width` bits, lowest first, on a new
// axis before the last: (..., 8/width, n).
Tensor bit_fields(const Tensor& bytes, int width) {
  Shape shifts_shape(bytes.ndim() + 1, 1);
  shifts_shape[bytes.ndim() - 1] = 8 / width;
  const Tensor shifts = Tensor::arange(0, 8, width, bytes.dtype()).reshape(shifts_shape);
  return mask(bytes.unsqueeze(-2).rshift(shifts), (1 << width) - 1);
}

// The 32 fifth bits of Q5_0 / Q5_1 (a little-endian uint32 at byte `at`), each as 0 or 16: (blocks, 32).
Tensor fifth_bits(const Tensor& b, int64_t at) {
  const Tensor qh = field(b, at, at + 4).bitcast(dtypes::uint32);
  return mask(qh.rshift(Tensor::arange(0, 32, 1, dtypes::uint32).reshape({1, 32})), 1).lshift(4);
}

// Q4_0/Q4_1/Q5_0/Q5_1's 32 nibbles at byte `at`: element j the low nibble of byte j, j+16 the high one.
Tensor nibbles32(const Tensor& b, int64_t at) { return bit_fields(field(b, at, at + 16), 4).flatten(1); }

Tensor f32(const Tensor& t) { return t.cast(dtypes::float32); }

Tensor q4_0(const Tensor& b) { return f32(nibbles32(b, 2).cast(dtypes::int32) - 8) * fp16(b, 0); }
Tensor q4_1(const Tensor& b) { return f32(nibbles32(b, 4)) * fp16(b, 0) + fp16(b, 2); }
Tensor q5_0(const Tensor& b) {
  return f32(nibbles32(b, 6).cast(dtypes::uint32).bitwise_or(fifth_bits(b, 2)).cast(dtypes::int32) - 16) * fp16(b, 0);
}
Tensor q5_1(const Tensor& b) {
  return f32(nibbles32(b, 8).cast(dtypes::uint32).bitwise_or(fifth_bits(b, 4))) * fp16(b, 0) + fp16(b, 2);
}
Tensor q8_0(const Tensor& b) { return f32(field(b, 2, 34).bitcast(dtypes::int8)) * fp16(b, 0); }

// Q4_K / Q5_K: the eight 6-bit sub-block scales and mins packed in the 12 bytes at 4, as float32
// (blocks, 8, 1): the first four in the low 6 bits of bytes 0..3 (scales) and 4..7 (mins); the last four
// from the nibbles of bytes 8..11 and the top 2 bits of bytes 0..7.
std::pair<Tensor, Tensor> k_scales_mins(const Tensor& b) {
  const Tensor lo = field(b, 4, 8), mid = field(b, 8, 12), hi = field(b, 12, 16);
  const Tensor scales = Tensor::cat({mask(lo, 63), mask(hi, 0xf).bitwise_or(lo.rshift(6).lshift(4))}, 1);
  const Tensor mins = Tensor::cat({mask(mid, 63), hi.rshift(4).bitwise_or(mid.rshift(6).lshift(4))}, 1);
  return {f32(scales).unsqueeze(-1), f32(mins).unsqueeze(-1)};
}

// Q4_K / Q5_K's 256 values from q, (blocks, 8, 32) unsigned per sub-block: d * scale * q - dmin * min.
// The scales are broadcast over their sub-blocks as decoded, before the products: a kernel then decodes
// them where it reads q (once per run of its unrolled loop) instead of storing d * scale first.
Tensor k_quant_values(const Tensor& b, const Tensor& q) {
  auto [scales, mins] = k_scales_mins(b);
  const Shape& values = q.shape();
  const Tensor d = fp16(b, 0).unsqueeze(-1).expand(values), dmin = fp16(b, 2).unsqueeze(-1).expand(values);
  return ((d * scales.expand(values)) * f32(q) - dmin * mins.expand(values)).flatten(1);
}

// The 128 bytes of nibbles at `at`: each 32 bytes hold sub-block 2i (low nibbles) and 2i+1 (high): (blocks, 8, 32).
Tensor k_nibbles(const Tensor& b, int64_t at) {
  const int64_t blocks = b.shape()[0];
  return bit_fields(field(b, at, at + 128).reshape({blocks, 4, 32}), 4).reshape({blocks, 8, 32});
}

Tensor q4_k(const Tensor& b) { return k_quant_values(b, k_nibbles(b, 16)); }
Tensor q5_k(const Tensor& b) {
  const Tensor fifth = bit_fields(field(b, 16, 48), 1).lshift(4);  // sub-block k takes bit k of qh[l]
  return k_quant_values(b, k_nibbles(b, 48).bitwise_or(fifth));
}

// Q6_K: ql (128 bytes), qh (64), 16 int8 scales, fp16 d. Half h of the 256 values, element 32k + l,
// has ql's nibble k / 2 of byte 64h + l + 32 (k % 2), bits 2k..2k+1 of qh[32h + l] and scale 8h + 2k + l / 16.
Tensor q6_k(const Tensor& b) {
  const int64_t blocks = b.shape()[0];
  // ql as (blocks, h, k % 2, l) -> nibbles (blocks, h, k % 2, k / 2, l) -> (blocks, h, k, l)
  const Tensor low =
      bit_fields(field(b, 0, 128).reshape({blocks, 2, 2, 32}), 4).permute({0, 1, 3, 2, 4}).reshape({blocks, 2, 4, 32});
  const Tensor high = bit_fields(field(b, 128, 192).reshape({blocks, 2, 32}), 2);  // (blocks, h, k, l)
  const Tensor q = f32(low.bitwise_or(high.lshift(4)).cast(dtypes::int32) - 32).reshape({blocks, 2, 4, 2, 16});
  const Tensor scales = f32(field(b, 192, 208).bitcast(dtypes::int8)).reshape({blocks, 2, 4, 2, 1});
  return (fp16(b, 208).reshape({blocks, 1, 1, 1, 1}) * scales * q).flatten(1);
}

struct Decoder {
  GGMLType type;
  Tensor (*decode)(const Tensor& blocks);  // (blocks, block_bytes) uint8 -> (blocks, block_size) float32
};

const Decoder kDecoders[] = {
    {GGMLType::Q4_0, q4_0}, {GGMLType::Q4_1, q4_1}, {GGMLType::Q5_0, q5_0}, {GGMLType::Q5_1, q5_1},
    {GGMLType::Q8_0, q8_0}, {GGMLType::Q4_K, q4_k}, {GGMLType::Q5_K, q5_k}, {GGMLType::Q6_K, q6_k},
};

}  // namespace

Tensor dequantize_lazy(const QuantizedTensor& q) {
  const GGMLTypeTraits& traits = ggml_traits(q.type);
  if (!traits.quantized()) throw_error("dequantize_lazy: ", traits.name, " is not a quantized type");
  const uint64_t nbytes = ggml_nbytes(q.type, kiln::prod(q.shape));
  if (q.blocks.dtype() != dtypes::uint8 || q.blocks.ndim() != 1 || static_cast<uint64_t>(q.blocks.numel()) != nbytes)
    throw_error("dequantize_lazy: ", traits.name, " ", shape_to_string(q.shape), " needs ", nbytes,
                " bytes as a 1-D uint8 tensor, got ", q.blocks.dtype().name(), " ", shape_to_string(q.blocks.shape()));
  const Tensor blocks = q.blocks.reshape({static_cast<int64_t>(nbytes) / traits.block_bytes, traits.block_bytes});
  for (const Decoder& d : kDecoders)
    if (d.type == q.type) return d.decode(blocks).reshape(q.shape);
  throw_error("dequantize_lazy: no decoder for ", traits.name);
}

Tensor linear_quantized(const Tensor& x, const QuantizedTensor& w) {
  // Runs of 16 values: the longest that every format stores as consecutive bytes under one scale
  // (Q4_0's 32 values are two runs of 16 nibbles; Q6_K scales each 16). Reduced as (K / 16, 16), the
  // kernel's vector loop runs along a run, reading bytes in order and each scale once per run; over
  // K as one axis it steps across rows, converting every byte and scale alone.
  constexpr int64_t kRun = 16;
  if (w.shape.size() != 2 || w.shape[1] % kRun != 0 || x.ndim() == 0 || x.shape().back() != w.shape[1])
    throw_error("linear_quantized: expected x (..., K) and a weight (N, K) with K a multiple of ", kRun, ", got x ",
                shape_to_string(x.shape()), " and weight ", shape_to_string(w.shape));
  const int64_t n_runs = w.shape[1] / kRun;
  Shape runs = x.shape();
  runs.back() = n_runs;
  runs.push_back(kRun);
  return (x.reshape(runs).unsqueeze(-3) * dequantize_lazy(w).reshape({w.shape[0], n_runs, kRun})).sum({-2, -1});
}

}  // namespace kiln::nn::state
