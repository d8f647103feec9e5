// The CPU device: host memory, kernels compiled by the system C compiler, run on the thread pool.
#include <cstdio>
#include <memory>
#include <string>

#include "runtime/builtin_devices.h"
#include "runtime/cc_compiler.h"
#include "runtime/cpu_allocator.h"
#include "runtime/cpu_info.h"
#include "runtime/cpu_program.h"
#include "runtime/device.h"
#include "support/env.h"
#include "support/thread_pool.h"

namespace kiln::runtime {
namespace {

class CpuDevice final : public Device {
 public:
  CpuDevice() : Device("CPU") {
    if (env::debug_level() >= 2) std::fprintf(stderr, "%s\n", describe(host_cpu()).c_str());
  }
  Allocator& allocator() override { return allocator_; }
  Compiler& compiler() override { return compiler_; }
  std::unique_ptr<Program> load(const std::string& binary, const std::string& function_name) override {
    return std::make_unique<CpuProgram>(binary, function_name);
  }
  int max_threads() const override { return ThreadPool::global().size(); }
  int vector_bytes() const override { return host_cpu().vector_bytes; }
  int vector_registers() const override { return host_cpu().vector_registers; }
  int64_t last_level_cache_bytes() const override { return host_cpu().llc_bytes; }
  int64_t l2_cache_bytes() const override { return host_cpu().l2_bytes; }

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
