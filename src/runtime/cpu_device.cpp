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

 private:
  CpuAllocator allocator_;
  CcCompiler compiler_;
};

}  // namespace

void register_builtin_devices() {
  // Priority 0: the fallback that always works; accelerators register higher.
  register_device("CPU", [] { return std::make_unique<CpuDevice>(); }, 0);
}

}  // namespace kiln::runtime
