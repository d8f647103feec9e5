#pragma once
// The machine's own ceilings, measured in the run that measures the kernels: the FMA peak (what
// compute-bound kernels such as matmul can reach) and a STREAM triad (what memory-bound ones can).
#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

#include "bench_util.h"

namespace bench {

// Independent accumulators per thread: an FMA's latency (4-5 cycles) times two FMA pipes needs
// about ten in flight to keep both busy; 12 plus the two operands fit AVX2's 16 registers.
constexpr int kFmaChains = 12;

// iters rounds of kFmaChains independent vector FMAs; returns their sum so none is optimized out.
// Inlined into the target-specific callers below, which give it their vector instructions.
template <class V>
[[gnu::always_inline]] inline float fma_chains(long iters) {
  V acc[kFmaChains];
  for (int c = 0; c < kFmaChains; c++) acc[c] = V{} + 1.0f + 0.01f * c;
  // acc stays near 1 (no overflow, no denormals); volatile: the compiler can't fold the loop away
  volatile float scale = 0.999999f, shift = 1e-6f;
  const V a = V{} + scale, b = V{} + shift;
  for (long i = 0; i < iters; i++)
    for (int c = 0; c < kFmaChains; c++) acc[c] = acc[c] * a + b;
  float sum = 0;
  for (int c = 0; c < kFmaChains; c++)
    for (size_t l = 0; l < sizeof(V) / sizeof(float); l++) sum += acc[c][l];
  return sum;
}

typedef float Float16 __attribute__((vector_size(64)));
typedef float Float8 __attribute__((vector_size(32)));
typedef float Float4 __attribute__((vector_size(16)));
[[gnu::target("avx512f,fma")]] inline float fma_chains_avx512(long iters) { return fma_chains<Float16>(iters); }
[[gnu::target("avx2,fma")]] inline float fma_chains_avx2(long iters) { return fma_chains<Float8>(iters); }
inline float fma_chains_sse(long iters) { return fma_chains<Float4>(iters); }

// FLOP/s of FMAs in the widest vectors this CPU has, on every core (an FMA counts two), in
// GFLOP/s: the best of many short runs, as short as the kernels it is compared with, so that it
// finds the quiet moments of a shared machine as they do.
inline double fma_peak_gflops() {
  const bool avx512 = __builtin_cpu_supports("avx512f"), avx2 = __builtin_cpu_supports("avx2") &&
                                                                 __builtin_cpu_supports("fma");
  const int lanes = avx512 ? 16 : avx2 ? 8 : 4;
  const long iters = 1 << 21;
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<float> sinks(threads);
  const double t = best_wall_seconds(
      [&] {
        parallel_for(threads, [&](size_t lo, size_t hi) {
          for (size_t t = lo; t < hi; t++)
            sinks[t] = avx512 ? fma_chains_avx512(iters) : avx2 ? fma_chains_avx2(iters) : fma_chains_sse(iters);
        });
      },
      30);
  return 2.0 * lanes * kFmaChains * iters * threads / t / 1e9;
}

// GB/s of a[i] = b[i] + s*c[i] over n floats on all cores: what the memory system gives a simple
// streaming loop.
inline double triad_gbps(size_t n) {
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  const float s = 3.0f;
  double t = best_wall_seconds(
      [&] {
        parallel_for(n, [&](size_t lo, size_t hi) {
          for (size_t i = lo; i < hi; i++) a[i] = b[i] + s * c[i];
        });
      },
      10);
  return 3.0 * n * sizeof(float) / t / 1e9;  // two loads and one store
}

}  // namespace bench
