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

  // Throws kiln::Error if the PTX does not load or lacks function_name.
  CudaProgram(const Context& ctx, const std::string& ptx, const std::string& function_name);
  ~CudaProgram() override;
  CudaProgram(const CudaProgram&) = delete;
  CudaProgram& operator=(const CudaProgram&) = delete;

  // bufs are CUdeviceptrs from CudaAllocator; CUDA kernels take no integer arguments (vals) yet.
  double launch(const std::vector<void*>& bufs, const std::vector<int64_t>& vals, int64_t global_size,
                bool wait) override;

 private:
  const Context& ctx_;
  std::string name_;
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  int block_threads_ = kBlockThreads;  // fewer when the kernel's registers allow fewer
};

}  // namespace kiln::runtime::cuda
