#pragma once
// A kernel from CudaCompiler's PTX, loaded as a module. A launch of global_size work items runs
// them as a 1-D grid of blocks of up to kBlockThreads threads; thread i is the kernel's core_id i,
// and the rounded-up rest return at once (the CUDA renderer's guard).
#include <string>

#include "runtime/cuda/cuda_context.h"
#include "runtime/program.h"

namespace kiln::runtime::cuda {

class CudaProgram final : public Program {
 public:
  static constexpr int kBlockThreads = 256;
  // The limits kiln's work-groups keep to on every GPU since compute capability 2.0: threads per
  // block, and static shared memory per block.
  static constexpr int kMaxBlockThreads = 1024;
  static constexpr int64_t kSharedMemoryBytes = 48 * 1024;

  // Throws kiln::Error if the PTX does not load or lacks function_name.
  CudaProgram(const Context& ctx, const std::string& ptx, const std::string& function_name);
  ~CudaProgram() override;
  CudaProgram(const CudaProgram&) = delete;
  CudaProgram& operator=(const CudaProgram&) = delete;

  // bufs are CUdeviceptrs from CudaAllocator; CUDA kernels take no integer arguments (vals) yet.
  double launch(const std::vector<void*>& bufs, const std::vector<int64_t>& vals, int64_t global_size,
                bool wait) override;
  // Blocks of dims.local threads, one per work-group (groups of one: launch's 1-D grid).
  double launch_grid(const std::vector<void*>& bufs, const std::vector<int64_t>& vals, const LaunchDims& dims,
                     bool wait) override;

 private:
  // Launches grid.global blocks of grid.local threads.
  double run(const std::vector<void*>& bufs, const std::vector<int64_t>& vals, const LaunchDims& grid, bool wait);

  const Context& ctx_;
  std::string name_;
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  int block_threads_ = kBlockThreads;  // fewer when the kernel's registers allow fewer
  int max_block_threads_ = kMaxBlockThreads;  // what the kernel's registers allow
};

}  // namespace kiln::runtime::cuda
