// The CPU device: host memory, kernels compiled by the system C compiler, run on the thread pool.
#include <fstream>
#include <memory>
#include <string>

#include "runtime/builtin_devices.h"
#include "runtime/cc_compiler.h"
#include "runtime/cpu_allocator.h"
#include "runtime/cpu_program.h"
#include "runtime/device.h"
#include "support/thread_pool.h"

namespace kiln::runtime {
namespace {

// The size of the last (highest-level) cache from sysfs, 0 if unknown. (glibc's
// sysconf(_SC_LEVEL3_CACHE_SIZE) says 320 MB for a VM's 32 MB L3 on AMD EPYC.)
int64_t cache_size_from_sysfs() {
  int64_t bytes = 0;
  int highest = 0;
  for (int i = 0;; i++) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream level_file(dir + "level"), size_file(dir + "size");
    int level = 0;
    int64_t size = 0;
    char unit = 0;
    if (!(level_file >> level) || !(size_file >> size)) return bytes;
    size_file >> unit;  // "32768K"
    size *= unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : unit == 'G' ? 1024 * 1024 * 1024 : 1;
    if (level >= highest) highest = level, bytes = size;
  }
}

class CpuDevice final : public Device {
 public:
  CpuDevice() : Device("CPU") {}
  Allocator& allocator() override { return allocator_; }
  Compiler& compiler() override { return compiler_; }
  std::unique_ptr<Program> load(const std::string& binary, const std::string& function_name) override {
    return std::make_unique<CpuProgram>(binary, function_name);
  }
  int max_threads() const override { return ThreadPool::global().size(); }
  // Kernels are compiled with -march=native, so the vector registers are this machine's.
  int vector_bytes() const override {
    if (__builtin_cpu_supports("avx512f")) return 64;
    if (__builtin_cpu_supports("avx2")) return 32;
    return 16;
  }
  int vector_registers() const override { return __builtin_cpu_supports("avx512f") ? 32 : 16; }
  int64_t last_level_cache_bytes() const override {
    static const int64_t bytes = cache_size_from_sysfs();
    return bytes;
  }

 private:
  CpuAllocator allocator_;
  CcCompiler compiler_;
};

}  // namespace

void register_cpu_device() {
  // Priority 0: the fallback that always works; accelerators register higher.
  register_device("CPU", [] { return std::make_unique<CpuDevice>(); }, 0);
}

}  // namespace kiln::runtime
