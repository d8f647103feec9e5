// Kernel benchmarks: each kiln figure next to a reference measured in this same run and their
// ratio (speed ratio: above 1 means kiln is faster).
//   matmul 256..2048, 257, 1000  GFLOP/s, with the hand-written opts and with BEAM=2 (--beam n), against
//                           OpenBLAS cblas_sgemm on the same data (result checked)
//   machine                 FMA peak (GFLOP/s) and STREAM triad (GB/s) on all cores, measured first:
//                           matmul and conv2d are reported as fractions of the peak, sum and the
//                           elementwise op of the triad; OpenBLAS's core (openblas_get_corename) is
//                           recorded, and an OpenBLAS below half the peak at 1024 is flagged suspect
//   sum, fused elementwise  GB/s against the STREAM triad
//   softmax (4096, 1024)    ms (bench/torch_kernels.py adds PyTorch's figure)
//   conv2d 3x3              GFLOP/s against kiln's own matmul 1024
//   gather                  ms to pick 128 rows of a 60000x784 dataset (bench/torch_kernels.py adds
//                           PyTorch's figure)
//   dispatch latency        us per realize of tiny cached kernels (also with 1000 other tensors live)
//   compile                 cold (fresh KILN_CACHE; median of 5 new kernels) against cached realize
// Writes `key value` lines to out_file (default bench/results/kernels.txt) and appends one JSON
// line to the same path with the extension .jsonl; --only runs some groups (--help lists them).
#include <kiln/kiln.h>
#include <strings.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench_util.h"
#include "peaks.h"

#ifdef KILN_BENCH_HAVE_CBLAS
#include <cblas.h>
#endif

using namespace kiln;
using bench::best_kernel_seconds;
using bench::best_wall_seconds;

namespace {

bench::Figures figures;
// The machine's ceilings, measured before the kernels (bench/peaks.h).
double machine_fma_gflops = 0, machine_triad_gbps = 0;

void bench_machine() {
  machine_fma_gflops = bench::fma_peak_gflops();
  machine_triad_gbps = bench::triad_gbps(16 * 1024 * 1024);
  std::printf("FMA peak, all cores          ref  %8.2f GFLOP/s\n", machine_fma_gflops);
  std::printf("STREAM triad 16M, all cores  ref  %8.2f GB/s\n", machine_triad_gbps);
  figures.add("fma_peak_gflops", machine_fma_gflops);
  figures.add("triad_gbps", machine_triad_gbps);
}

// A reference below half the FMA peak on matmul 1024 most likely runs a generic kernel (a BLAS that
// does not know this CPU model): said loudly and recorded, so no ratio against it passes unnoticed.
void check_reference(const std::string& name, double matmul_1024_gflops) {
  const bool suspect = matmul_1024_gflops < 0.5 * machine_fma_gflops;
  figures.add(name + "_suspect", suspect ? 1 : 0);
  if (suspect)
    std::printf("\n!!! SUSPECT REFERENCE: %s runs matmul 1024 at %.1f GFLOP/s, below half the FMA peak (%.1f):\n"
                "!!! its ratios are not a fair comparison\n\n",
                name.c_str(), matmul_1024_gflops, machine_fma_gflops);
}

#ifdef KILN_BENCH_HAVE_CBLAS
// The kernel set OpenBLAS picked for this CPU (bench/run.sh may have set OPENBLAS_CORETYPE).
void report_openblas_core() {
  const std::string core = openblas_get_corename();
  const char* asked = std::getenv("OPENBLAS_CORETYPE");
  std::printf("OpenBLAS core %s (%s%s)\n", core.c_str(), asked ? "OPENBLAS_CORETYPE=" : "its own choice",
              asked ? asked : "");
  if (asked && strcasecmp(asked, core.c_str()) != 0)
    std::printf("!!! OpenBLAS runs %s, not the %s that OPENBLAS_CORETYPE asked for\n", core.c_str(), asked);
  figures.note("openblas_core", core);
}
#endif

// ---- matmul against OpenBLAS

// Largest |kiln - reference| / |reference| over the elements, so a wrong kernel can't look fast.
double max_relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); i++)
    worst = std::max(worst, std::abs(double(got[i]) - want[i]) / std::max(std::abs(double(want[i])), 1e-6));
  return worst;
}

// This VM's two vCPUs sometimes share one core's vector units (the host's placement, for seconds at
// a time): any two-thread kernel then runs slower, kiln's and OpenBLAS's alike. The three figures
// are measured in alternating rounds and each keeps its best, so a ratio compares runs that met
// the same machine.
constexpr int kMatmulRounds = 3;

double bench_matmul(int64_t n, int beam) {
  Tensor x = Tensor::rand({n, n}).realize(), y = Tensor::rand({n, n}).realize();
  const int reps = n >= 2048 ? 2 : 4;
  const double flops = 2.0 * n * n * n;
  const std::string key = "matmul_" + std::to_string(n);
  double kiln_s = 1e30, beam_s = 1e30, blas_s = 1e30;
#ifdef KILN_BENCH_HAVE_CBLAS
  std::vector<float> a = x.to_vector<float>(), b = y.to_vector<float>(), c(a.size());
  const int ni = static_cast<int>(n);
#endif
  for (int round = 0; round < kMatmulRounds; round++) {
    kiln_s = std::min(kiln_s, best_kernel_seconds([&] { return x.matmul(y); }, reps));
    // The same kernel with BEAM's opts (the search runs in the first round's warm-up realize).
    if (beam > 0) {
      kiln::Context with_beam({{"BEAM", beam}});
      beam_s = std::min(beam_s, best_kernel_seconds([&] { return x.matmul(y); }, reps));
    }
#ifdef KILN_BENCH_HAVE_CBLAS
    // kiln's pool workers poll for 200 us after a kernel (thread_pool.cpp) and would share the
    // cores with OpenBLAS's threads, slowing a short sgemm measured right away
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    blas_s = std::min(blas_s, best_wall_seconds(
                                  [&] {
                                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, ni, ni, 1.0f, a.data(),
                                                ni, b.data(), ni, 0.0f, c.data(), ni);
                                  },
                                  reps));
#endif
  }
  const double kiln_gflops = flops / kiln_s / 1e9, beam_gflops = beam > 0 ? flops / beam_s / 1e9 : 0;
  figures.add(key + "_gflops", kiln_gflops);
  if (beam > 0) figures.add(key + "_beam_gflops", beam_gflops);
  figures.add(key + "_of_fma_peak", kiln_gflops / machine_fma_gflops);
  std::printf("matmul %5lld float32        kiln %8.2f GFLOP/s (%.2f of peak)  BEAM=%d %8.2f", static_cast<long long>(n),
              kiln_gflops, kiln_gflops / machine_fma_gflops, beam, beam_gflops);
#ifdef KILN_BENCH_HAVE_CBLAS
  double blas_gflops = flops / blas_s / 1e9;
  double err = max_relative_error(x.matmul(y).to_vector<float>(), c);
  figures.add("openblas_" + key + "_gflops", blas_gflops);
  figures.add("openblas_" + key + "_of_fma_peak", blas_gflops / machine_fma_gflops);
  figures.add(key + "_vs_openblas", kiln_gflops / blas_gflops);
  if (beam > 0) figures.add(key + "_beam_vs_openblas", beam_gflops / blas_gflops);
  figures.add(key + "_max_rel_err", err);
  std::printf("  OpenBLAS %8.2f GFLOP/s  ratio %.3f (BEAM %.3f)  max rel err %.1e%s\n", blas_gflops,
              kiln_gflops / blas_gflops, beam_gflops / blas_gflops, err, err < 1e-3 ? "" : "  WRONG RESULT");
  if (n == 1024) check_reference("openblas", blas_gflops);
#else
  std::printf("  (OpenBLAS reference unavailable: built without cblas.h)\n");
#endif
  return kiln_gflops;
}

// ---- memory-bound kernels against the STREAM triad

void bench_memory_bound() {
  const int64_t n = 16 * 1024 * 1024;
  Tensor a = Tensor::rand({n}).realize(), b = Tensor::rand({n}).realize(), c = Tensor::rand({n}).realize();
  double t_sum = best_kernel_seconds([&] { return a.sum(); }, 10);
  double t_ew = best_kernel_seconds([&] { return (a * b + c).relu() * 2.0f - 1.0f; }, 10);
  double sum_gbps = 4.0 * n / t_sum / 1e9;      // one load per element
  double ew_gbps = 4.0 * 4 * n / t_ew / 1e9;    // three loads and one store
  const double triad = machine_triad_gbps;
  std::printf("sum 16M float32              kiln %8.2f GB/s  (%.2f ms)  ratio to triad %.3f\n", sum_gbps, t_sum * 1e3,
              sum_gbps / triad);
  std::printf("(a*b+c).relu()*2-1 16M       kiln %8.2f GB/s  (%.2f ms)  ratio to triad %.3f\n", ew_gbps, t_ew * 1e3,
              ew_gbps / triad);
  figures.add("sum_16M_ms", t_sum * 1e3);
  figures.add("sum_16M_gbps", sum_gbps);
  figures.add("sum_16M_vs_triad", sum_gbps / triad);
  figures.add("elementwise_16M_ms", t_ew * 1e3);
  figures.add("elementwise_16M_gbps", ew_gbps);
  figures.add("elementwise_16M_vs_triad", ew_gbps / triad);
}

// ---- softmax and conv2d

void bench_softmax() {
  Tensor x = Tensor::randn({4096, 1024}).realize();
  double ms = best_kernel_seconds([&] { return x.softmax(-1); }, 10) * 1e3;
  std::printf("softmax (4096, 1024)         kiln %8.2f ms\n", ms);
  figures.add("softmax_4096x1024_ms", ms);
}

void bench_conv2d(double matmul_1024_gflops) {
  Tensor x = Tensor::rand({32, 64, 56, 56}).realize(), w = Tensor::rand({64, 64, 3, 3}).realize();
  double t = best_kernel_seconds([&] { return x.conv2d(w, {}, 1, 1); }, 3);
  double gflops = 2.0 * 32 * 64 * 56 * 56 * 64 * 9 / t / 1e9;
  std::printf("conv2d (32,64,56,56)x(64,64,3,3) pad 1  kiln %8.2f GFLOP/s  (%.1f ms, %.2f of peak)  ratio to kiln "
              "matmul 1024 %.3f\n",
              gflops, t * 1e3, gflops / machine_fma_gflops, gflops / matmul_1024_gflops);
  figures.add("conv2d_ms", t * 1e3);
  figures.add("conv2d_gflops", gflops);
  figures.add("conv2d_vs_matmul_1024", gflops / matmul_1024_gflops);
  figures.add("conv2d_of_fma_peak", gflops / machine_fma_gflops);
}

// ---- gather: a training batch of rows picked from a dataset by an index tensor

void bench_gather() {
  Tensor x = Tensor::rand({60000, 784}).realize();
  Tensor samp = Tensor::randint({128}, 0, 60000).realize();
  double ms = best_kernel_seconds([&] { return x.index_select(0, samp); }, 10) * 1e3;
  std::printf("gather 128 rows of 60000x784 kiln %8.3f ms\n", ms);
  figures.add("gather_128_of_60000x784_ms", ms);
}

// ---- overheads: dispatch of cached tiny kernels, cold compile

// Wall microseconds per realize of make(), averaged over many, after warm-up (compile, caches).
template <class F>
double us_per_realize(F make) {
  for (int i = 0; i < 50; i++) make().realize();
  const int iters = 2000;
  auto t0 = bench::Clock::now();
  for (int i = 0; i < iters; i++) make().realize();
  return bench::seconds_since(t0) / iters * 1e6;
}

void bench_dispatch() {
  Tensor a = Tensor::rand({4}).realize(), b = Tensor::rand({4}).realize();
  double add_us = us_per_realize([&] { return a + b; });
  double chain_us = us_per_realize([&] {
    Tensor t = a;
    for (int k = 0; k < 5; k++) t = t * b + a;  // two ops per step, fused into one kernel
    return t;
  });
  // A program holds many realized tensors (parameters, optimizer state, data): they should cost
  // a realize nothing.
  std::vector<Tensor> held;
  for (int i = 0; i < 1000; i++) held.push_back(Tensor::rand({4}).realize());
  double add_held_us = us_per_realize([&] { return a + b; });
  std::printf("dispatch (a+b) on 4 floats   kiln %8.2f us per realize\n", add_us);
  std::printf("dispatch 10-op chain, 4 fl.  kiln %8.2f us per realize\n", chain_us);
  std::printf("dispatch (a+b), 1000 held    kiln %8.2f us per realize (1000 other tensors live)\n", add_held_us);
  figures.add("dispatch_add_us", add_us);
  figures.add("dispatch_chain10_us", chain_us);
  figures.add("dispatch_add_1000_live_us", add_held_us);
}

// The first realize of a kernel no cache has seen (KILN_CACHE is a fresh folder, the constant is
// random) against realizing the same graph again.
void bench_compile() {
  Tensor a = Tensor::rand({1024}).realize();
  // Median of several new kernels (each with a constant no cache has seen): one compile is a
  // process start of clang, whose time varies by several ms from run to run.
  constexpr int kSamples = 5;
  std::vector<double> cold_ms, cached_ms;
  std::random_device seed;
  for (int i = 0; i < kSamples; i++) {
    const float unique = 1.0f + static_cast<float>(seed() % 1000000) * 1e-7f;
    auto make = [&] { return (a * unique).exp2() + unique; };
    auto t0 = bench::Clock::now();
    make().realize();
    cold_ms.push_back(bench::seconds_since(t0) * 1e3);
    t0 = bench::Clock::now();
    make().realize();
    cached_ms.push_back(bench::seconds_since(t0) * 1e3);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double cold = median(cold_ms), cached = median(cached_ms);
  std::printf("new small kernel             cold %8.2f ms  cached %.3f ms  cold/cached %.0f  (medians of %d)\n", cold,
              cached, cold / cached, kSamples);
  figures.add("compile_cold_ms", cold);
  figures.add("compile_cached_ms", cached);
  figures.add("compile_cold_over_cached", cold / cached);
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_path = "bench/results/kernels.txt";
  std::vector<std::string> groups = {"compile", "matmul", "memory", "softmax", "conv", "gather", "dispatch"};
  const std::vector<std::string> all_groups = groups;
  std::vector<int64_t> sizes = {256, 512, 1024, 2048, 257, 1000};
  int beam = 2;
  CLI::App app{"Kernel benchmarks against OpenBLAS, a STREAM triad and kiln's own matmul."};
  app.add_option("out_file", out_path, "Figures as key value lines (JSON appended to the .jsonl beside it)")
      ->capture_default_str();
  app.add_option("--only", groups, "Groups to run")->check(CLI::IsMember(all_groups))->delimiter(',');
  // sizes without tile divisors too: 257 is prime, 1000 = 8 x 125 (padded to whole tiles)
  app.add_option("--sizes", sizes, "Matmul sizes")->check(CLI::PositiveNumber)->delimiter(',')->capture_default_str();
  app.add_option("--beam", beam, "BEAM width of the matmul figures (0: none)")->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  auto wanted = [&](const std::string& g) { return std::find(groups.begin(), groups.end(), g) != groups.end(); };
  // A fresh kernel cache before the first kiln call, so the compile figure is truly cold.
  char cache_template[] = "/tmp/kiln-bench-cache-XXXXXX";
  const char* cache = mkdtemp(cache_template);
  if (!cache) {
    std::perror("mkdtemp");
    return 1;
  }
  setenv("KILN_CACHE", cache, 1);
  Tensor::manual_seed(1);

  if (wanted("compile")) bench_compile();
  bench_machine();
  double mm_1024 = 0;
#ifdef KILN_BENCH_HAVE_CBLAS
  if (wanted("matmul")) report_openblas_core();
#endif
  if (wanted("matmul"))
    for (int64_t n : sizes) {
      double gflops = bench_matmul(n, beam);
      if (n == 1024) mm_1024 = gflops;
    }
  if (wanted("memory")) bench_memory_bound();
  if (wanted("softmax")) bench_softmax();
  if (wanted("conv")) bench_conv2d(mm_1024 > 0 ? mm_1024 : bench_matmul(1024, 0));
  if (wanted("gather")) bench_gather();
  if (wanted("dispatch")) bench_dispatch();

  figures.write_text(out_path);
  figures.append_json(std::filesystem::path(out_path).replace_extension(".jsonl").string(), "kernels");
  std::filesystem::remove_all(cache);
  return 0;
}
