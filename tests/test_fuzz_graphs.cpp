// Random op-graph fuzzer: seeded random tensor programs (elementwise, broadcasting, reductions,
// movement, contiguous, matmul, softmax; intermediate values reused several ways, some realized
// before the result) are run through kiln and compared with the double-precision reference of
// reference.h. They target the scheduler (rangeify/kernelize: fuse or realize, the index math of
// views) and the kernel opts (UPCAST on reductions, THREAD on big kernels): shapes include 1s, dims
// divisible by 8, and now and then ~70k elements. A second test runs each program with and without
// NOOPT: optimizations must not change results.
//
// Each program is a list of steps, printed as kiln C++ on failure with the seed that regenerates it:
//   KILN_FUZZ_SEED=<seed> KILN_FUZZ_COUNT=1 ./test_fuzz_graphs --gtest_filter=<test>
// KILN_FUZZ_SEED (first seed, default below) and KILN_FUZZ_COUNT (programs per test) override the
// defaults, e.g. KILN_FUZZ_COUNT=3000 for a long run; KILN_FUZZ_MAX_FAILURES (default 10) is how
// many failing programs a test reports before it stops.
//
// The programs and their generator are in fuzz_generator.h, the reference values in
// fuzz_reference.h; the smallest programs past failures reduced to are kept in
// test_fuzz_graphs_regressions.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_generator.h"
#include "kiln/counters.h"
#include "reference.h"
#include "support/env.h"

namespace {

using namespace fuzz;

constexpr uint64_t kDefaultSeed = 20250101;

// ======================================================================= running and comparing
struct RunResult {
  std::vector<std::vector<double>> got;  // per checked value
  std::vector<Shape> shapes;
  std::string error;  // an exception's message
  int64_t kernels = 0;
};

RunResult run_program(const Program& p) {
  RunResult out;
  Vals V;
  kiln::GlobalCounters::reset();
  try {
    for (const NdArray& in : p.inputs) V.push_back(kt::make(in));
    for (const Step& s : p.steps) {
      if (s.realize >= 0) V[static_cast<size_t>(s.realize)].realize();
      else V.push_back(s.fn(V));
    }
    for (int i : p.checked) {
      out.got.push_back(kt::read(V[static_cast<size_t>(i)]));
      out.shapes.push_back(V[static_cast<size_t>(i)].shape());
    }
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  out.kernels = kiln::GlobalCounters::kernel_count;
  return out;
}

struct Stats {
  int64_t programs = 0, steps = 0, kernels = 0, compared = 0, skipped = 0, failures = 0;
  void print(const char* what) const {
    std::printf("[fuzz] %s: %lld programs, %lld steps, %lld kernels run, %lld elements compared (%lld near-ties "
                "skipped), %lld failing\n",
                what, (long long)programs, (long long)steps, (long long)kernels, (long long)compared,
                (long long)skipped, (long long)failures);
  }
};

// "" when `got` matches `want` on every reliable element; counts the compared elements.
std::string compare(const std::vector<double>& got, const Shape& got_shape, const RV& want, Stats& st) {
  std::ostringstream os;
  os.precision(9);
  if (got_shape != want.v.shape) {
    os << "shape " << ref::shape_str(got_shape) << ", expected " << ref::shape_str(want.v.shape);
    return os.str();
  }
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < want.v.size(); i++) {
    if (want.bad.data[i] != 0) {
      st.skipped++;
      continue;
    }
    st.compared++;
    double g = got[static_cast<size_t>(i)], w = want.v.data[i];
    if (!(std::fabs(g - w) <= kAtol + kRtol * want.mag.data[i])) {  // NaN fails too
      if (first < 0) first = i;
      bad++;
    }
  }
  if (bad == 0) return "";
  os << bad << " of " << want.v.size() << " values differ; first at "
     << ref::index_str(ref::unravel(first, want.v.shape)) << " of shape " << ref::shape_str(want.v.shape)
     << ": got " << got[static_cast<size_t>(first)] << ", expected "
     << want.v.data[first] << " (tolerance " << kAtol + kRtol * want.mag.data[first] << ")";
  return os.str();
}

// got vs another run's values, on the reliable elements, with the reference's error scale.
std::string compare_runs(const std::vector<double>& a, const std::vector<double>& b, const RV& want) {
  std::ostringstream os;
  os.precision(9);
  if (a.size() != b.size()) return "sizes differ";
  for (size_t i = 0; i < a.size(); i++) {
    if (want.bad.data[i] != 0) continue;
    if (!(std::fabs(a[i] - b[i]) <= kAtol + kRtol * want.mag.data[i])) {
      os << "first difference at " << ref::index_str(ref::unravel(static_cast<int64_t>(i), want.v.shape))
         << ": optimized " << a[i] << ", NOOPT " << b[i] << " (reference " << want.v.data[i] << ")";
      return os.str();
    }
  }
  return "";
}

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  try {
    return std::stoull(v);
  } catch (const std::exception&) {
    return fallback;
  }
}

std::string repro(uint64_t seed, const char* test) {
  return "reproduce: KILN_FUZZ_SEED=" + std::to_string(seed) +
         " KILN_FUZZ_COUNT=1 ./test_fuzz_graphs --gtest_filter=Fuzz." + test;
}


// Failures reported per test before it stops (KILN_FUZZ_MAX_FAILURES overrides).
int64_t max_failures() { return static_cast<int64_t>(env_u64("KILN_FUZZ_MAX_FAILURES", 10)); }

// ======================================================================= tests

// The program of `seed`; false (a failure of the fuzzer itself) if generating it throws.
bool generate(Program& p, uint64_t seed, uint64_t salt, Bias bias, Stats& st) {
  try {
    p = Generator(seed, salt, bias).make();
    return true;
  } catch (const std::exception& e) {
    st.failures++;
    ADD_FAILURE() << "generating the program of seed " << seed << " threw: " << e.what();
    return false;
  }
}

// Random programs against the reference.
TEST(Fuzz, RandomPrograms) {
  const uint64_t first = env_u64("KILN_FUZZ_SEED", kDefaultSeed);
  const uint64_t n = env_u64("KILN_FUZZ_COUNT", 150);
  Stats st;
  for (uint64_t seed = first; seed < first + n && st.failures < max_failures(); seed++) {
    Program p;
    if (!generate(p, seed, 1, Bias{}, st)) continue;
    RunResult r = run_program(p);
    st.programs++;
    st.steps += static_cast<int64_t>(p.steps.size());
    st.kernels += r.kernels;
    std::string why = r.error.empty() ? "" : "threw: " + r.error;
    for (size_t i = 0; why.empty() && i < p.checked.size(); i++) {
      std::string e = compare(r.got[i], r.shapes[i], p.refs[static_cast<size_t>(p.checked[i])], st);
      if (!e.empty()) why = vname(p.checked[i]) + ": " + e;
    }
    if (!why.empty()) {
      st.failures++;
      ADD_FAILURE() << why << "\n" << repro(seed, "RandomPrograms") << "\n" << p.listing();
    }
  }
  st.print("RandomPrograms");
}

// Each program twice: with the kernel opts (UPCAST, THREAD) and with NOOPT=1. Both must match the
// reference, and each other: optimizations must not change results. The NOOPT run starts from new
// input buffers: identical graphs are hash-consed, and realize() rewires every live tensor that
// shares a computation, so reusing the inputs would just read the first run's buffers.
TEST(Fuzz, OptimizationsDoNotChangeResults) {
  const uint64_t first = env_u64("KILN_FUZZ_SEED", kDefaultSeed);
  const uint64_t n = env_u64("KILN_FUZZ_COUNT", 50);
  Stats st;
  for (uint64_t seed = first; seed < first + n && st.failures < max_failures(); seed++) {
    Program p;
    if (!generate(p, seed, 2, Bias{0.5, 0.1}, st)) continue;
    RunResult opt = run_program(p);
    RunResult noopt;
    {
      kiln::env::ScopedEnv no("NOOPT", "1");
      noopt = run_program(p);
    }
    st.programs++;
    st.steps += static_cast<int64_t>(p.steps.size());
    st.kernels += opt.kernels + noopt.kernels;
    std::string why;
    if (!opt.error.empty()) why = "optimized run threw: " + opt.error;
    else if (!noopt.error.empty()) why = "NOOPT run threw: " + noopt.error;
    for (size_t i = 0; why.empty() && i < p.checked.size(); i++) {
      const RV& want = p.refs[static_cast<size_t>(p.checked[i])];
      std::string e = compare(opt.got[i], opt.shapes[i], want, st);
      if (!e.empty()) why = vname(p.checked[i]) + " (optimized): " + e;
      e = why.empty() ? compare(noopt.got[i], noopt.shapes[i], want, st) : "";
      if (!e.empty()) why = vname(p.checked[i]) + " (NOOPT): " + e;
      e = why.empty() ? compare_runs(opt.got[i], noopt.got[i], want) : "";
      if (!e.empty()) why = vname(p.checked[i]) + ": " + e;
    }
    if (!why.empty()) {
      st.failures++;
      ADD_FAILURE() << why << "\n" << repro(seed, "OptimizationsDoNotChangeResults") << "\n" << p.listing();
    }
  }
  st.print("OptimizationsDoNotChangeResults");
}

// The fuzzer's own reference plumbing, on a program small enough to check by hand.
TEST(Fuzz, ReferenceSelfCheck) {
  RV x = leaf(NdArray({3}, {1, -2, 3}));
  RV f = movement(x, [](const NdArray& a) { return ref::flip(a, {0}); });
  RV w = where_gt(x, f, x, scalar_rv(0));  // 1 > 3, -2 > -2 (a tie), 3 > 1
  EXPECT_EQ(w.v.data, (std::vector<double>{0, 0, 3}));
  EXPECT_EQ(w.bad.data, (std::vector<double>{0, 1, 0}));
  RV s = reduce(w, Red::Sum, {}, false);
  EXPECT_EQ(s.bad.data, (std::vector<double>{1}));  // a sum over an unreliable element is unreliable
  RV d = bin_ref(Bin::Sub, x, x, false);
  EXPECT_EQ(d.v.data, (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(d.mag.data, (std::vector<double>{2, 4, 6}));  // cancellation keeps the inputs' error scale
  // programs are deterministic in their seed
  EXPECT_EQ(Generator(42, 1, Bias{}).make().listing(), Generator(42, 1, Bias{}).make().listing());
}
}  // namespace
