#include "runtime/cuda/cuda_program.h"

#include <algorithm>
#include <chrono>
#include <climits>

#include "kiln/error.h"

namespace kiln::runtime::cuda {

CudaProgram::CudaProgram(const Context& ctx, const std::string& ptx, const std::string& function_name)
    : ctx_(ctx), name_(function_name) {
  const Driver& d = ctx.driver;
  ctx.make_current();
  // The driver compiles the PTX for this GPU here; an NVRTC newer than the driver makes PTX it
  // refuses (CUDA_ERROR_UNSUPPORTED_PTX_VERSION).
  CUresult r = d.ModuleLoadData(&module_, ptx.c_str());
  if (r != 0) throw_error("could not load CUDA kernel '", function_name, "' from its PTX: ", d.error_name(r));
  int max_threads = 0;
  r = d.ModuleGetFunction(&function_, module_, function_name.c_str());
  if (r == 0) r = d.FuncGetAttribute(&max_threads, kFuncAttrMaxThreadsPerBlock, function_);
  if (r != 0) {
    d.ModuleUnload(module_);
    throw_error("could not find CUDA kernel '", function_name, "' in its module: ", d.error_name(r));
  }
  block_threads_ = std::clamp(max_threads, 1, kBlockThreads);
}

CudaProgram::~CudaProgram() {
  ctx_.driver.CtxSetCurrent(ctx_.context);
  ctx_.driver.ModuleUnload(module_);
}

double CudaProgram::launch(const std::vector<void*>& bufs, const std::vector<int64_t>& vals, int64_t global_size,
                           bool wait) {
  if (!vals.empty()) throw_error("CUDA kernel ", name_, ": expected no integer arguments, got ", vals.size());
  const int64_t items = std::max<int64_t>(global_size, 1);
  const int64_t blocks = (items + block_threads_ - 1) / block_threads_;
  if (blocks > INT_MAX) throw_error("CUDA kernel ", name_, ": ", global_size, " work items exceed one launch");
  // cuLaunchKernel takes a pointer to each argument. Buffers past the kernel's parameters are ones
  // it no longer reads (simplified away): the driver reads only as many as the kernel has.
  std::vector<CUdeviceptr> pointers(bufs.size());
  std::vector<void*> params(bufs.size());
  for (size_t i = 0; i < bufs.size(); i++) {
    pointers[i] = reinterpret_cast<CUdeviceptr>(bufs[i]);
    params[i] = &pointers[i];
  }
  ctx_.make_current();
  auto start = std::chrono::steady_clock::now();
  ctx_.driver.check(ctx_.driver.LaunchKernel(function_, static_cast<unsigned>(blocks), 1, 1,
                                             static_cast<unsigned>(block_threads_), 1, 1, 0, nullptr, params.data(),
                                             nullptr),
                    "cuLaunchKernel");
  if (!wait) return 0;
  ctx_.driver.check(ctx_.driver.CtxSynchronize(), "cuCtxSynchronize");
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace kiln::runtime::cuda
