// Devices side by side: a few kernels timed on OpenCL (DEV=CL; PoCL on this machine runs on the
// CPU) next to the CPU device in the same run, with the ratio CL / CPU (above 1: CL is slower).
// LOCALS=0: the CL kernels get no work-group opts (LOCAL, GROUP), the figures before them;
// LOCALS=1: the work-group heuristics even where the device prefers loops (PoCL).
// Writes `key value` lines to argv[1] (default bench/results/devices.txt) and appends one JSON
// object per run to the .jsonl next to it. Without an OpenCL device it times the CPU only.
#include <cstdio>
#include <cstdlib>
#include <functional>

#include <CLI/CLI.hpp>

#include "bench_util.h"

using kiln::Tensor;

namespace {

struct Case {
  std::string name;
  double flops_or_bytes;  // per run: flops for matmul, bytes moved for the others
  const char* unit;       // "GFLOP/s" or "GB/s"
  std::function<Tensor(const std::vector<Tensor>&)> op;
  std::vector<kiln::Shape> inputs;
};

}  // namespace

int main(int argc, char** argv) {
  std::string out_path = "bench/results/devices.txt";
  CLI::App app{"OpenCL next to the CPU device on a few kernels."};
  app.add_option("out_file", out_path, "Figures as key value lines (JSON appended to the .jsonl beside it)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  const char* locals = std::getenv("LOCALS");
  const std::string prefix = locals ? std::string("locals") + locals + "_" : "";
  const auto names = kiln::runtime::device_names();
  const bool has_cl = std::find(names.begin(), names.end(), "CL") != names.end();
  const double m = 512, n16 = 16 << 20, rows = 4096, cols = 1024;
  const std::vector<Case> cases = {
      {"matmul_512", 2 * m * m * m, "GFLOP/s", [](const auto& x) { return x[0].matmul(x[1]); }, {{512, 512}, {512, 512}}},
      {"sum_16M", 4 * n16, "GB/s", [](const auto& x) { return x[0].sum(); }, {{16 << 20}}},
      {"softmax_4096x1024", 8 * rows * cols, "GB/s", [](const auto& x) { return x[0].softmax(1); }, {{4096, 1024}}},
      {"elementwise_16M", 12 * n16, "GB/s", [](const auto& x) { return x[0] * x[1] + 1.0f; }, {{16 << 20}, {16 << 20}}},
  };
  bench::Figures figures;
  std::printf("%-20s %14s %14s %8s\n", "case", "CPU", has_cl ? "CL" : "CL (none)", "CL/CPU");
  if (locals) std::printf("(LOCALS=%s)\n", locals);
  for (const Case& c : cases) {
    double seconds[2] = {0, 0};
    const std::vector<std::string> devices = has_cl ? std::vector<std::string>{"CPU", "CL"} : std::vector<std::string>{"CPU"};
    for (size_t d = 0; d < devices.size(); d++) {
      std::vector<Tensor> inputs;
      for (const kiln::Shape& s : c.inputs) inputs.push_back(Tensor::randn(s).to(devices[d]).realize());
      // wall time to the end of the kernels: OpenCL launches return before their kernels finish
      kiln::runtime::Device& dev = kiln::runtime::get_device(devices[d]);
      seconds[d] = bench::best_wall_seconds([&] {
        c.op(inputs).realize();
        dev.synchronize();
      }, 5);
      figures.add(prefix + c.name + "_" + devices[d] + "_ms", seconds[d] * 1e3);
    }
    auto rate = [&](double s) { return c.flops_or_bytes / s / 1e9; };
    if (has_cl) figures.add(prefix + c.name + "_CL_over_CPU", seconds[1] / seconds[0]);
    std::printf("%-20s %11.2f ms %11.2f ms %7.2fx   (%.1f / %.1f %s)\n", c.name.c_str(), seconds[0] * 1e3,
                seconds[1] * 1e3, has_cl ? seconds[1] / seconds[0] : 0.0, rate(seconds[0]),
                has_cl ? rate(seconds[1]) : 0.0, c.unit);
  }
  figures.write_text(out_path);
  figures.append_json(out_path.substr(0, out_path.rfind('.')) + ".jsonl", "devices");
  return 0;
}
