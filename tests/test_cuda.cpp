// The CUDA device's pieces: kernels rendered as CUDA C++, compiled to PTX by NVRTC (skipped where
// libnvrtc is missing), the CHECK_RENDER=CUDA check (tools/cuda_render_check.cpp), and the GPU runtime (skipped without a GPU, so
// on most CI machines: it is checked against naive loops wherever one is found).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "allocator_checks.h"
#include "codegen/codegen.h"
#include "engine/kernel_cache.h"
#include "error_message.h"
#include "kiln/kiln.h"
#include "renderer/cstyle_renderer.h"
#include "runtime/cuda/cuda_compiler.h"
#include "runtime/device.h"
#include "support/env.h"
#include "temp_cache.h"
#include "tools/cuda_render_check.h"

namespace kiln {
namespace {

using kt::TempCache;

#define SKIP_WITHOUT_NVRTC() \
  if (!runtime::cuda::nvrtc_available()) GTEST_SKIP() << "libnvrtc not found (no CUDA toolkit here)"

bool has_gpu() {
  std::vector<std::string> names = runtime::device_names();
  return std::find(names.begin(), names.end(), "CUDA") != names.end();
}

#define SKIP_WITHOUT_GPU() \
  if (!has_gpu()) GTEST_SKIP() << "no CUDA GPU here (libcuda not found, or it finds no device)"

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The one kernel `t` schedules, generated for CUDA as the device would (with `threads` to share).
codegen::Program cuda_program(const Tensor& t, int threads = 108 * 2048) {
  std::vector<ScheduleItem> items = t.schedule();
  EXPECT_EQ(items.size(), 1u);
  return codegen::to_program(items.at(0).ast, codegen::Target{&renderer::cuda_renderer(), threads, true, 0});
}

TEST(CudaRenderer, KernelIsAnExternCGlobalWithAGuardedThreadIndex) {
  Tensor a = Tensor::rand({512, 300}).realize(), b = Tensor::rand({512, 300}).realize();
  codegen::Program p = cuda_program((a * b).sum({1}));
  const std::string& s = p.source;
  EXPECT_GT(p.threads, 1);  // the outer axis is shared among GPU threads
  EXPECT_TRUE(contains(s, "extern \"C\" __global__ void " + p.name + "(float* __restrict__ data0, "
                              "float* __restrict__ data1, float* __restrict__ data2) {")) << s;
  EXPECT_TRUE(contains(s, "const int core_id = (int)(blockIdx.x * blockDim.x + threadIdx.x);\n"
                          "  if (core_id >= " + std::to_string(p.threads) + ") return;\n")) << s;
  // GNU C and OpenCL spellings have no place in CUDA C++
  for (const char* foreign : {"_Bool", "__builtin_", "__kernel", "__global ", "restrict ", "({"})
    EXPECT_FALSE(contains(s, foreign)) << foreign << " in\n" << s;
}

TEST(CudaRenderer, SpecialValuesAndMathUseCudaNames) {
  Tensor a = Tensor::rand({40}).realize();
  // max starts from -inf and propagates NaN; exp and log are the float functions
  Tensor r = (a.exp().log() + Tensor::full({40}, std::nan(""))).max();
  const std::string s = cuda_program(r).source;
  EXPECT_TRUE(contains(s, "expf(")) << s;
  EXPECT_TRUE(contains(s, "logf(")) << s;
  EXPECT_TRUE(contains(s, "kiln_max<float>(")) << s;
  EXPECT_TRUE(contains(s, "__int_as_float(0x7f800000)")) << s;  // -inf, the max's start
  const std::string d = cuda_program(a.cast(dtypes::float64).sqrt() * INFINITY).source;
  EXPECT_TRUE(contains(d, "sqrt(")) << d;
  EXPECT_FALSE(contains(d, "sqrtf(")) << d;
  EXPECT_TRUE(contains(d, "__longlong_as_double(0x7ff0000000000000ll)")) << d;
}

TEST(CudaRenderer, UnreadBuffersKeepTheirPlaceAsArguments) {
  // CUDA's launch passes buffer i as argument i.
  auto declare = [](const std::string& type) { return type + "* __restrict__"; };
  EXPECT_EQ(renderer::positional_parameters({{2, "int"}, {0, "float"}}, declare, "const unsigned char*"),
            "(float* __restrict__ data0, const unsigned char* unused1, int* __restrict__ data2)");
}

TEST(CudaRenderer, VectorCodeIsRefused) {
  // The device reports no vector registers; a vector dtype reaching the renderer is a codegen bug.
  Tensor a = Tensor::rand({64, 64}).realize();
  std::vector<ScheduleItem> items = a.sum({1}).schedule();
  codegen::Target vectors{&renderer::cuda_renderer(), 4, true, 32};
  std::string msg = kt::error_of([&] { codegen::to_program(items.at(0).ast, vectors); });
  EXPECT_TRUE(contains(msg, "CUDA renderer: expected scalar code")) << msg;
}

TEST(CudaCompiler, RenderedKernelsCompileToPtx) {
  SKIP_WITHOUT_NVRTC();
  TempCache cache;
  runtime::cuda::CudaCompiler nvrtc("compute_80");
  Tensor a = Tensor::rand({512, 300}).realize();
  Tensor h = Tensor::rand({33}).cast(dtypes::float16).realize();
  for (const Tensor& t : {(a * 2.0f).sum({1}), a.max({0}), (h * h).exp2(), (a * 100.0f).cast(dtypes::int8).idiv(3)}) {
    codegen::Program p = cuda_program(t);
    std::string ptx = nvrtc.compile(p.source);
    EXPECT_TRUE(contains(ptx, ".target sm_80")) << ptx.substr(0, 400);
    EXPECT_TRUE(contains(ptx, ".entry " + p.name + "(")) << ptx.substr(0, 400);
  }
}

TEST(CudaCompiler, BrokenSourceGivesNvrtcsLogAndTheNumberedSource) {
  SKIP_WITHOUT_NVRTC();
  TempCache cache;
  runtime::cuda::CudaCompiler nvrtc("compute_80");
  std::string msg = kt::error_of([&] {
    nvrtc.compile("extern \"C\" __global__ void bad(float* data0) {\n  data0[0] = no_such_name;\n}\n");
  });
  EXPECT_TRUE(contains(msg, "CUDA kernel failed to compile with NVRTC")) << msg;
  EXPECT_TRUE(contains(msg, "NVRTC_ERROR_COMPILATION")) << msg;
  EXPECT_TRUE(contains(msg, "identifier \"no_such_name\" is undefined")) << msg;  // NVRTC's log
  EXPECT_TRUE(contains(msg, "   2 |   data0[0] = no_such_name;")) << msg;
}

TEST(CudaCompiler, PtxIsCachedOnDiskPerArchitecture) {
  SKIP_WITHOUT_NVRTC();
  TempCache cache;
  const std::string source = "extern \"C\" __global__ void one(int* data0) { data0[0] = 1; }\n";
  runtime::cuda::CudaCompiler sm80("compute_80"), sm90("compute_90");
  runtime::CompileStats before = runtime::compile_stats();
  std::string first = sm80.compile(source);
  std::string again = sm80.compile(source);
  std::string other = sm90.compile(source);
  runtime::CompileStats after = runtime::compile_stats();
  EXPECT_EQ(after.compiled - before.compiled, 2);
  EXPECT_EQ(after.cache_hits - before.cache_hits, 1);
  EXPECT_EQ(first, again);
  EXPECT_TRUE(contains(other, ".target sm_90")) << other.substr(0, 400);
  EXPECT_EQ(cache.files().size(), 2u);
}

TEST(CudaCompiler, ArchitectureComesFromCudaArch) {
  EXPECT_EQ(runtime::cuda::target_arch("compute_80"), "compute_80");
  {
    env::ScopedEnv arch("CUDA_ARCH", "sm_86");
    EXPECT_EQ(runtime::cuda::target_arch("compute_80"), "compute_86");
  }
  {
    env::ScopedEnv arch("CUDA_ARCH", "90");
    EXPECT_EQ(runtime::cuda::target_arch("compute_80"), "compute_90");
  }
  env::ScopedEnv arch("CUDA_ARCH", "ampere");
  std::string msg = kt::error_of([] { runtime::cuda::target_arch("compute_80"); });
  EXPECT_TRUE(contains(msg, "CUDA_ARCH=ampere: expected an architecture like compute_80")) << msg;
}

// Turns the CUDA check on for a scope.
struct ScopedCheckRender {
  ScopedCheckRender() { kt::check_render("CUDA"); }
  ~ScopedCheckRender() { kt::stop_check_render(); }
};

TEST(CheckRender, EveryCompiledKernelIsAlsoCompiledForCuda) {
  SKIP_WITHOUT_NVRTC();
  TempCache cache;
  ScopedCheckRender check;
  Tensor a = Tensor::arange(0, 1117, 1).cast(dtypes::float32);  // a size no other test uses
  runtime::CompileStats before = runtime::compile_stats();
  std::vector<float> got = (a * 3.0f).to_vector<float>();
  runtime::CompileStats after = runtime::compile_stats();
  for (int i = 0; i < 1117; i++) ASSERT_EQ(got[i], 3.0f * static_cast<float>(i)) << i;
  // the device's kernels and their CUDA twins, each compiled once
  EXPECT_GE(after.compiled - before.compiled, 2);
  EXPECT_EQ((after.compiled - before.compiled) % 2, 0);
  // the PTX is in the disk cache's CUDA folder
  EXPECT_FALSE(std::filesystem::is_empty(cache.dir / "cuda"));
}

TEST(CheckRender, OtherLanguagesAreRefused) {
  std::string msg = kt::error_of([] { kt::check_render("METAL"); });
  EXPECT_TRUE(contains(msg, "CHECK_RENDER=METAL: expected CUDA")) << msg;
}

// The engine's side of the check: it sees every kernel the schedule compiles, and an error from
// the compile it returns fails the realize as a failed compile does.
TEST(CheckRender, ACheckSeesEachKernelAndItsErrorFailsTheSchedule) {
  std::atomic<int> seen{0};
  engine::set_kernel_check([&](const UOpRef& ast, bool) -> std::function<void()> {
    EXPECT_EQ(ast->op, Ops::SINK);
    seen++;
    return [] { throw_error("the check rejects this kernel"); };
  });
  Tensor a = Tensor::arange(0, 1129, 1).cast(dtypes::float32);  // kernels not compiled before
  std::string msg = kt::error_of([&] { (a * 5.0f).realize(); });
  engine::set_kernel_check(nullptr);
  EXPECT_TRUE(contains(msg, "the check rejects this kernel")) << msg;
  EXPECT_GE(seen.load(), 1);
  // without the check the same kernels compile and run
  std::vector<float> got = (a * 5.0f).to_vector<float>();
  for (int i = 0; i < 1129; i++) ASSERT_EQ(got[i], 5.0f * static_cast<float>(i)) << i;
}

TEST(CudaDevice, MemoryRoundTrips) {
  SKIP_WITHOUT_GPU();
  kt::expect_memory_round_trip(runtime::get_device("CUDA").allocator());
}

TEST(CudaDevice, HandWrittenKernelLaunchesOverSeveralBlocks) {
  SKIP_WITHOUT_GPU();
  TempCache cache;
  runtime::Device& dev = runtime::get_device("CUDA");
  const std::string source = R"(extern "C" __global__ void twice(float* data0, const float* data1) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= 1000) return;
  data0[i] = data1[i] * 2.0f;
}
)";
  auto program = dev.load(dev.compiler().compile(source), "twice");
  std::vector<float> in(1000), out(1000, -1);
  for (size_t i = 0; i < in.size(); i++) in[i] = static_cast<float>(i) - 300.5f;
  const size_t bytes = in.size() * sizeof(float);
  void* x = dev.allocator().alloc(bytes);
  void* y = dev.allocator().alloc(bytes);
  dev.allocator().copyin(x, in.data(), bytes);
  EXPECT_GE(program->launch({y, x}, {}, 1000, true), 0);
  dev.allocator().copyout(out.data(), y, bytes);
  for (size_t i = 0; i < in.size(); i++) EXPECT_EQ(out[i], 2 * in[i]) << i;  // exact: a doubling
  std::string msg = kt::error_of([&] { program->launch({y, x}, {3}, 1000, true); });
  EXPECT_TRUE(contains(msg, "expected no integer arguments")) << msg;
  dev.allocator().free(x, bytes);
  dev.allocator().free(y, bytes);
}

TEST(CudaDevice, TensorsOnCudaMatchNaiveLoops) {
  SKIP_WITHOUT_GPU();
  env::ScopedEnv dev("DEV", "CUDA");
  const int rows = 300, cols = 517;
  std::vector<float> x(rows * cols);
  for (size_t i = 0; i < x.size(); i++) x[i] = std::sin(0.01 * static_cast<double>(i));
  Tensor a = Tensor::from_vector<float>(x, {rows, cols});
  Tensor r = (a.exp() * 0.5f).sum({1}) + a.max({1});
  EXPECT_EQ(r.device(), "CUDA");
  std::vector<float> got = r.to_vector<float>();
  for (int i = 0; i < rows; i++) {
    double sum = 0, max = -INFINITY;
    for (int j = 0; j < cols; j++) {
      sum += 0.5 * std::exp(static_cast<double>(x[i * cols + j]));
      max = std::max(max, static_cast<double>(x[i * cols + j]));
    }
    EXPECT_NEAR(got[i], sum + max, 1e-5 * (sum + std::abs(max))) << i;  // float sums of 517 terms
  }
}

TEST(CudaDevice, DeviceSpeaksCuda) {
  SKIP_WITHOUT_GPU();
  runtime::Device& gpu = runtime::get_device("CUDA");
  EXPECT_EQ(gpu.language(), "CUDA");
  EXPECT_EQ(gpu.vector_bytes(), 0);
  EXPECT_GT(gpu.max_threads(), 1);
  if (env::get_string("DEV").empty()) EXPECT_EQ(runtime::default_device(), "CUDA");  // above OpenCL and CPU
}

}  // namespace
}  // namespace kiln
