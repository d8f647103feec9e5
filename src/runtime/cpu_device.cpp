// The CPU device: host memory, kernels compiled by the system C compiler, run on the thread pool.
#include <memory>

#include "runtime/builtin_devices.h"
#include "runtime/cc_compiler.h"
#include "runtime/cpu_allocator.h"
#include "runtime/cpu_program.h"
#include "runtime/device.h"
#include "support/thread_pool.h"

namespace kiln::runtime {
namespace {

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
