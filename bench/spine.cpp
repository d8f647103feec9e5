// Spine benchmark: a 16M-element fused elementwise kernel against memcpy bandwidth, and a
// 1024x1024 float32 matmul in GFLOP/s. Prints figures and writes them (key value per line) to the
// file given as argv[1] (default bench/results/spine.txt). bench/run.sh adds the NumPy reference.
#include <kiln/kiln.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

using namespace kiln;
using Clock = std::chrono::steady_clock;

namespace {

// Best of `reps` kernel times of building and realizing `make()` (compile excluded by a warm-up).
template <class F>
double best_kernel_seconds(F make, int reps) {
  make().realize();  // compile once
  double best = 1e30;
  for (int i = 0; i < reps; i++) {
    GlobalCounters::reset();
    make().realize();
    best = std::min(best, GlobalCounters::time_sum_s);
  }
  return best;
}

// memcpy on as many threads as kiln's kernels use, each copying its share.
double memcpy_gbps(size_t bytes, int reps) {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  double best = 1e30;
  for (int i = 0; i < reps; i++) {
    auto t0 = Clock::now();
    std::vector<std::thread> workers;
    for (unsigned t = 0; t < threads; t++)
      workers.emplace_back([&, t] {
        size_t lo = bytes * t / threads, hi = bytes * (t + 1) / threads;
        std::memcpy(dst.data() + lo, src.data() + lo, hi - lo);
      });
    for (auto& w : workers) w.join();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return 2.0 * bytes / best / 1e9;  // read + write
}

}  // namespace

int main(int argc, char** argv) {
  const char* out_path = argc > 1 ? argv[1] : "bench/results/spine.txt";
  Tensor::manual_seed(1);

  const int64_t n = 16 * 1024 * 1024;
  Tensor a = Tensor::rand({n}).realize(), b = Tensor::rand({n}).realize(), c = Tensor::rand({n}).realize();
  double t_ew = best_kernel_seconds([&] { return (a * b + c).relu() * 2.0f - 1.0f; }, 10);
  double ew_gbps = 4.0 * n * 4 / t_ew / 1e9;  // three loads and one store of float32
  double ref_gbps = memcpy_gbps(static_cast<size_t>(n) * 4, 10);

  const int64_t m = 1024;
  Tensor x = Tensor::rand({m, m}).realize(), y = Tensor::rand({m, m}).realize();
  double t_mm = best_kernel_seconds([&] { return x.matmul(y); }, 3);
  double mm_gflops = 2.0 * m * m * m / t_mm / 1e9;

  std::printf("elementwise (a*b+c).relu()*2-1, 16M float32: %8.2f ms  %7.2f GB/s  memcpy %7.2f GB/s  ratio %.2f\n",
              t_ew * 1e3, ew_gbps, ref_gbps, ew_gbps / ref_gbps);
  std::printf("matmul 1024x1024 float32:                    %8.2f ms  %7.2f GFLOP/s\n", t_mm * 1e3, mm_gflops);
  std::ofstream out(out_path);
  out << "elementwise_16M_ms " << t_ew * 1e3 << "\nelementwise_16M_gbps " << ew_gbps << "\nmemcpy_gbps " << ref_gbps
      << "\nelementwise_vs_memcpy " << ew_gbps / ref_gbps << "\nmatmul_1024_ms " << t_mm * 1e3
      << "\nmatmul_1024_gflops " << mm_gflops << "\n";
  return 0;
}
