#pragma once
// A kernel from a ClCompiler binary. A launch runs global_size work-items, each its own work-group,
// and work-item i is the kernel's core_id i (it takes its share of the THREAD loop, as on the CPU);
// a kernel with work-groups is launched with launch_grid, and its group i is core_id i.
#include <mutex>
#include <string>

#include "runtime/opencl/cl_context.h"
#include "runtime/program.h"

namespace kiln::runtime::cl {

class ClProgram final : public Program {
 public:
  // Throws kiln::Error if the binary does not load or lacks function_name.
  ClProgram(const Context& ctx, const std::string& binary, const std::string& function_name, const std::string& options);
  ~ClProgram() override;
  ClProgram(const ClProgram&) = delete;
  ClProgram& operator=(const ClProgram&) = delete;

  // bufs are cl_mems from ClAllocator; OpenCL kernels take no integer arguments (vals) yet.
  double launch(const std::vector<void*>& bufs, const std::vector<int64_t>& vals, int64_t global_size,
                bool wait) override;
  // Work-groups of dims.local work-items (launch: groups of one).
  double launch_grid(const std::vector<void*>& bufs, const std::vector<int64_t>& vals, const LaunchDims& dims,
                     bool wait) override;

 private:
  const Context& ctx_;
  std::string name_;
  cl_program program_ = nullptr;
  cl_kernel kernel_ = nullptr;
  size_t args_ = 0;  // how many buffers it takes
  std::mutex mu_;  // a kernel's arguments are state: one launch sets them at a time
};

}  // namespace kiln::runtime::cl
