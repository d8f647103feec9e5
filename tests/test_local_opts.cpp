// LOCAL and GROUP opts (work-groups) on OpenCL (PoCL runs them on the CPU) and in CUDA C++:
// random legal opt sequences with them never change what a kernel computes, the work-group
// heuristics pick them and compute what naive float64 loops compute, every kernel with shared
// memory and barriers compiles with NVRTC, the names print and parse back, targets without
// work-groups refuse them by name, and BEAM on OpenCL searches among them and caches its answer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "codegen/codegen.h"
#include "engine/beam_search.h"
#include "error_message.h"
#include "opt_checks.h"
#include "kiln/kiln.h"
#include "runtime/cuda/cuda_compiler.h"
#include "runtime/cuda/cuda_program.h"
#include "runtime/device.h"
#include "support/env.h"
#include "temp_cache.h"

using namespace kiln;
using codegen::Opt;
using codegen::OptOp;

namespace {

bool has_cl() {
  const auto names = runtime::device_names();
  return std::find(names.begin(), names.end(), "CL") != names.end();
}

runtime::Device& cl() { return runtime::get_device("CL"); }

codegen::Target target_of(runtime::Device& dev, bool optimize = true) {
  return {&renderer::renderer_for(dev.language()), dev.max_threads(), optimize, dev.vector_bytes(),
          dev.max_local_size(), dev.local_memory_bytes()};
}

codegen::Target cuda_target() {
  return {&renderer::cuda_renderer(), 108 * 2048, true, 0, runtime::cuda::CudaProgram::kMaxBlockThreads,
          runtime::cuda::CudaProgram::kSharedMemoryBytes};
}

bool is_work_group_opt(const Opt& o) { return o.op == OptOp::LOCAL || o.op == OptOp::GROUP; }

// Elementwise, row sums, full sums, matmuls, softmax, argmax, reductions over each axis, sizes that
// divide badly (33, 35, 7), integer and float64 reductions, gated loads (padding).
std::vector<UOpRef> sample_kernels() {
  Tensor a = Tensor::randn({24, 40}).realize(), b = Tensor::randn({40, 20}).realize();
  Tensor c = Tensor::randn({3, 16, 8}).realize(), d = Tensor::randn({3, 8, 12}).realize();
  Tensor x = Tensor::randn({33, 64}).realize(), y = Tensor::randn({7, 35, 96}).realize();
  Tensor v = Tensor::randn({4096}).realize();
  Tensor ints = Tensor::randint({12, 30}, -50, 50).realize();
  std::vector<Tensor> programs = {x.exp() + 1.0f,
                                  a.matmul(b),
                                  c.matmul(d),
                                  x.sum({0}),
                                  x.sum({1}),
                                  y.sum({0}),
                                  y.sum({1}),
                                  y.sum({2}),
                                  y.sum(),
                                  v.sum(),
                                  x.max({1}),
                                  x.softmax(1),
                                  x.argmax(1),
                                  x.pad({{1, 2}, {3, 0}}).sum({1}),
                                  ints.sum({1}),
                                  x.cast(dtypes::float64).mean({0})};
  std::vector<UOpRef> kernels;
  for (const Tensor& t : programs)
    for (const ScheduleItem& item : t.schedule()) kernels.push_back(item.ast);
  return kernels;
}

// A random legal opt sequence of 1-4 steps, its first step a LOCAL or GROUP when one applies.
std::vector<Opt> random_opts(const UOpRef& ast, const codegen::Target& target, std::mt19937& rng) {
  std::vector<Opt> opts;
  UOpRef k = ast;
  const int steps = std::uniform_int_distribution<int>(1, 4)(rng);
  for (int s = 0; s < steps; s++) {
    std::vector<Opt> moves = codegen::possible_opts(k, target), groups;
    std::copy_if(moves.begin(), moves.end(), std::back_inserter(groups), is_work_group_opt);
    if (s == 0 && !groups.empty()) moves = groups;
    if (moves.empty()) break;
    opts.push_back(moves[std::uniform_int_distribution<size_t>(0, moves.size() - 1)(rng)]);
    k = codegen::apply_opt(k, opts.back(), target);
    EXPECT_TRUE(k) << "possible_opts offered " << opts.back().str() << ", which does not apply";
    if (!k) return {};
  }
  return opts;
}

}  // namespace

TEST(LocalOpts, PrintAndParseBack) {
  const std::vector<Opt> opts = {{OptOp::LOCAL, 1, 16}, {OptOp::GROUP, 2, 64}, {OptOp::THREAD, 0, 4}};
  const std::string text = codegen::opts_to_string(opts);
  EXPECT_EQ(text, "LOCAL(axis=1, amt=16)\nGROUP(axis=2, amt=64)\nTHREAD(axis=0, amt=4)\n");
  EXPECT_EQ(codegen::parse_opts(text), opts);
  EXPECT_NE(kt::error_of([] { codegen::parse_opts("LOCALS(axis=1, amt=16)\n"); }).find("LOCALS"), std::string::npos);
}

TEST(LocalOpts, TargetsWithoutWorkGroupsRefuseThem) {
  Tensor x = Tensor::randn({64, 64}).realize();
  const UOpRef elementwise = (x + 1.0f).schedule().at(0).ast, sum = x.sum({1}).schedule().at(0).ast;
  runtime::Device& cpu = runtime::get_device("CPU");
  const codegen::Target c = target_of(cpu);
  for (const Opt& o : codegen::possible_opts(sum, c)) EXPECT_FALSE(is_work_group_opt(o)) << o.str();
  EXPECT_FALSE(codegen::opt_applies(elementwise, {OptOp::LOCAL, 0, 16}, c));
  EXPECT_FALSE(codegen::opt_applies(sum, {OptOp::GROUP, 1, 16}, c));
  const std::string message = kt::error_of([&] { codegen::apply_opts(sum, codegen::parse_opts("GROUP(axis=1, amt=16)\n"), c); });
  EXPECT_NE(message.find("GROUP(axis=1, amt=16) needs a device with work-groups"), std::string::npos) << message;
  EXPECT_NE(message.find("the C target has none"), std::string::npos) << message;
  // the CPU's own choices have none either
  for (const UOpRef& ast : sample_kernels())
    for (const Opt& o : codegen::hand_coded_opts(ast, c)) EXPECT_FALSE(is_work_group_opt(o)) << o.str();
}

TEST(LocalOpts, LimitsOfTheWorkGroupAreKept) {
  Tensor x = Tensor::randn({64, 512}).realize();
  const UOpRef sum = x.sum({1}).schedule().at(0).ast;
  codegen::Target t = cuda_target();
  EXPECT_TRUE(codegen::opt_applies(sum, {OptOp::GROUP, 1, 256}, t));
  t.max_local_size = 128;
  EXPECT_FALSE(codegen::opt_applies(sum, {OptOp::GROUP, 1, 256}, t));  // more work-items than a group holds
  t.local_memory_bytes = 256;
  EXPECT_FALSE(codegen::opt_applies(sum, {OptOp::GROUP, 1, 128}, t));  // 128 float partials need 512 bytes
  EXPECT_FALSE(codegen::opt_applies(sum, {OptOp::GROUP, 1, 3}, t));    // 3 does not divide 512
  EXPECT_FALSE(codegen::opt_applies(sum, {OptOp::LOCAL, 1, 4}, t));    // axis 1 is reduced: GROUP's
  const UOpRef grouped = codegen::apply_opt(sum, {OptOp::GROUP, 1, 16}, cuda_target());
  ASSERT_TRUE(grouped);
  EXPECT_FALSE(codegen::opt_applies(grouped, {OptOp::GROUP, 1, 2}, cuda_target()));  // one GROUP per kernel
  EXPECT_FALSE(codegen::opt_applies(grouped, {OptOp::UNROLL, 1, 4}, cuda_target()));
}

TEST(LocalOpts, RandomLegalOptsWithWorkGroupsNeverChangeResults) {
  if (!has_cl()) GTEST_SKIP() << "no OpenCL device";
  kt::TempCache cache;
  std::mt19937 rng(20261125);
  const codegen::Target noopt = target_of(cl(), false), target = target_of(cl());
  ASSERT_GT(target.max_local_size, 1) << "the CL device reports no work-groups";
  int tried = 0, with_local = 0, with_group = 0;
  for (const UOpRef& ast : sample_kernels()) {
    const kt::WithoutOpts reference(ast, cl(), noopt, rng);
    for (int trial = 0; trial < 6; trial++) {
      const std::vector<Opt> opts = random_opts(ast, target, rng);
      with_local += std::any_of(opts.begin(), opts.end(), [](const Opt& o) { return o.op == OptOp::LOCAL; });
      with_group += std::any_of(opts.begin(), opts.end(), [](const Opt& o) { return o.op == OptOp::GROUP; });
      reference.expect_same_with(opts, target);
      tried++;
    }
  }
  EXPECT_GE(tried, 80);
  EXPECT_GE(with_local, 20);
  EXPECT_GE(with_group, 20);
}

TEST(LocalOpts, HeuristicsPickWorkGroupsAndMatchNaiveLoops) {
  if (!has_cl()) GTEST_SKIP() << "no OpenCL device";
  kt::TempCache cache;
  const codegen::Target target = target_of(cl());
  auto opts_of = [&](const Tensor& t) { return codegen::hand_coded_opts(t.schedule().at(0).ast, target); };
  auto has = [](const std::vector<Opt>& opts, OptOp op) {
    return std::any_of(opts.begin(), opts.end(), [&](const Opt& o) { return o.op == op; });
  };
  const int64_t n = 48, k = 72, m = 80;
  Tensor a = Tensor::randn({n, k}).realize(), b = Tensor::randn({k, m}).realize();
  Tensor ca = a.to("CL").realize(), cb = b.to("CL").realize();
  EXPECT_TRUE(has(opts_of(ca.matmul(cb)), OptOp::LOCAL));
  EXPECT_TRUE(has(opts_of(ca.sum()), OptOp::GROUP));
  EXPECT_TRUE(has(opts_of(ca.exp()), OptOp::LOCAL));
  // a target that prefers loops (PoCL's) gets the CPU's opts
  codegen::Target loops = target;
  loops.prefer_work_groups = false;
  for (const Opt& o : codegen::hand_coded_opts(ca.matmul(cb).schedule().at(0).ast, loops)) EXPECT_FALSE(is_work_group_opt(o));
  const std::vector<float> av = a.to_vector<float>(), bv = b.to_vector<float>();
  env::ScopedEnv locals("LOCALS", "1");  // the engine uses them even where the device prefers loops (PoCL)
  const std::vector<float> mm = ca.matmul(cb).to_vector<float>(), total = ca.sum().to_vector<float>();
  const std::vector<float> rows = ca.softmax(1).to_vector<float>(), e = ca.exp().to_vector<float>();
  double sum = 0;
  for (float f : av) sum += f;
  EXPECT_NEAR(total.at(0), sum, 1e-4 * (1 + std::fabs(sum)));
  for (int64_t i = 0; i < n; i++) {
    double row_max = -INFINITY, row_sum = 0;
    for (int64_t x = 0; x < k; x++) row_max = std::max<double>(row_max, av[i * k + x]);
    for (int64_t x = 0; x < k; x++) row_sum += std::exp(double(av[i * k + x]) - row_max);
    for (int64_t x = 0; x < k; x++) {
      ASSERT_NEAR(rows[i * k + x], std::exp(double(av[i * k + x]) - row_max) / row_sum, 1e-5);
      ASSERT_NEAR(e[i * k + x], std::exp(double(av[i * k + x])), 1e-5 * std::exp(double(av[i * k + x])));
    }
    for (int64_t j = 0; j < m; j++) {
      double want = 0;
      for (int64_t x = 0; x < k; x++) want += double(av[i * k + x]) * bv[x * m + j];
      ASSERT_NEAR(mm[i * m + j], want, 1e-4 * (1 + std::fabs(want)));
    }
  }
}

TEST(LocalOpts, SharedMemoryKernelsCompileAsCuda) {
  if (!runtime::cuda::nvrtc_available()) GTEST_SKIP() << "no NVRTC";
  std::mt19937 rng(7);
  runtime::cuda::CudaCompiler nvrtc(runtime::cuda::target_arch("compute_80"));
  const codegen::Target target = cuda_target();
  int barriers = 0;
  for (const UOpRef& ast : sample_kernels()) {
    std::vector<std::vector<Opt>> choices = {codegen::hand_coded_opts(ast, target)};
    for (int trial = 0; trial < 3; trial++) choices.push_back(random_opts(ast, target, rng));
    for (const auto& opts : choices) {
      const codegen::Program p = codegen::to_program(ast, target, opts);
      barriers += p.source.find("__syncthreads();") != std::string::npos;
      EXPECT_NO_THROW(nvrtc.compile(p.source)) << p.source;
    }
  }
  EXPECT_GE(barriers, 10);
}

TEST(LocalOpts, BeamOnOpenClSearchesWorkGroupsAndCaches) {
  if (!has_cl()) GTEST_SKIP() << "no OpenCL device";
  kt::TempCache cache;
  Tensor x = Tensor::randn({16, 1024}).realize();
  const UOpRef ast = x.sum({1}).schedule().at(0).ast;
  const codegen::Target target = target_of(cl());
  const auto moves = codegen::possible_opts(ast, target);
  EXPECT_TRUE(std::any_of(moves.begin(), moves.end(), [](const Opt& o) { return o.op == OptOp::GROUP; }));
  const engine::BeamStats before = engine::beam_stats();
  const std::vector<Opt> opts = engine::beam_search(ast, cl(), target, 2);
  EXPECT_EQ(engine::beam_stats().searches, before.searches + 1);
  EXPECT_EQ(engine::beam_search(ast, cl(), target, 2), opts) << "the first search chose:\n" << codegen::opts_to_string(opts);
  EXPECT_EQ(engine::beam_stats().cache_hits, before.cache_hits + 1);
  // its answer computes the row sums
  const std::vector<float> xv = x.to_vector<float>();
  std::vector<float> got;
  {
    env::ScopedEnv beam("BEAM", "2");
    got = x.to("CL").sum({1}).to_vector<float>();
  }
  for (int64_t i = 0; i < 16; i++) {
    double want = 0;
    for (int64_t j = 0; j < 1024; j++) want += xv[i * 1024 + j];
    ASSERT_NEAR(got[i], want, 1e-4 * (1 + std::fabs(want))) << "row " << i << ", BEAM's opts:\n" << codegen::opts_to_string(opts);
  }
}

