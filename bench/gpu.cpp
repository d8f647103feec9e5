// Large kernels on the default device (DEV=CUDA on a GPU), for a comparison with PyTorch on the same
// device (bench/torch_gpu.py reads this program's figures and times the same cases): matmuls at
// 4096 in float32, float16 and bfloat16, a softmax, a 3x3 convolution. Each case is timed as a user
// sees it (graph, schedule, launches, and the device synchronized before the clock is read): the
// median of several runs after warm-up runs that compile. A few outputs of each are checked against
// float64 sums on the host, so a fast wrong kernel shows. --small: sizes for a CPU (scripts/gpu_check.sh
// --dry-run). Writes `key value` lines to out_file: per case <case>_ms, <case>_work (flops, or the
// bytes read and written once), <case>_error (the worst checked error over its tolerance) and
// <case>_spec, the case in a word bench/torch_gpu.py rebuilds it from (op:sizes:dtype).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include <CLI/CLI.hpp>

#include "bench_util.h"

using kiln::DType;
using kiln::Tensor;
namespace dtypes = kiln::dtypes;

namespace {

struct Case {
  std::string name, spec;
  double work;  // flops, or bytes read and written once
  const char* unit;
  std::vector<Tensor> inputs;
  std::function<Tensor(const std::vector<Tensor>&)> op;
  // The worst error of a few output elements against float64 sums, over its tolerance (<= 1 passes).
  std::function<double(const std::vector<std::vector<float>>& in, const std::vector<float>& out)> check;
};

std::vector<float> host(const Tensor& t) { return t.cast(dtypes::float32).to_vector<float>(); }

// Relative tolerance of a 16-bit result (its rounding) or a float32 one (accumulation over k terms).
double tolerance(DType dtype) { return dtype == dtypes::float32 ? 1e-4 : 1e-2; }

Case matmul(int64_t n, DType dtype) {
  Case c{"matmul_" + std::to_string(n) + "_" + dtype.name(), "matmul:" + std::to_string(n) + ":" + dtype.name(),
         2.0 * n * n * n, "TFLOP/s", {Tensor::randn({n, n}).cast(dtype), Tensor::randn({n, n}).cast(dtype)},
         [](const auto& x) { return x[0].matmul(x[1]); }, nullptr};
  c.check = [n, tol = tolerance(dtype)](const auto& in, const std::vector<float>& out) {
    double worst = 0;
    for (int64_t s = 0; s < 16; s++) {
      int64_t i = (s * 7919) % n, j = (s * 104729 + 13) % n;
      double want = 0, scale = 0;
      for (int64_t k = 0; k < n; k++) {
        double term = double(in[0][i * n + k]) * in[1][k * n + j];
        want += term;
        scale += term * term;
      }
      worst = std::max(worst, std::fabs(out[i * n + j] - want) / (tol * (std::fabs(want) + std::sqrt(scale))));
    }
    return worst;
  };
  return c;
}

Case softmax(int64_t rows, int64_t cols) {
  Case c{"softmax_" + std::to_string(rows) + "x" + std::to_string(cols),
         "softmax:" + std::to_string(rows) + ":" + std::to_string(cols) + ":float32", 8.0 * rows * cols, "GB/s",
         {Tensor::randn({rows, cols})}, [](const auto& x) { return x[0].softmax(1); }, nullptr};
  c.check = [rows, cols](const auto& in, const std::vector<float>& out) {
    double worst = 0;
    for (int64_t s = 0; s < 8; s++) {
      const int64_t r = (s * 7919) % rows;
      const float* x = &in[0][r * cols];
      double top = *std::max_element(x, x + cols), sum = 0;
      for (int64_t k = 0; k < cols; k++) sum += std::exp(x[k] - top);
      for (int64_t k = 0; k < cols; k++) {
        double want = std::exp(x[k] - top) / sum;
        worst = std::max(worst, std::fabs(out[r * cols + k] - want) / (1e-4 * want + 1e-9));
      }
    }
    return worst;
  };
  return c;
}

// NCHW input, channels in = channels out, a 3x3 kernel with padding 1 (the size stays).
Case conv2d(int64_t batch, int64_t channels, int64_t side) {
  const std::string dims = std::to_string(batch) + ":" + std::to_string(channels) + ":" + std::to_string(side);
  Case c{"conv2d_" + std::to_string(batch) + "x" + std::to_string(channels) + "x" + std::to_string(side) + "_3x3",
         "conv2d:" + dims + ":float32", 2.0 * batch * channels * channels * 9 * side * side, "TFLOP/s",
         {Tensor::randn({batch, channels, side, side}), Tensor::randn({channels, channels, 3, 3})},
         [](const auto& x) { return x[0].conv2d(x[1], std::nullopt, 1, 1); }, nullptr};
  c.check = [batch, channels, side](const auto& in, const std::vector<float>& out) {
    double worst = 0;
    for (int64_t s = 0; s < 16; s++) {
      int64_t b = s % batch, o = (s * 31) % channels, y = (s * 17) % side, x = (s * 5 + 3) % side;
      double want = 0, scale = 0;
      for (int64_t i = 0; i < channels; i++)
        for (int64_t ky = 0; ky < 3; ky++)
          for (int64_t kx = 0; kx < 3; kx++) {
            int64_t iy = y + ky - 1, ix = x + kx - 1;
            if (iy < 0 || iy >= side || ix < 0 || ix >= side) continue;
            double term = double(in[0][((b * channels + i) * side + iy) * side + ix]) *
                          in[1][((o * channels + i) * 3 + ky) * 3 + kx];
            want += term;
            scale += term * term;
          }
      double got = out[((b * channels + o) * side + y) * side + x];
      worst = std::max(worst, std::fabs(got - want) / (1e-4 * (std::fabs(want) + std::sqrt(scale))));
    }
    return worst;
  };
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_path = "bench/results/gpu.txt";
  bool small = false;
  int reps = 10;
  CLI::App app{"Large matmuls, a softmax and a convolution on the default device (DEV), for bench/torch_gpu.py."};
  app.add_option("out_file", out_path, "Figures as key value lines")->capture_default_str();
  app.add_flag("--small", small, "CPU-sized cases, to try the pipeline without a GPU");
  app.add_option("--reps", reps, "Timed runs per case (the median is kept)")->check(CLI::PositiveNumber)
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  Tensor::manual_seed(1);
  const int64_t n = small ? 256 : 4096;
  std::vector<std::function<Case()>> cases = {
      [&] { return matmul(n, dtypes::float32); },
      [&] { return matmul(n, dtypes::float16); },
      [&] { return matmul(n, dtypes::bfloat16); },
      [&] { return small ? softmax(512, 1024) : softmax(8192, 8192); },
      [&] { return small ? conv2d(2, 16, 16) : conv2d(32, 128, 56); },
  };
  const std::string device = kiln::runtime::default_device();
  kiln::runtime::Device& dev = kiln::runtime::get_device(device);
  bench::Figures figures;
  figures.note("device", device);
  std::printf("%-28s %10s %12s %8s   (on %s, median of %d)\n", "case", "ms", "rate", "error", device.c_str(), reps);
  int failed = 0;
  for (const auto& make : cases) {
    Case c = make();
    // One case's failure (a kernel NVRTC refuses, say) is reported and the others still run.
    try {
      for (Tensor& t : c.inputs) t.realize();
      Tensor result = c.op(c.inputs).realize();
      std::vector<std::vector<float>> in;
      for (const Tensor& t : c.inputs) in.push_back(host(t));
      const double error = c.check(in, host(result));
      const double ms = bench::median_wall_seconds([&] {
        c.op(c.inputs).realize();
        dev.synchronize();
      }, reps) * 1e3;
      const double rate = c.work / (ms * 1e-3) / (c.unit[0] == 'T' ? 1e12 : 1e9);
      figures.add(c.name + "_ms", ms);
      figures.add(c.name + "_work", c.work);
      figures.add(c.name + "_error", error);
      figures.note(c.name + "_spec", c.spec);
      std::printf("%-28s %10.3f %8.2f %-7s %8.2g%s\n", c.name.c_str(), ms, rate, c.unit, error,
                  error <= 1 ? "" : "  WRONG (over tolerance)");
      failed += !(error <= 1);
    } catch (const std::exception& e) {
      std::printf("%-28s failed: %s\n", c.name.c_str(), e.what());
      failed++;
    }
    std::fflush(stdout);
  }
  figures.write_text(out_path);
  return failed ? 1 : 0;
}
