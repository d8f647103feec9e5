// The CL device through the runtime's interfaces: memory, building hand-written OpenCL C, build
// errors, the binary cache, launches and tensors created under DEV=CL. Skipped without OpenCL.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "allocator_checks.h"
#include "error_message.h"
#include "kiln/kiln.h"
#include "runtime/device.h"
#include "support/env.h"
#include "temp_cache.h"

namespace kiln::runtime {
namespace {

namespace fs = std::filesystem;

bool has_cl() {
  std::vector<std::string> names = device_names();
  return std::find(names.begin(), names.end(), "CL") != names.end();
}

#define SKIP_WITHOUT_CL() \
  if (!has_cl()) GTEST_SKIP() << "no OpenCL device (kiln built without OpenCL, or the ICD loader finds none)"

using kt::TempCache;

TEST(OpenCL, MemoryRoundTrips) {
  SKIP_WITHOUT_CL();
  kt::expect_memory_round_trip(get_device("CL").allocator());
}

TEST(OpenCL, HandWrittenKernelLaunches) {
  SKIP_WITHOUT_CL();
  TempCache cache;
  Device& dev = get_device("CL");
  const std::string source = R"(__kernel void twice(__global float* restrict data0, __global const float* restrict data1) {
  int i = get_global_id(0);
  data0[i] = data1[i] * 2.0f;
}
)";
  auto program = dev.load(dev.compiler().compile(source), "twice");
  std::vector<float> in = {1, 2, 3, 4, 5, 6, 7, 8}, out(8);
  const size_t bytes = in.size() * sizeof(float);
  void* x = dev.allocator().alloc(bytes);
  void* y = dev.allocator().alloc(bytes);
  dev.allocator().copyin(x, in.data(), bytes);
  double seconds = program->launch({y, x}, {}, 8, true);
  EXPECT_GE(seconds, 0);
  dev.allocator().copyout(out.data(), y, bytes);
  EXPECT_EQ(out, (std::vector<float>{2, 4, 6, 8, 10, 12, 14, 16}));
  EXPECT_NE(kt::error_of([&] { program->launch({y, x}, {3}, 8, true); }).find("expected no integer arguments"),
            std::string::npos);
  dev.allocator().free(x, bytes);
  dev.allocator().free(y, bytes);
}

TEST(OpenCL, BuildErrorShowsTheLogAndNumberedSource) {
  SKIP_WITHOUT_CL();
  TempCache cache;
  std::string msg = kt::error_of([] {
    get_device("CL").compiler().compile("__kernel void bad(__global float* data0) {\n  data0[0] = no_such_name;\n}\n");
  });
  EXPECT_NE(msg.find("CL_BUILD_PROGRAM_FAILURE"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no_such_name"), std::string::npos) << msg;
  EXPECT_NE(msg.find("   2 |   data0[0] = no_such_name;"), std::string::npos) << msg;
}

TEST(OpenCL, SecondCompileIsADiskCacheHit) {
  SKIP_WITHOUT_CL();
  TempCache cache;
  Compiler& c = get_device("CL").compiler();
  const std::string source = "__kernel void one(__global int* data0) { data0[0] = 1; }\n";
  CompileStats before = compile_stats();
  std::string first = c.compile(source);
  CompileStats middle = compile_stats();
  std::string second = c.compile(source);
  CompileStats after = compile_stats();
  EXPECT_EQ(middle.compiled - before.compiled, 1);
  EXPECT_EQ(after.compiled - middle.compiled, 0);
  EXPECT_EQ(after.cache_hits - middle.cache_hits, 1);
  EXPECT_EQ(first, second);
  EXPECT_FALSE(first.empty());
}

TEST(OpenCL, TensorsOnClComputeThere) {
  SKIP_WITHOUT_CL();
  env::ScopedEnv dev("DEV", "CL");
  Tensor a = Tensor::arange(0, 1000, 1).reshape({10, 100}).cast(dtypes::float32);
  Tensor r = (a / 100.0f).exp2().max({1}).log2() + a.sum({1});
  EXPECT_EQ(r.device(), "CL");
  std::vector<float> got = r.to_vector<float>();
  for (int i = 0; i < 10; i++) EXPECT_NEAR(got[i], (100 * i + 99) / 100.0f + (100 * i + 49.5f) * 100, 1e-2f) << i;
}

TEST(OpenCL, DeviceSpeaksOpenCL) {
  SKIP_WITHOUT_CL();
  Device& cl = get_device("CL");
  EXPECT_EQ(cl.language(), "OpenCL");
  EXPECT_GE(cl.max_threads(), 1);
}

}  // namespace
}  // namespace kiln::runtime
