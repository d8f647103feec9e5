// Quantized matvec: one decode step's x (1, 4096) @ W.T for a 4096x4096 weight stored in each GGUF type,
// the weight decoded inside the kernel that reads it (nn::state::linear_quantized; a plain type is read
// in its dtype, as llm/transformer.cpp's project does). A matvec reads each weight byte once, so its
// speed is the weight's bytes over the kernel time, set against a STREAM triad measured in this run.
// Prints per type: kernels per matvec, GB/s of weight bytes and the fraction of the triad; the result
// is checked against float64 sums over dequantize()'s values, so a wrong kernel can't look fast.
// Writes `key value` lines to out_file (default bench/results/quant_matvec.txt).
#include <kiln/kiln.h>
#include <kiln/nn/gguf.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench_util.h"
#include "peaks.h"

using namespace kiln;
using nn::state::GGMLType;

namespace {

constexpr int64_t kN = 4096, kK = 4096;

// Random blocks of `type` whose fp16 scales are small normal numbers (products stay normal floats:
// no subnormal slow paths in the figures).
std::vector<uint8_t> random_weight(GGMLType type, std::mt19937& rng) {
  const nn::state::GGMLTypeTraits& t = nn::state::ggml_traits(type);
  std::vector<uint8_t> bytes(nn::state::ggml_nbytes(type, kN * kK));
  for (uint8_t& b : bytes) b = uint8_t(rng());
  std::vector<int> fp16_fields;
  switch (type) {
    case GGMLType::F32: {
      std::normal_distribution<float> normal;
      for (size_t i = 0; i < bytes.size(); i += 4) {
        const float v = normal(rng);
        std::memcpy(&bytes[i], &v, 4);
      }
      return bytes;
    }
    case GGMLType::F16: fp16_fields = {0}; break;
    case GGMLType::BF16:
      for (size_t i = 1; i < bytes.size(); i += 2) bytes[i] = uint8_t(0x3c + rng() % 8);  // |v| in [2^-7, 2^1)
      return bytes;
    case GGMLType::Q4_1: case GGMLType::Q5_1: case GGMLType::Q4_K: case GGMLType::Q5_K: fp16_fields = {0, 2}; break;
    case GGMLType::Q6_K: fp16_fields = {208}; break;
    default: fp16_fields = {0}; break;
  }
  for (size_t b = 0; b < bytes.size(); b += static_cast<size_t>(t.block_bytes))
    for (int at : fp16_fields) {
      const uint16_t h = uint16_t((rng() & 0x83ff) | ((8 + rng() % 8) << 10));  // |d| in [2^-7, 2^1)
      std::memcpy(&bytes[b + static_cast<size_t>(at)], &h, 2);
    }
  return bytes;
}

// The weight as a GGUF file gives it: a plain type as a (N, K) buffer of its dtype, a quantized one as bytes.
Tensor stored_weight(GGMLType type, const std::vector<uint8_t>& bytes) {
  Tensor raw = Tensor::from_vector(bytes, {static_cast<int64_t>(bytes.size())});
  const nn::state::GGMLTypeTraits& t = nn::state::ggml_traits(type);
  return (t.quantized() ? raw : raw.bitcast(t.dtype).reshape({kN, kK})).realize();
}

// x @ W.T as the language models compute it for a weight stored as `type`.
Tensor matvec(const Tensor& x, GGMLType type, const Tensor& stored) {
  if (nn::state::ggml_traits(type).quantized()) return nn::state::linear_quantized(x, {type, {kN, kK}, stored});
  return (x.unsqueeze(-2) * (stored.dtype() == dtypes::float32 ? stored : stored.cast(dtypes::float32))).sum({-1});
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kiln quantized matvec benchmark: GB/s of weight bytes per GGUF type against a STREAM triad"};
  std::string out_file = "bench/results/quant_matvec.txt";
  int reps = 20;
  std::vector<std::string> only;
  app.add_option("out_file", out_file, "where the `key value` figures go");
  app.add_option("--reps", reps, "timed runs per type (the best counts)");
  app.add_option("--only", only, "these types only (Q4_K ...)")->delimiter(',');
  CLI11_PARSE(app, argc, argv);

  bench::Figures figures;
  const double triad = bench::triad_gbps(16 * 1024 * 1024);
  std::printf("STREAM triad 16M, all cores       %8.2f GB/s\n", triad);
  figures.add("triad_gbps", triad);

  std::mt19937 rng(42);
  std::normal_distribution<float> normal;
  std::vector<float> xs(kK);
  for (float& v : xs) v = normal(rng);
  const Tensor x = Tensor::from_vector(xs, {1, kK}).realize();

  const GGMLType types[] = {GGMLType::F32,  GGMLType::F16,  GGMLType::BF16, GGMLType::Q8_0,
                            GGMLType::Q4_0, GGMLType::Q4_1, GGMLType::Q5_0, GGMLType::Q5_1,
                            GGMLType::Q4_K, GGMLType::Q5_K, GGMLType::Q6_K};
  for (GGMLType type : types) {
    const std::string name = nn::state::ggml_traits(type).name;
    if (!only.empty() && std::find(only.begin(), only.end(), name) == only.end()) continue;
    const std::vector<uint8_t> bytes = random_weight(type, rng);
    const Tensor stored = stored_weight(type, bytes);
    matvec(x, type, stored).realize();  // compiles
    kiln::GlobalCounters::reset();
    const std::vector<float> got = matvec(x, type, stored).to_vector<float>();
    const int64_t kernels = kiln::GlobalCounters::kernel_count;
    const double seconds = bench::best_kernel_seconds([&] { return matvec(x, type, stored); }, reps);

    const std::vector<float> w = nn::state::dequantize(type, bytes, kN * kK);
    double worst = 0;
    for (int64_t n = 0; n < kN; n++) {
      double want = 0, scale = 0;
      for (int64_t k = 0; k < kK; k++) {
        want += double(xs[k]) * w[n * kK + k];
        scale += std::abs(double(xs[k]) * w[n * kK + k]);
      }
      worst = std::max(worst, std::abs(got[n] - want) / (1 + scale));
    }
    const double gbps = static_cast<double>(bytes.size()) / seconds / 1e9;
    std::printf("matvec 4096x4096 %-5s %2lld kernel%s %8.2f GB/s  %5.2f of triad  %7.3f ms%s\n", name.c_str(),
                static_cast<long long>(kernels), kernels == 1 ? " " : "s", gbps, gbps / triad, seconds * 1e3,
                worst > 1e-4 ? "  WRONG RESULT" : "");
    figures.add("matvec_" + name + "_kernels", static_cast<double>(kernels));
    figures.add("matvec_" + name + "_gbps", gbps);
    figures.add("matvec_" + name + "_of_triad", gbps / triad);
    figures.add("matvec_" + name + "_max_error", worst);
  }
  figures.write_text(out_file);
  return 0;
}
