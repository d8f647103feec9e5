#pragma once
// A kernel from a shared object built by CcCompiler, run on the global thread pool.
#include <string>

#include "runtime/program.h"

namespace kiln::runtime {

// The kernel ABI: void fn(void** bufs, const long long* vals, int core_id). Each launch calls it
// once per core_id in [0, global_size); the kernel splits its work by core_id.
class CpuProgram final : public Program {
 public:
  // Throws kiln::Error if the library cannot be loaded or lacks function_name.
  CpuProgram(const std::string& library_path, const std::string& function_name);
  ~CpuProgram() override;
  CpuProgram(const CpuProgram&) = delete;
  CpuProgram& operator=(const CpuProgram&) = delete;

  // Always synchronous: returns after every core_id has finished, whatever `wait` says.
  double launch(const std::vector<void*>& bufs, const std::vector<int64_t>& vals, int64_t global_size,
                bool wait) override;

 private:
  using KernelFn = void (*)(void** bufs, const long long* vals, int core_id);
  std::string name_;        // the kernel's name, for PROFILE=1
  void* handle_ = nullptr;  // from dlopen, closed in the destructor
  KernelFn fn_ = nullptr;
};

}  // namespace kiln::runtime
