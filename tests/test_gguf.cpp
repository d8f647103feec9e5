// GGUF: dequantization of every block format against a float64 reference written from ggml's block
// layouts (bit reads, not kiln's decoders), quantization within each format's error, files built by
// hand byte by byte (so the reader is checked against the spec, not only against kiln's writer),
// round trips of every metadata kind, and every way a header can lie.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "temp_dir.h"
#include "error_message.h"
#include "kiln/counters.h"
#include "kiln/nn/gguf.h"
#include "kiln/nn/gguf_json.h"
#include "tensor/tensor_impl.h"

namespace {

using namespace kiln::nn::state;
using kiln::Shape;
using kiln::Tensor;
using kt::error_of;
namespace dtypes = kiln::dtypes;
namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ---- the float64 reference, from ggml-common.h's block structs and ggml-quants.c's dequantize_row_*

// IEEE binary16 by its definition.
double ref_fp16(uint16_t h) {
  const int sign = h >> 15, exponent = (h >> 10) & 31, mantissa = h & 1023;
  double magnitude = exponent == 0    ? std::ldexp(mantissa, -24)
                     : exponent == 31 ? (mantissa ? NAN : INFINITY)
                                      : std::ldexp(1024 + mantissa, exponent - 25);
  return sign ? -magnitude : magnitude;
}

// `n` bits starting at bit `bit` of the little-endian bit string `b`.
int bits(const uint8_t* b, int bit, int n) {
  int v = 0;
  for (int i = 0; i < n; ++i) v |= ((b[(bit + i) / 8] >> ((bit + i) % 8)) & 1) << i;
  return v;
}
double fp16_at(const uint8_t* b, int byte) { return ref_fp16(uint16_t(bits(b, 8 * byte, 16))); }

// The K formats' 6-bit scale (what = 0) or min (what = 1) of sub-block s, from the 12 bytes at `s12`:
// sub-blocks 0-3 in the low 6 bits of bytes s and s+4; 4-7 a nibble of byte s+4 (low: scale, high:
// min) below the top 2 bits of byte s-4 (scale) or s (min).
int ref_k_scale(const uint8_t* s12, int s, int what) {
  if (s < 4) return bits(s12, 8 * (s + 4 * what), 6);
  return bits(s12, 8 * (s + 4) + 4 * what, 4) | bits(s12, 8 * (s - 4 + 4 * what) + 6, 2) << 4;
}

// Element i of one block, in float64.
double ref_element(GGMLType type, const uint8_t* b, int i) {
  switch (type) {
    case GGMLType::Q4_0: return (bits(b + 2, 8 * (i % 16) + 4 * (i / 16), 4) - 8) * fp16_at(b, 0);
    case GGMLType::Q4_1: return bits(b + 4, 8 * (i % 16) + 4 * (i / 16), 4) * fp16_at(b, 0) + fp16_at(b, 2);
    case GGMLType::Q5_0:
      return ((bits(b + 6, 8 * (i % 16) + 4 * (i / 16), 4) | bits(b + 2, i, 1) << 4) - 16) * fp16_at(b, 0);
    case GGMLType::Q5_1:
      return (bits(b + 8, 8 * (i % 16) + 4 * (i / 16), 4) | bits(b + 4, i, 1) << 4) * fp16_at(b, 0) + fp16_at(b, 2);
    case GGMLType::Q8_0: return int8_t(b[2 + i]) * fp16_at(b, 0);
    case GGMLType::Q4_K:
    case GGMLType::Q5_K: {
      // 64 values per 32 bytes of nibbles: low nibbles sub-block 2c, high 2c+1; Q5_K's fifth bit of
      // value l of sub-block s is bit s of qh byte l.
      const int c = i / 64, s = 2 * c + (i % 64) / 32, l = i % 32;
      const int qs_at = type == GGMLType::Q4_K ? 16 : 48;
      int q = bits(b + qs_at + 32 * c, 8 * l + 4 * ((i % 64) / 32), 4);
      if (type == GGMLType::Q5_K) q |= bits(b + 16, 8 * l + s, 1) << 4;
      return fp16_at(b, 0) * ref_k_scale(b + 4, s, 0) * q - fp16_at(b, 2) * ref_k_scale(b + 4, s, 1);
    }
    case GGMLType::Q6_K: {
      // Per 128 values (half h): 64 bytes of low nibbles, 32 bytes of 2-bit highs, 8 int8 scales.
      const int h = i / 128, k = (i % 128) / 32, l = i % 32;
      const int low = bits(b + 64 * h, 8 * (l + 32 * (k % 2)) + 4 * (k / 2), 4);
      const int high = bits(b + 128 + 32 * h, 8 * l + 2 * k, 2);
      const int scale = int8_t(b[192 + 8 * h + l / 16 + 2 * k]);
      return fp16_at(b, 208) * scale * ((low | high << 4) - 32);
    }
    default: ADD_FAILURE() << "no reference for " << ggml_traits(type).name; return 0;
  }
}

// Random blocks: random bytes, with every fp16 field a random finite fp16 (subnormals included), and
// sometimes inf or NaN.
// Random bytes, their fp16 scales finite but for one in 50 (inf or NaN) unless `finite`.
Bytes random_blocks(GGMLType type, int64_t nblocks, std::mt19937& rng, bool finite = false) {
  const GGMLTypeTraits& t = ggml_traits(type);
  Bytes bytes(static_cast<size_t>(nblocks * t.block_bytes));
  for (uint8_t& b : bytes) b = uint8_t(rng());
  std::vector<int> fp16_fields = {0};
  if (type == GGMLType::Q4_1 || type == GGMLType::Q5_1 || type == GGMLType::Q4_K || type == GGMLType::Q5_K)
    fp16_fields.push_back(2);
  if (type == GGMLType::Q6_K) fp16_fields = {208};
  for (int64_t i = 0; i < nblocks; ++i) {
    for (int at : fp16_fields) {
      uint16_t h = uint16_t(rng());
      if (finite || rng() % 50 != 0) h = uint16_t((h & 0x83ff) | ((rng() % 31) << 10));  // exponent 0..30: finite
      std::memcpy(&bytes[static_cast<size_t>(i * t.block_bytes + at)], &h, 2);
    }
  }
  return bytes;
}

// Equal bits, or both NaN.
bool same_float(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

const GGMLType kQuantTypes[] = {GGMLType::Q4_0, GGMLType::Q4_1, GGMLType::Q5_0, GGMLType::Q5_1,
                                GGMLType::Q8_0, GGMLType::Q4_K, GGMLType::Q5_K, GGMLType::Q6_K};

TEST(GGUFQuants, DequantizeMatchesTheFloat64ReferenceBitForBit) {
  std::mt19937 rng(31);
  for (GGMLType type : kQuantTypes) {
    const GGMLTypeTraits& t = ggml_traits(type);
    SCOPED_TRACE(t.name);
    const int64_t nblocks = 24;
    const Bytes bytes = random_blocks(type, nblocks, rng);
    const std::vector<float> got = dequantize(type, bytes, nblocks * t.block_size);
    ASSERT_EQ(got.size(), size_t(nblocks * t.block_size));
    int mismatches = 0;
    for (int64_t blk = 0; blk < nblocks; ++blk) {
      for (int i = 0; i < t.block_size; ++i) {
        // Products of an fp16 with small integers are exact in float64; the one sum rounds once.
        const float want = float(ref_element(type, &bytes[size_t(blk * t.block_bytes)], i));
        const float have = got[size_t(blk * t.block_size + i)];
        if (!same_float(want, have) && mismatches++ < 5)
          ADD_FAILURE() << "block " << blk << " element " << i << ": want " << want << " got " << have;
      }
    }
    EXPECT_EQ(mismatches, 0);
  }
}

Tensor bytes_tensor(const Bytes& bytes) {
  return Tensor::from_vector(std::vector<uint8_t>(bytes), {static_cast<int64_t>(bytes.size())});
}

TEST(GGUFQuants, LazyDequantizeEqualsDequantizeBitForBit) {
  std::mt19937 rng(7);
  for (GGMLType type : kQuantTypes) {
    const GGMLTypeTraits& t = ggml_traits(type);
    SCOPED_TRACE(t.name);
    const int64_t nblocks = 12, rows = 3;
    const Bytes bytes = random_blocks(type, nblocks, rng);
    const std::vector<float> want = dequantize(type, bytes, nblocks * t.block_size);
    const Tensor lazy = dequantize_lazy({type, {rows, nblocks * t.block_size / rows}, bytes_tensor(bytes)});
    EXPECT_EQ(lazy.dtype(), dtypes::float32);
    const std::vector<float> have = lazy.to_vector<float>();
    ASSERT_EQ(have.size(), want.size());
    int mismatches = 0;
    for (size_t i = 0; i < want.size(); ++i)
      if (!same_float(want[i], have[i]) && mismatches++ < 5)
        ADD_FAILURE() << "element " << i << ": want " << want[i] << " got " << have[i];
    EXPECT_EQ(mismatches, 0);
  }
  EXPECT_TRUE(contains(error_of([] { dequantize_lazy({GGMLType::Q8_0, {2, 32}, bytes_tensor(Bytes(34))}); }),
                       "needs 68 bytes"));
}

// x @ W.T over a Q8_0 weight is one kernel that reads the blocks: fewer bytes than W as float32.
TEST(GGUFQuants, MatmulDequantizesQ8_0InsideItsKernel) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  const int64_t out = 16, in = 128, batch = 2;
  std::vector<float> w(out * in), x(batch * in);
  for (float& v : w) v = normal(rng);
  for (float& v : x) v = normal(rng);
  const Bytes blocks = quantize(GGMLType::Q8_0, w);
  const std::vector<float> wq = dequantize(GGMLType::Q8_0, blocks, out * in);
  const Tensor W = dequantize_lazy({GGMLType::Q8_0, {out, in}, bytes_tensor(blocks)});
  const Tensor X = Tensor::from_vector(x, {batch, in}).realize();
  kiln::GlobalCounters::reset();
  const Tensor y = X.matmul(W.transpose()).realize();
  EXPECT_EQ(kiln::GlobalCounters::kernel_count, 1);
  EXPECT_LT(kiln::GlobalCounters::global_mem, out * in * 4);
  const std::vector<float> got = y.to_vector<float>();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t o = 0; o < out; ++o) {
      double want = 0;
      for (int64_t i = 0; i < in; ++i) want += double(x[b * in + i]) * wq[o * in + i];
      EXPECT_NEAR(got[b * out + o], want, 1e-4 * (1 + std::abs(want))) << b << "," << o;
    }
}

// linear_quantized against float64 sums over dequantize()'s values, for every format, with a batch of
// two leading dimensions.
TEST(GGUFQuants, LinearQuantizedMatchesFloat64) {
  std::mt19937 rng(13);
  std::normal_distribution<float> normal;
  const int64_t out = 8, in = 512, rows = 2, cols = 3;
  std::vector<float> x(rows * cols * in);
  for (float& v : x) v = normal(rng);
  const Tensor X = Tensor::from_vector(x, {rows, cols, in}).realize();
  for (GGMLType type : kQuantTypes) {
    const GGMLTypeTraits& t = ggml_traits(type);
    SCOPED_TRACE(t.name);
    const Bytes bytes = random_blocks(type, out * in / t.block_size, rng, true);
    const std::vector<float> w = dequantize(type, bytes, out * in);
    const QuantizedTensor W{type, {out, in}, bytes_tensor(bytes).realize()};
    // One row, as a decode step, is one kernel (more rows may store the decoded weight rather than
    // decode it per row), the K-quants' packed sub-block scales decoded in it too.
    kiln::GlobalCounters::reset();
    linear_quantized(X.shrink({{0, 1}, {0, 1}, {0, in}}), W).realize();
    EXPECT_EQ(kiln::GlobalCounters::kernel_count, 1);
    const Tensor y = linear_quantized(X, W);
    ASSERT_EQ(y.shape(), (Shape{rows, cols, out}));
    const std::vector<float> got = y.to_vector<float>();
    for (int64_t r = 0; r < rows * cols; ++r)
      for (int64_t o = 0; o < out; ++o) {
        double want = 0, scale = 0;  // float32 rounding grows with the terms' sizes, not the sum's
        for (int64_t i = 0; i < in; ++i) {
          want += double(x[r * in + i]) * w[o * in + i];
          scale += std::abs(double(x[r * in + i]) * w[o * in + i]);
        }
        EXPECT_NEAR(got[r * out + o], want, 1e-5 * (1 + scale)) << r << "," << o;
      }
  }
  const QuantizedTensor w{GGMLType::Q8_0, {2, 32}, bytes_tensor(Bytes(68))};
  EXPECT_TRUE(contains(error_of([&] { linear_quantized(Tensor::zeros({1, 48}), w); }), "got x (1, 48) and weight (2, 32)"));
  const QuantizedTensor odd{GGMLType::Q8_0, {4, 24}, bytes_tensor(Bytes(102))};
  EXPECT_TRUE(contains(error_of([&] { linear_quantized(Tensor::zeros({1, 24}), odd); }), "a multiple of 16"));
}

TEST(GGUFQuants, BlockSizesAreGgmls) {
  // ggml-common.h: sizeof(block_q4_0) == 18, ... block_q6_K == 210.
  const std::pair<GGMLType, int> sizes[] = {{GGMLType::Q4_0, 18}, {GGMLType::Q4_1, 20}, {GGMLType::Q5_0, 22},
                                            {GGMLType::Q5_1, 24}, {GGMLType::Q8_0, 34}, {GGMLType::Q4_K, 144},
                                            {GGMLType::Q5_K, 176}, {GGMLType::Q6_K, 210}};
  for (auto [type, bytes] : sizes) EXPECT_EQ(ggml_traits(type).block_bytes, bytes) << ggml_traits(type).name;
}

TEST(GGUFQuants, PlainTypesDecodeAsTheirValues) {
  const Bytes f16 = {0x00, 0x3c, 0x01, 0x00, 0xff, 0xfb};  // 1.0, the smallest subnormal, -65504
  EXPECT_EQ(dequantize(GGMLType::F16, f16, 3), (std::vector<float>{1.0f, std::ldexp(1.0f, -24), -65504.0f}));
  const Bytes bf16 = {0x80, 0x3f, 0x49, 0x40};  // 1.0, 3.140625
  EXPECT_EQ(dequantize(GGMLType::BF16, bf16, 2), (std::vector<float>{1.0f, 3.140625f}));
}

// Q8_0: |x - q d16| <= d16 / 2 + 127 |d - d16| (rounding to the step, plus the scale's own fp16
// rounding), with d = max|x| / 127. Q4_0: d = x_max / -8; the same with 8 steps, except values beyond
// 7.5 steps on the side opposite x_max, clamped to 7 steps (error up to one step). The float
// arithmetic of x / d adds at most 1e-5 of a step.
TEST(GGUFQuants, QuantizeStaysWithinEachFormatsError) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(32 * 64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = normal(rng) * std::ldexp(1.0f, int(i / 32) % 9 - 4);
  for (int j = 0; j < 32; ++j) x[32 * 5 + j] = 0;  // an all-zero block has scale 0
  for (GGMLType type : {GGMLType::Q8_0, GGMLType::Q4_0}) {
    SCOPED_TRACE(ggml_traits(type).name);
    const Bytes q = quantize(type, x);
    ASSERT_EQ(q.size(), ggml_nbytes(type, int64_t(x.size())));
    const std::vector<float> y = dequantize(type, q, int64_t(x.size()));
    for (size_t blk = 0; blk < x.size() / 32; ++blk) {
      double max = 0;  // the value of largest magnitude
      for (int j = 0; j < 32; ++j)
        if (std::fabs(x[blk * 32 + j]) > std::fabs(max)) max = x[blk * 32 + j];
      const double d = type == GGMLType::Q8_0 ? std::fabs(max) / 127 : max / -8;
      const double d16 = fp16_at(&q[blk * size_t(ggml_traits(type).block_bytes)], 0);
      const double steps = type == GGMLType::Q8_0 ? 127 : 8;
      // The scale rounds to float, then to fp16 (half an ulp: 2^-11 relative).
      EXPECT_LE(std::fabs(d16 - d), std::fabs(d) * std::ldexp(1.0, -11) * (1 + std::ldexp(1.0, -10)))
          << "block " << blk;
      for (int j = 0; j < 32; ++j) {
        const double xi = x[blk * 32 + j], err = std::fabs(xi - y[blk * 32 + j]);
        const bool clamped = type == GGMLType::Q4_0 && d != 0 && xi / d > 7.5;
        const double bound = std::fabs(d16) * (clamped ? 1.0 : 0.5) + steps * std::fabs(d - d16) + 1e-5 * std::fabs(d);
        EXPECT_LE(err, bound) << "block " << blk << " element " << j << " x " << xi;
      }
    }
  }
}

TEST(GGUFQuants, BadArgumentsAreClearErrors) {
  EXPECT_TRUE(contains(error_of([] { dequantize(GGMLType::Q8_0, Bytes(33), 32); }),
                       "32 values of Q8_0 take 34 bytes, got 33"));
  EXPECT_TRUE(contains(error_of([] { dequantize(GGMLType::Q4_K, Bytes(144), 100); }), "not a whole number"));
  EXPECT_TRUE(contains(error_of([] { quantize(GGMLType::Q6_K, std::vector<float>(256)); }), "not Q6_K"));
  EXPECT_TRUE(contains(error_of([] { quantize(GGMLType::Q8_0, std::vector<float>(31)); }), "blocks of 32"));
  EXPECT_TRUE(contains(error_of([] { quantize(GGMLType::Q8_0, std::vector<float>(32, NAN)); }), "finite"));
  EXPECT_TRUE(contains(error_of([] { ggml_traits(GGMLType(99)); }), "unknown ggml tensor type 99"));
}

TEST(GGUFValue, AccessorsNameTheKindAskedForAndHeld) {
  GGUFValue s = "llama", u = uint32_t(7), big = uint64_t(1) << 63;
  EXPECT_EQ(s.as_string(), "llama");
  EXPECT_EQ(u.as<uint32_t>(), 7u);
  EXPECT_EQ(u.as_int(), 7);
  EXPECT_TRUE(contains(error_of([&] { s.as<uint32_t>(); }), "expected a uint32, got a string"));
  EXPECT_TRUE(contains(error_of([&] { u.as_array(); }), "expected a array, got a uint32"));
  EXPECT_TRUE(contains(error_of([&] { big.as_int(); }), "does not fit an int64"));
  EXPECT_TRUE(contains(error_of([&] { s.as_float(); }), "expected float32 or float64, got a string"));
  EXPECT_TRUE(contains(error_of([] { GGUFValue::array(GGUFValueType::INT32, {int32_t(1), "x"}); }),
                       "element 1 is a string"));
}

// ---- files by hand

// Little-endian fields appended one by one.
struct Builder {
  Bytes b;
  template <class T>
  Builder& put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    b.insert(b.end(), p, p + sizeof(T));
    return *this;
  }
  Builder& str(const std::string& s) {
    put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Builder& header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    b.insert(b.end(), {'G', 'G', 'U', 'F'});
    return put(version).put(n_tensors).put(n_kv);
  }
  Builder& tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
    str(name).put<uint32_t>(uint32_t(dims.size()));
    for (uint64_t d : dims) put(d);
    return put(type).put(offset);
  }
  Builder& pad(size_t alignment) {
    b.resize((b.size() + alignment - 1) / alignment * alignment);
    return *this;
  }
};

class GGUFFiles : public ::testing::Test {
 protected:
  std::string write(const Bytes& bytes, const std::string& name = "model.gguf") const {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    return path;
  }
  std::string path(const std::string& name = "model.gguf") const { return (dir_ / name).string(); }
  kt::TempDir temp_{"kiln_gguf"};
  const fs::path& dir_ = temp_.dir;
};

// A v2 file as llama.cpp lays it out: an F32 tensor of dims (3, 2), i.e. 2 rows of 3, and a Q8_0 row
// of 32 at the next 64-byte boundary.
Bytes hand_built_file() {
  Builder f;
  f.header(2, 2, 3);
  f.str("general.architecture").put<uint32_t>(8).str("llama");
  f.str("general.alignment").put<uint32_t>(4).put<uint32_t>(64);
  f.str("tokenizer.ggml.scores").put<uint32_t>(9).put<uint32_t>(6).put<uint64_t>(2).put(0.5f).put(-1.0f);
  f.tensor("w", {3, 2}, 0, 0).tensor("q", {32, 1}, 8, 64).pad(64);
  for (float v : {1.f, 2.f, 3.f, 4.f, 5.f, 6.f}) f.put(v);
  f.pad(64);
  f.put<uint16_t>(0x3800);  // d = 0.5
  for (int i = 0; i < 32; ++i) f.put<int8_t>(int8_t(i - 16));
  return f.b;
}

TEST_F(GGUFFiles, ReadsAHandBuiltFile) {
  GGUFFile g = gguf_open(write(hand_built_file()));
  EXPECT_EQ(g.header().version, 2u);
  EXPECT_EQ(g.header().alignment, 64u);
  EXPECT_EQ(g.get("general.architecture").as_string(), "llama");
  const GGUFArray& scores = g.get("tokenizer.ggml.scores").as_array();
  EXPECT_EQ(scores.type, GGUFValueType::FLOAT32);
  ASSERT_EQ(scores.values.size(), 2u);
  EXPECT_EQ(scores.values[1].as<float>(), -1.0f);
  EXPECT_EQ(g.find("missing"), nullptr);
  EXPECT_TRUE(contains(error_of([&] { g.get("missing"); }), "no metadata key \"missing\""));

  Tensor w = g.tensor("w");
  EXPECT_EQ(w.shape(), (Shape{2, 3}));
  EXPECT_EQ(w.dtype(), dtypes::float32);
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ((w * 2.0f).sum().item<float>(), 42.0f);

  QuantizedTensor q = g.quantized("q");
  EXPECT_EQ(q.type, GGMLType::Q8_0);
  EXPECT_EQ(q.shape, (Shape{1, 32}));
  EXPECT_EQ(q.blocks.dtype(), dtypes::uint8);
  EXPECT_EQ(q.blocks.to_vector<uint8_t>(), Bytes(g.bytes("q").begin(), g.bytes("q").end()));
  std::vector<float> want;
  for (int i = 0; i < 32; ++i) want.push_back(0.5f * float(i - 16));
  EXPECT_EQ(g.dequantized("q"), want);
  EXPECT_TRUE(contains(error_of([&] { g.tensor("q"); }), "stored as Q8_0 blocks"));
  EXPECT_TRUE(contains(error_of([&] { g.info("nope"); }), "no tensor \"nope\""));
}

TEST_F(GGUFFiles, PlainTensorsOnTheCPUAreReadInPlace) {
  GGUFFile g = gguf_open(write(hand_built_file()));
  const int64_t before = kiln::GlobalCounters::mem_used;
  Tensor w = g.tensor("w");
  EXPECT_EQ(w.to_vector<float>()[5], 6.0f);
  EXPECT_EQ(kiln::GlobalCounters::mem_used, before);  // the mapping backs the tensor: nothing allocated
}

// Every kind of metadata value, nested arrays and empty ones included.
GGUFMetadata every_kind() {
  return {
      {"u8", uint8_t(200)}, {"i8", int8_t(-100)}, {"u16", uint16_t(60000)}, {"i16", int16_t(-30000)},
      {"u32", uint32_t(4000000000u)}, {"i32", int32_t(-2000000000)}, {"f32", 1.5f}, {"bool", true},
      {"str", std::string("tab\there\0zero", 13)}, {"u64", uint64_t(1) << 63}, {"i64", int64_t(-1) << 62},
      {"f64", 0.1}, {"empty", GGUFValue::array(GGUFValueType::STRING, {})},
      {"tokens", GGUFValue::array(GGUFValueType::STRING, {"<s>", "", "\xe2\x96\x81the"})},
      {"nested", GGUFValue::array(GGUFValueType::ARRAY, {GGUFValue::array(GGUFValueType::BOOL, {false, true}),
                                                          GGUFValue::array(GGUFValueType::INT16, {})})},
      {"general.alignment", uint32_t(16)},
  };
}

TEST_F(GGUFFiles, RoundTripsMetadataOfEveryKindAndTensorsOfEveryType) {
  std::mt19937 rng(5);
  GGUFWriter writer(every_kind());
  Tensor f32 = Tensor::from_vector<float>({1.5f, -2.0f, 3.25f, 0.0f, 5.0f, 6.0f}, {3, 2});
  writer.add("f32", f32, GGMLType::F32);
  writer.add("f16", f32, GGMLType::F16);
  writer.add("bf16", f32, GGMLType::BF16);
  writer.add("i32", Tensor::from_vector<int32_t>({1, -2, 3}, {3}), GGMLType::I32);
  std::map<GGMLType, Bytes> blocks;
  for (GGMLType type : kQuantTypes) {
    const int64_t block = ggml_traits(type).block_size;
    blocks[type] = random_blocks(type, 4, rng);
    writer.add(ggml_traits(type).name,
               QuantizedTensor{type, {2, 2 * block}, Tensor::from_vector<uint8_t>(blocks[type], {-1})});
  }
  writer.save(path());

  GGUFFile g = gguf_open(path());
  EXPECT_EQ(g.header().version, 3u);
  EXPECT_EQ(g.header().alignment, 16u);
  EXPECT_EQ(g.metadata(), every_kind());
  EXPECT_EQ(g.tensor("f32").to_vector<float>(), f32.to_vector<float>());
  EXPECT_EQ(g.tensor("f16").dtype(), dtypes::float16);
  EXPECT_EQ(g.tensor("f16").cast(dtypes::float32).to_vector<float>(), f32.to_vector<float>());
  EXPECT_EQ(g.tensor("bf16").dtype(), dtypes::bfloat16);
  EXPECT_EQ(g.tensor("bf16").cast(dtypes::float32).to_vector<float>(), f32.to_vector<float>());
  EXPECT_EQ(g.tensor("i32").to_vector<int32_t>(), (std::vector<int32_t>{1, -2, 3}));
  for (GGMLType type : kQuantTypes) {
    const GGUFTensorInfo& info = g.info(ggml_traits(type).name);
    EXPECT_EQ(info.type, type);
    EXPECT_EQ(info.offset % 16, 0u);
    EXPECT_EQ(info.shape, (Shape{2, 2 * ggml_traits(type).block_size}));
    std::span<const uint8_t> stored = g.bytes(info.name);
    EXPECT_EQ(Bytes(stored.begin(), stored.end()), blocks[type]) << info.name;
  }
  // The writer writes what the reader of a hand-built file reads.
  EXPECT_EQ(gguf_parse(writer.to_bytes()).metadata, every_kind());
}

TEST_F(GGUFFiles, GgufSaveQuantizesMatricesAndKeepsVectors) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  std::vector<float> w(8 * 64), norm(64);
  for (float& v : w) v = normal(rng);
  for (float& v : norm) v = normal(rng);
  const std::map<std::string, Tensor> tensors = {{"w", Tensor::from_vector(w, {8, 64})},
                                                 {"norm", Tensor::from_vector(norm, {64})}};
  for (const std::string quant : {"Q8_0", "Q4_0"}) {
    SCOPED_TRACE(quant);
    gguf_save(path(), {{"general.name", "t"}}, tensors, quant);
    GGUFFile g = gguf_open(path());
    EXPECT_EQ(g.info("w").type, ggml_type_named(quant));
    EXPECT_EQ(g.info("norm").type, GGMLType::F32);
    EXPECT_EQ(g.tensor("norm").to_vector<float>(), norm);
    const GGUFTensorInfo& info = g.info("w");
    EXPECT_EQ(g.dequantized("w"), dequantize(info.type, quantize(info.type, w), int64_t(w.size())));
  }
  EXPECT_TRUE(contains(error_of([&] { gguf_save(path(), {}, tensors, "Q6_K"); }), "quant must be"));
  EXPECT_TRUE(contains(error_of([&] { gguf_save(path("x/y.gguf"), {}, tensors); }), "x/y.gguf"));
}

// The contract's gguf_load: metadata as json, plain tensors in their dtype, quantized ones lazy floats.
TEST_F(GGUFFiles, GgufLoadGivesJsonMetadataAndTensors) {
  const nlohmann::json metadata = {{"general.architecture", "llama"}, {"llama.block_count", 2},
                                   {"llama.rope.freq_base", 0.5}, {"neg", -3}, {"big", 1ull << 40},
                                   {"flag", true}, {"ids", {1, 2, 3}}, {"names", {"a", "b"}}};
  std::vector<float> w(4 * 32), norm(32);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(float(i));
  for (size_t i = 0; i < norm.size(); ++i) norm[i] = float(i) / 4;
  gguf_save(path(), metadata, {{"w", Tensor::from_vector(w, {4, 32})}, {"norm", Tensor::from_vector(norm, {32})}},
            "Q8_0");
  const GGUF g = gguf_load(path());
  EXPECT_EQ(g.metadata, metadata);
  EXPECT_EQ(gguf_open(path()).get("llama.block_count").type(), GGUFValueType::UINT32);
  EXPECT_EQ(gguf_open(path()).get("big").type(), GGUFValueType::UINT64);
  ASSERT_EQ(g.tensors.size(), 2u);
  EXPECT_EQ(g.tensors.at("norm").dtype(), dtypes::float32);
  EXPECT_EQ(g.tensors.at("norm").to_vector<float>(), norm);
  const Tensor& wq = g.tensors.at("w");
  EXPECT_EQ(wq.shape(), Shape({4, 32}));
  EXPECT_EQ(wq.to_vector<float>(), dequantize(GGMLType::Q8_0, quantize(GGMLType::Q8_0, w), int64_t(w.size())));
  EXPECT_TRUE(contains(error_of([&] { gguf_save(path(), {{"mixed", {1, "a"}}}, {}); }), "\"mixed\" mixes"));
  EXPECT_TRUE(contains(error_of([&] { gguf_save(path(), {{"obj", {{"a", 1}}}}, {}); }), "\"obj\""));
}

TEST_F(GGUFFiles, WriterRejectsWhatAFileCannotHold) {
  GGUFWriter w;
  Tensor t = Tensor::from_vector<float>(std::vector<float>(48), {48});
  EXPECT_TRUE(contains(error_of([&] { w.add("t", t, GGMLType::Q8_0); }), "multiple of 32"));
  EXPECT_TRUE(contains(error_of([&] { w.add("t", t, GGMLType::Q4_K); }), "kiln quantizes to Q8_0 and Q4_0"));
  EXPECT_TRUE(contains(error_of([&] { w.add("t", QuantizedTensor{GGMLType::Q8_0, {32}, t}); }), "take 34 bytes"));
  w.add("t", t, GGMLType::F32);
  EXPECT_TRUE(contains(error_of([&] { w.add("t", t, GGMLType::F16); }), "added twice"));
  EXPECT_TRUE(contains(error_of([] { GGUFWriter({{"general.alignment", uint32_t(3)}}); }), "power of two"));
  EXPECT_TRUE(contains(error_of([] { GGUFWriter({{"a", 1}, {"a", 2}}); }), "\"a\" appears twice"));
  EXPECT_TRUE(contains(error_of([] { GGUFWriter({{"a", GGUFArray{GGUFValueType::INT32, {"x"}}}}); }),
                       "an array of int32 holds a string"));
}

// ---- malformed files

struct Lie {
  const char* what;
  Bytes file;
  const char* message;  // a part of the error
};

Bytes with(Bytes b, size_t at, std::initializer_list<uint8_t> bytes) {
  std::copy(bytes.begin(), bytes.end(), b.begin() + std::ptrdiff_t(at));
  return b;
}

std::vector<Lie> lies() {
  const Bytes good = hand_built_file();
  auto one_kv = [](uint32_t kind, auto value) { return Builder().header(3, 0, 1).str("k").put(kind).put(value).b; };
  auto one_tensor = [](std::vector<uint64_t> dims, uint32_t type, uint64_t offset, size_t data) {
    Builder f;
    f.header(3, 1, 0).tensor("t", dims, type, offset).pad(32);
    f.b.resize(f.b.size() + data);
    return f.b;
  };
  Builder two;  // F32 tensors of 16 and 8 values, the second starting inside the first
  two.header(3, 2, 0).tensor("a", {16}, 0, 0).tensor("b", {8}, 0, 32).pad(32);
  two.b.resize(two.b.size() + 96);
  Builder deep;
  deep.header(3, 0, 1).str("k").put<uint32_t>(9);
  for (int i = 0; i < 40; ++i) deep.put<uint32_t>(9).put<uint64_t>(1);
  return {
      {"bad magic", with(good, 0, {'G', 'G', 'M', 'L'}),
       "expected the magic \"GGUF\" (47 47 55 46), found 47 47 4d 4c"},
      {"short file", Bytes{'G', 'G'}, "a file of 2 bytes"},
      {"version 1", with(good, 4, {1, 0, 0, 0}), "version 1 (32-bit counts) is not supported"},
      {"unknown version", with(good, 4, {9, 0, 0, 0}), "unknown GGUF version 9; expected 2 or 3"},
      {"big-endian", with(good, 4, {0, 0, 0, 3}), "big-endian"},
      {"huge tensor count", with(good, 8, {0, 0, 0, 0, 0, 0, 0, 1}), "tensor infos: 72057594037927936 of at least 24"},
      {"huge metadata count", with(good, 16, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}), "metadata entries"},
      {"key length past the end", with(good, 24, {0xff, 0xff, 0xff, 0, 0, 0, 0, 0}), "a string of 16777215 bytes"},
      {"unknown value kind", one_kv(13, uint8_t(0)), "unknown value kind 13; expected 0 (uint8) to 12 (float64)"},
      {"bool not 0 or 1", one_kv(7, uint8_t(2)), "a bool byte of 2; expected 0 or 1"},
      {"value past the end", Builder().header(3, 0, 1).str("k").put<uint32_t>(10).put<uint32_t>(0).b,
       "metadata \"k\": expected 8 more bytes, the file ends after 4"},
      {"huge array", Builder().header(3, 0, 1).str("k").put<uint32_t>(9).put<uint32_t>(6).put<uint64_t>(1ull << 40).b,
       "1099511627776 of at least 4 bytes each cannot fit"},
      {"nesting", deep.b, "arrays nested more than 16 deep"},
      {"duplicate key", Builder().header(3, 0, 2).str("k").put<uint32_t>(0).put<uint8_t>(1).str("k").put<uint32_t>(0)
                            .put<uint8_t>(1).b, "metadata key \"k\" appears twice"},
      {"alignment kind", Builder().header(3, 0, 1).str("general.alignment").put<uint32_t>(10).put<uint64_t>(32).b,
       "general.alignment: expected a uint32, got a uint64"},
      {"alignment not a power of two", Builder().header(3, 0, 1).str("general.alignment").put<uint32_t>(4)
                                           .put<uint32_t>(48).b, "expected a power of two, got 48"},
      {"unknown tensor type", one_tensor({32}, 99, 0, 128), "unknown ggml tensor type 99"},
      {"too many dims", one_tensor({1, 1, 1, 1, 1}, 0, 0, 32), "5 dimensions; GGUF tensors have at most 4"},
      {"dims overflow", one_tensor({1ull << 32, 1ull << 32}, 0, 0, 32), "multiply past 2^63"},
      {"dims overflow after a zero", one_tensor({0, 1ull << 40, 1ull << 40}, 0, 0, 32), "multiply past 2^63"},
      {"dims past the file", one_tensor({1ull << 40}, 0, 0, 32), "do not fit in a file of"},
      {"rows not whole blocks", one_tensor({48, 2}, 8, 0, 128),
       "Q8_0 stores blocks of 32 values along the first dimension, which is 48"},
      {"offset past the end", one_tensor({8}, 0, 64, 32), "lie past its end"},
      {"misaligned offset", one_tensor({8}, 0, 4, 64), "offset 4 is not a multiple of the alignment 32"},
      {"truncated data", one_tensor({16}, 0, 0, 40), "bytes [0, +64) of the data section lie past its end (40 bytes"},
      {"overlap", two.b, "tensors \"a\" (bytes 0..64) and \"b\" (from byte 32) overlap"},
      {"duplicate tensor", Builder().header(3, 2, 0).tensor("a", {8}, 0, 0).tensor("a", {8}, 0, 32).pad(32).b,
       "tensor name \"a\" appears twice"},
      {"data section past the end", Builder().header(3, 1, 0).tensor("a", {0}, 0, 0).b, "past the end of the file"},
  };
}

TEST_F(GGUFFiles, EveryLyingHeaderFieldIsAClearErrorNamingThePath) {
  for (const Lie& lie : lies()) {
    SCOPED_TRACE(lie.what);
    const std::string p = write(lie.file);
    const std::string message = error_of([&] { gguf_open(p); });
    EXPECT_TRUE(contains(message, "gguf_open: " + p + ": ")) << message;
    EXPECT_TRUE(contains(message, lie.message)) << message;
  }
}

// Every prefix of a valid file, copied to memory of exactly its size (so the sanitizer build catches
// any read past it), parses or throws kiln::Error; random byte flips likewise.
TEST(GGUFParse, TruncationsAndMutationsNeverReadPastTheBytes) {
  const Bytes good = hand_built_file();
  for (size_t n = 0; n < good.size(); ++n) {
    const Bytes prefix(good.begin(), good.begin() + std::ptrdiff_t(n));
    EXPECT_THROW(gguf_parse(prefix), kiln::Error) << n << " bytes";
  }
  std::mt19937 rng(11);
  for (int i = 0; i < kt::fuzz_iterations(3000); ++i) {
    Bytes mutated = good;
    for (int flips = 1 + int(rng() % 4); flips > 0; --flips) mutated[rng() % mutated.size()] = uint8_t(rng());
    try {
      GGUFHeader h = gguf_parse(mutated);
      for (const GGUFTensorInfo& t : h.tensors)
        dequantize(t.type, std::span(mutated).subspan(h.data_offset + t.offset, t.nbytes), kiln::prod(t.shape));
    } catch (const kiln::Error&) {
    }
  }
}

}  // namespace
