// kiln on MYCPU, the device in mycpu_device.cpp, registered from outside the library:
//   1. the quickstart's fused expression, and a row sum split over the device's cores, checked
//      against naive loops in double;
//   2. one SGD step of a small MLP, checked against the same step on kiln's own CPU device (run in
//      a child process with DEV=CPU, since a process keeps the DEV it started with).
// Exits 0 when both match, 1 otherwise. DEBUG=2 shows each kernel launch, DEBUG=4 its C source.
#include <kiln/device.h>
#include <kiln/kiln.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "mycpu_device.h"

using namespace kiln;

namespace {

// |got - want| <= atol + rtol * |want| for every element; reports the first few that are not.
bool close(const char* what, const std::vector<double>& got, const std::vector<double>& want, double atol,
           double rtol) {
  if (got.size() != want.size()) {
    std::printf("FAIL %s: %zu values, expected %zu\n", what, got.size(), want.size());
    return false;
  }
  int bad = 0;
  for (size_t i = 0; i < got.size(); i++) {
    if (std::fabs(got[i] - want[i]) <= atol + rtol * std::fabs(want[i])) continue;
    if (bad++ < 5) std::printf("FAIL %s[%zu]: %.9g, expected %.9g\n", what, i, got[i], want[i]);
  }
  std::printf("%s %s: %zu values within %g + %g*|expected|\n", bad ? "FAIL" : "ok  ", what, got.size(), atol, rtol);
  return bad == 0;
}

std::vector<double> values(const Tensor& t) {
  std::vector<float> v = t.to_vector<float>();
  return {v.begin(), v.end()};
}

// (a*b + c).relu()*2 - 1 with broadcasting, one fused kernel, against the same in double.
bool check_quickstart() {
  Tensor::manual_seed(0);
  Tensor a = Tensor::randn({4, 1}), b = Tensor::randn({1, 8}), c = Tensor::randn({4, 8});
  Tensor::realize({a, b, c});  // so the schedule below holds the expression's kernels only
  Tensor y = (a * b + c).relu() * 2.0f - 1.0f;
  std::printf("(a*b+c).relu()*2-1 on %s -> %zu kernel(s)\n", y.device().c_str(), y.schedule().size());
  std::vector<double> va = values(a), vb = values(b), vc = values(c), want;
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 8; j++) want.push_back(std::max(0.0, va[i] * vb[j] + vc[i * 8 + j]) * 2 - 1);
  return close("quickstart", values(y), want, 1e-6, 1e-6);  // float32 rounding of three operations
}

// A row sum big enough (64 x 2048) that kiln splits its rows over MYCPU's 4 cores (core_id 0..3).
bool check_split_reduction() {
  Tensor m = Tensor::rand({64, 2048});
  std::vector<double> vm = values(m), want(64, 0.0);
  for (int i = 0; i < 64 * 2048; i++) want[i / 2048] += vm[i] * 2 + 1;
  // float32 partial sums of 2048 terms in [1, 3): a few ulps of the ~4096 total
  return close("row sums over 4 cores", values((m * 2.0f + 1.0f).sum({1})), want, 0, 1e-5);
}

// x (8,4) -> Linear(4,16) -> relu -> Linear(16,3), mean squared error against targets, one SGD step
// (lr 0.1). Inputs and initial weights are fixed formulas, so every device starts from the same
// numbers.
struct Mlp {
  static std::vector<float> formula(int64_t n, double scale, double phase) {
    std::vector<float> v(n);
    for (int64_t i = 0; i < n; i++) v[i] = float(scale * std::sin(0.7 * double(i) + phase));
    return v;
  }
  std::vector<float> x = formula(8 * 4, 1.0, 0.1), target = formula(8 * 3, 0.5, 1.3);
  std::vector<std::vector<float>> params = {formula(4 * 16, 0.5, 0.2), formula(16, 0.1, 0.4), formula(16 * 3, 0.3, 0.6),
                                            formula(3, 0.1, 0.8)};
  std::vector<Shape> shapes = {{4, 16}, {16}, {16, 3}, {3}};

  // The initial w1, b1, w2, b2, flattened.
  std::vector<double> initial() const {
    std::vector<double> out;
    for (const std::vector<float>& p : params) out.insert(out.end(), p.begin(), p.end());
    return out;
  }

  // Runs the step on the default device; returns the loss, then the updated w1, b1, w2, b2.
  std::vector<double> step() const {
    std::vector<Tensor> w;
    for (size_t i = 0; i < params.size(); i++) w.push_back(Tensor::from_vector(params[i], shapes[i]).requires_grad_());
    nn::optim::SGD sgd(w, 0.1);
    Tensor out = Tensor::from_vector(x, {8, 4}).matmul(w[0]).add(w[1]).relu().matmul(w[2]).add(w[3]);
    Tensor loss = (out - Tensor::from_vector(target, {8, 3})).square().mean();
    sgd.zero_grad();
    loss.backward();
    std::vector<double> result = {loss.item<float>()};
    sgd.step();
    for (const Tensor& p : sgd.params) {
      std::vector<double> v = values(p);
      result.insert(result.end(), v.begin(), v.end());
    }
    return result;
  }
};

// The training step on DEV=CPU: this program again, in reference mode, printing exact hex floats.
std::vector<double> training_step_on_cpu() {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe");  // (in the shell it is the shell)
  FILE* child = popen(("DEV=CPU '" + self + "' --cpu-reference").c_str(), "r");
  std::vector<double> out;
  if (!child) return out;
  char line[64];
  while (std::fgets(line, sizeof line, child)) out.push_back(std::strtod(line, nullptr));
  if (pclose(child) != 0) out.clear();  // the reference failed: an empty result fails the check
  return out;
}

bool check_training_step() {
  std::vector<double> on_mycpu = Mlp().step(), on_cpu = training_step_on_cpu(), initial = Mlp().initial();
  std::printf("MLP step on MYCPU: loss %.6f (on CPU %.6f)\n", on_mycpu[0], on_cpu.empty() ? NAN : on_cpu[0]);
  // The step must have moved the weights, or agreeing with CPU would prove little.
  double largest_update = 0;
  for (size_t i = 0; i < initial.size(); i++)
    largest_update = std::max(largest_update, std::fabs(on_mycpu[i + 1] - initial[i]));
  std::printf("%s largest weight update %.3g\n", largest_update > 1e-3 ? "ok  " : "FAIL", largest_update);
  // Both devices compute in float32 with different compilers and flags (CPU fuses multiply-adds);
  // sums of up to 16 products differ by a few ulps.
  return close("training step (loss, w1, b1, w2, b2) vs CPU", on_mycpu, on_cpu, 1e-5, 1e-4) && largest_update > 1e-3;
}

}  // namespace

int main(int argc, char** argv) {
  mycpu::register_mycpu(100);
  try {
    if (argc == 2 && std::string(argv[1]) == "--cpu-reference") {
      for (double v : Mlp().step()) std::printf("%a\n", v);
      return 0;
    }
    if (runtime::default_device() != "MYCPU") {
      std::fprintf(stderr, "run without DEV (or with DEV=MYCPU); DEV=%s\n", runtime::default_device().c_str());
      return 2;
    }
    bool ok = check_quickstart();
    ok = check_split_reduction() && ok;
    ok = check_training_step() && ok;
    std::printf(ok ? "all checks passed\n" : "MISMATCH\n");
    return ok ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "kiln error: %s\n", e.what());
    return 1;
  }
}
