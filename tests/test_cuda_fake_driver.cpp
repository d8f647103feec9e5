// The CUDA device's runtime against a stand-in driver (tests/tools/fake_libcuda.cpp, on
// LD_LIBRARY_PATH in the cuda_fake_driver ctest entry): registration, memory, module loading and
// launch geometry, on machines without a GPU. The fake runs no kernel, so results are tested on a
// real GPU only (test_cuda.cpp). Skipped when the driver kiln loaded is not the fake.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "error_message.h"
#include "kiln/kiln.h"
#include "runtime/cuda/cuda_compiler.h"
#include "runtime/device.h"
#include "support/env.h"
#include "temp_cache.h"

namespace kiln::runtime {
namespace {

struct Launch {
  unsigned grid = 0, block = 0;
  void* params[4] = {};
  int count = 0;
};

// The fake's record of its last launch; nullptr when the loaded libcuda is not the fake.
using LastLaunch = void (*)(unsigned*, unsigned*, void**, int*);
LastLaunch fake_last_launch() {
  device_names();  // registering the devices loads the driver
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return nullptr;
  auto f = reinterpret_cast<LastLaunch>(dlsym(lib, "fake_cuda_last_launch"));
  dlclose(lib);  // kiln keeps it open
  return f;
}

Launch last_launch() {
  Launch l;
  fake_last_launch()(&l.grid, &l.block, l.params, &l.count);
  return l;
}

#define SKIP_WITHOUT_FAKE_DRIVER()                                                               \
  if (!fake_last_launch() || !cuda::nvrtc_available())                                         \
  GTEST_SKIP() << "not under the fake CUDA driver with NVRTC (ctest -R cuda_fake_driver runs it)"

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(CudaFakeDriver, TheGpuIsTheDefaultDeviceAndSpeaksCuda) {
  SKIP_WITHOUT_FAKE_DRIVER();
  std::vector<std::string> names = device_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "CUDA"), names.end());
  if (env::get_string("DEV").empty()) EXPECT_EQ(default_device(), "CUDA");
  Device& gpu = get_device("CUDA");
  EXPECT_EQ(gpu.language(), "CUDA");
  EXPECT_EQ(gpu.vector_bytes(), 0);
  EXPECT_EQ(gpu.max_threads(), 2 * 1024);  // the fake's 2 multiprocessors of 1024 threads
  // PTX for the GPU's own architecture (the fake reports compute capability 8.6)
  const std::string compiler = gpu.compiler().name();
  if (env::get_string("CUDA_ARCH").empty()) EXPECT_TRUE(contains(compiler, "compute_86")) << compiler;
}

TEST(CudaFakeDriver, MemoryRoundTrips) {
  SKIP_WITHOUT_FAKE_DRIVER();
  Allocator& a = get_device("CUDA").allocator();
  std::vector<int> in(100), out(100, -1);
  for (int i = 0; i < 100; i++) in[i] = i * i - 7;
  void* mem = a.alloc(in.size() * sizeof(int));
  a.copyin(mem, in.data(), in.size() * sizeof(int));
  a.copyout(out.data(), mem, out.size() * sizeof(int));
  a.free(mem, in.size() * sizeof(int));
  EXPECT_EQ(in, out);
  void* empty = a.alloc(0);  // the driver refuses 0 bytes; kiln asks for one
  void* other = a.alloc(0);
  EXPECT_NE(empty, other);
  a.free(empty, 0);
  a.free(other, 0);
}

TEST(CudaFakeDriver, LaunchesCoverTheWorkItemsWithWholeBlocks) {
  SKIP_WITHOUT_FAKE_DRIVER();
  kt::TempCache cache;
  Device& dev = get_device("CUDA");
  const std::string source = R"(extern "C" __global__ void twice(float* data0, const float* data1) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 1000) data0[i] = data1[i] * 2.0f;
}
)";
  std::unique_ptr<Program> program = dev.load(dev.compiler().compile(source), "twice");
  void* y = dev.allocator().alloc(4000);
  void* x = dev.allocator().alloc(4000);
  for (int64_t items : {1, 255, 256, 257, 1000, 100000}) {
    EXPECT_GE(program->launch({y, x}, {}, items, true), 0);
    Launch l = last_launch();
    EXPECT_EQ(l.block, 256u) << items;
    EXPECT_EQ(l.grid, static_cast<unsigned>((items + 255) / 256)) << items;  // every item, no empty block
    EXPECT_EQ(l.params[0], y);
    EXPECT_EQ(l.params[1], x);
  }
  EXPECT_TRUE(contains(kt::error_of([&] { program->launch({y, x}, {3}, 8, true); }), "expected no integer arguments"));
  dev.allocator().free(x, 4000);
  dev.allocator().free(y, 4000);
}

TEST(CudaFakeDriver, BadModulesAndMissingKernelsAreClearErrors) {
  SKIP_WITHOUT_FAKE_DRIVER();
  kt::TempCache cache;
  Device& dev = get_device("CUDA");
  std::string ptx = dev.compiler().compile("extern \"C\" __global__ void one(int* data0) { data0[0] = 1; }\n");
  std::string msg = kt::error_of([&] { dev.load(ptx, "two"); });
  EXPECT_TRUE(contains(msg, "could not find CUDA kernel 'two' in its module: CUDA_ERROR_NOT_FOUND")) << msg;
  msg = kt::error_of([&] { dev.load("not ptx", "one"); });
  EXPECT_TRUE(contains(msg, "could not load CUDA kernel 'one' from its PTX: CUDA_ERROR_INVALID_IMAGE")) << msg;
}

TEST(CudaFakeDriver, TheEngineLaunchesRenderedKernelsOnIt) {
  SKIP_WITHOUT_FAKE_DRIVER();
  kt::TempCache cache;
  env::ScopedEnv dev("DEV", "CUDA");
  Tensor a = Tensor::rand({300, 517}).realize();
  EXPECT_EQ(a.device(), "CUDA");
  const int before = last_launch().count;
  Tensor r = (a * 2.0f).sum({1}).realize();  // runs nothing on the fake: only the launch is checked
  Launch l = last_launch();
  EXPECT_EQ(l.count, before + 1);
  // work-groups of 4 rows (LOCAL by the largest power of two dividing 300), a block per group
  EXPECT_EQ(l.grid, 75u);
  EXPECT_EQ(l.block, 4u);
  EXPECT_NE(l.params[0], l.params[1]);
  {
    env::ScopedEnv no_groups("LOCALS", "0");
    Tensor s = (a * 3.0f).sum({1}).realize();
    l = last_launch();
    EXPECT_EQ(l.count, before + 2);
    EXPECT_EQ(l.grid, 2u);  // without work-groups, one thread per row: 300 rows in blocks of 256
    EXPECT_EQ(l.block, 256u);
  }
}

}  // namespace
}  // namespace kiln::runtime
