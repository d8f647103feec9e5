// The public device interface (kiln/device.h) as a device written outside kiln uses it: a device
// defined in this test runs tensors, its errors are clear, and cached_build caches.
#include <gtest/gtest.h>
#include <kiln/device.h>
#include <kiln/kiln.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "error_message.h"
#include "support/env.h"  // ScopedEnv: DEV for one test
#include "temp_cache.h"

namespace {

using namespace kiln;
using namespace kiln::runtime;

using kt::error_of;

// What kiln asked of the device.
struct Calls {
  std::atomic<int64_t> allocs{0}, bytes_in{0}, bytes_out{0}, compiles{0}, launches{0}, refused{0};
  bool refuse_threads = false;  // launches over more than one core fail, as a device out of resources
};

// Memory in separate host blocks that kiln reaches only through copyin/copyout, counted.
struct CountingAllocator final : Allocator {
  explicit CountingAllocator(Calls& calls) : calls(calls) {}
  void* alloc(size_t bytes) override {
    ++calls.allocs;
    return new char[bytes ? bytes : 1];
  }
  void free(void* ptr, size_t) override { delete[] static_cast<char*>(ptr); }
  void copyin(void* dst, const void* src, size_t bytes) override {
    calls.bytes_in += int64_t(bytes);
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void copyout(void* dst, const void* src, size_t bytes) override {
    calls.bytes_out += int64_t(bytes);
    if (bytes) std::memcpy(dst, src, bytes);
  }
  Calls& calls;
};

// C kernels compiled and loaded by the CPU device's toolchain, each compile and launch counted.
struct CountingCompiler final : Compiler {
  explicit CountingCompiler(Calls& calls) : calls(calls) {}
  std::string name() const override { return "counting " + get_device("CPU").compiler().name(); }
  std::string compile(const std::string& source) override {
    ++calls.compiles;
    return get_device("CPU").compiler().compile(source);
  }
  std::string recompile(const std::string& source) override { return get_device("CPU").compiler().recompile(source); }
  Calls& calls;
};

struct CountingProgram final : Program {
  CountingProgram(std::unique_ptr<Program> cpu, Calls& calls) : cpu(std::move(cpu)), calls(calls) {}
  double launch(const std::vector<void*>& bufs, const std::vector<int64_t>& vals, int64_t global_size,
                bool wait) override {
    ++calls.launches;
    EXPECT_LE(global_size, 2);  // max_threads()
    if (calls.refuse_threads && global_size > 1) {
      ++calls.refused;
      throw Error("test device: out of resources for " + std::to_string(global_size) + " cores");
    }
    return cpu->launch(bufs, vals, global_size, wait);
  }
  std::unique_ptr<Program> cpu;
  Calls& calls;
};

// Shares its Calls with the test that registered it (the device lives until the process exits).
class TestDevice final : public Device {
 public:
  TestDevice(std::string name, std::shared_ptr<Calls> calls, std::string language)
      : Device(std::move(name)), calls_(std::move(calls)), allocator_(*calls_), compiler_(*calls_),
        language_(std::move(language)) {}
  Allocator& allocator() override { return allocator_; }
  Compiler& compiler() override { return compiler_; }
  std::unique_ptr<Program> load(const std::string& binary, const std::string& function_name) override {
    return std::make_unique<CountingProgram>(get_device("CPU").load(binary, function_name), *calls_);
  }
  int max_threads() const override { return 2; }
  std::string language() const override { return language_; }

 private:
  std::shared_ptr<Calls> calls_;
  CountingAllocator allocator_;
  CountingCompiler compiler_;
  std::string language_;
};

// Registers a TestDevice under a name no other test (or --gtest_repeat run) uses; returns the name.
std::string register_test_device(const std::shared_ptr<Calls>& calls, const std::string& language = "C") {
  static int run = 0;
  std::string name = "TESTDEV" + std::to_string(run++);
  // Negative priority: it is the default only where DEV names it.
  register_device(name, [=] { return std::make_unique<TestDevice>(name, calls, language); }, -1);
  return name;
}

TEST(DeviceApi, InTestDeviceRunsTensors) {
  auto calls = std::make_shared<Calls>();
  std::string name = register_test_device(calls);
  env::ScopedEnv dev("DEV", name);
  std::vector<float> a(12), b(4);
  for (int i = 0; i < 12; i++) a[i] = 0.25f * float(i) - 1.0f;
  for (int j = 0; j < 4; j++) b[j] = float(j) - 1.5f;
  Tensor ta = Tensor::from_vector(a, {3, 4}), tb = Tensor::from_vector(b, {1, 4});
  Tensor y = (ta * tb + 1.0f).relu().sum({1});
  EXPECT_EQ(y.device(), name);
  std::vector<float> got = y.to_vector<float>();
  ASSERT_EQ(got.size(), 3u);
  for (int i = 0; i < 3; i++) {
    double want = 0;  // the same sum in double: every product and sum here is exact in float
    for (int j = 0; j < 4; j++) want += std::max(0.0, double(a[i * 4 + j]) * b[j] + 1);
    EXPECT_NEAR(got[i], want, 1e-6) << "row " << i;
  }
  // kiln went through the device for everything: memory, copies both ways, compiles, launches.
  EXPECT_GE(calls->allocs.load(), 3);
  EXPECT_EQ(calls->bytes_in.load(), int64_t((12 + 4) * sizeof(float)));
  EXPECT_EQ(calls->bytes_out.load(), int64_t(3 * sizeof(float)));
  EXPECT_GE(calls->compiles.load(), 1);
  EXPECT_GE(calls->launches.load(), 1);
  EXPECT_EQ(&get_device(name), &get_device(name + ":0"));
}

TEST(DeviceApi, RegistrationsChangeTheDefaultDeviceAtOnce) {
  // default_device() keeps its choice between registrations: a new device of a higher priority is
  // the default from its registration on, and stops being it when registered lower again
  const std::string before = default_device();
  auto calls = std::make_shared<Calls>();
  const std::string name = register_test_device(calls);
  EXPECT_EQ(default_device(), before);
  auto factory = [=] { return std::make_unique<TestDevice>(name, calls, "C"); };
  register_device(name, factory, 1000);
  EXPECT_EQ(default_device(), name);
  register_device(name, factory, -1);
  EXPECT_EQ(default_device(), before);
}

TEST(DeviceApi, RegisteringWithoutANameOrFactoryIsAnError) {
  auto factory = []() -> std::unique_ptr<Device> { return nullptr; };
  EXPECT_NE(error_of([&] { register_device("", factory, 0); }).find("empty device name"), std::string::npos);
  EXPECT_NE(error_of([&] { register_device(":1", factory, 0); }).find("empty device name"), std::string::npos);
  std::string msg = error_of([] { register_device("NOFACTORY", nullptr, 0); });
  EXPECT_NE(msg.find("no factory given for NOFACTORY"), std::string::npos) << msg;
}

TEST(DeviceApi, FactoryWithoutADeviceIsAnError) {
  register_device("NULLDEV", [] { return std::unique_ptr<Device>(); }, -1);
  std::string msg = error_of([] { get_device("nulldev"); });
  EXPECT_NE(msg.find("device factory for NULLDEV returned no device"), std::string::npos) << msg;
}

TEST(DeviceApi, UnknownDeviceListsTheRegisteredOnes) {
  std::string name = register_test_device(std::make_shared<Calls>());
  std::string msg = error_of([] { get_device("NOSUCHDEV"); });
  EXPECT_NE(msg.find("unknown device 'NOSUCHDEV'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("CPU"), std::string::npos) << msg;
  EXPECT_NE(msg.find(name), std::string::npos) << msg;
  env::ScopedEnv dev("DEV", "nosuchdev");
  msg = error_of([] { default_device(); });
  EXPECT_NE(msg.find("DEV=nosuchdev is not a registered device"), std::string::npos) << msg;
  EXPECT_NE(msg.find(name), std::string::npos) << msg;
}

TEST(DeviceApi, UnknownKernelLanguageIsAnError) {
  auto calls = std::make_shared<Calls>();
  std::string name = register_test_device(calls, "Verilog");
  env::ScopedEnv dev("DEV", name);
  std::string msg = error_of([] { (Tensor::from_vector<float>({1, 2}, {2}) * 2.0f).realize(); });
  EXPECT_NE(msg.find("no renderer for the kernel language 'Verilog'; expected C, OpenCL or CUDA"), std::string::npos) << msg;
  EXPECT_EQ(calls->launches.load(), 0);
}

TEST(DeviceApi, CachedBuildBuildsOnceAndRebuildsOnRequest) {
  kt::TempCache cache;
  int builds = 0;
  auto build = [&](const std::string& path) {
    ++builds;
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr) << path;
    std::fputs("binary #", f);
    std::fputs(std::to_string(builds).c_str(), f);
    std::fclose(f);
  };
  std::string entry = cached_build("testdev", "source v1", false, build);
  EXPECT_EQ(cached_binary(entry), "binary #1");
  EXPECT_EQ(cached_build("testdev", "source v1", false, build), entry);  // a hit: not built again
  EXPECT_EQ(builds, 1);
  EXPECT_NE(cached_build("testdev", "source v2", false, build), entry);  // another key, another entry
  EXPECT_EQ(cached_build("testdev", "source v1", true, build), entry);   // rebuilt in place
  EXPECT_EQ(cached_binary(entry), "binary #3");
  EXPECT_EQ(builds, 3);
  // A failed build leaves nothing behind and passes its error on.
  auto failing_build = [](const std::string&) { throw_error("toolchain says no"); };
  std::string msg = error_of([&] { cached_build("testdev", "source v3", false, failing_build); });
  EXPECT_EQ(msg, "toolchain says no");
  EXPECT_EQ(cache.files().size(), 2u);
}

}  // namespace

// BEAM times candidates on the device: one the device refuses to launch is no choice (as one that
// does not compile), never the end of the search.
TEST(DeviceApi, BeamSkipsCandidatesTheDeviceRefusesToRun) {
  kt::TempCache cache;
  auto calls = std::make_shared<Calls>();
  calls->refuse_threads = true;
  std::string name = register_test_device(calls);
  env::ScopedEnv dev("DEV", name), beam("BEAM", "2");
  std::vector<float> a(64 * 512);
  for (size_t i = 0; i < a.size(); i++) a[i] = float(i % 17) * 0.125f - 1.0f;
  const std::vector<float> got = Tensor::from_vector(a, {64, 512}).sum({1}).to_vector<float>();
  ASSERT_EQ(got.size(), 64u);
  for (int i = 0; i < 64; i++) {
    double want = 0;  // multiples of 1/8 below 2^20 in magnitude: every partial sum is exact in float
    for (int j = 0; j < 512; j++) want += a[size_t(i) * 512 + size_t(j)];
    EXPECT_EQ(got[i], want) << "row " << i;
  }
  EXPECT_GT(calls->refused.load(), 0) << "no candidate asked for both cores: the test tests nothing";
}
