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
  max_block_threads_ = std::max(max_threads, 1);
}

CudaProgram::~CudaProgram() {
  ctx_.driver.CtxSetCurrent(ctx_.context);
  ctx_.driver.ModuleUnload(module_);
}

double CudaProgram::launch(const std::vector<void*>& bufs, const std::vector<int64_t>& vals, int64_t global_size,
                           bool wait) {
  const int64_t items = std::max<int64_t>(global_size, 1);
  const int64_t blocks = (items + block_threads_ - 1) / block_threads_;
  return run(bufs, vals, {{blocks, 1, 1}, {block_threads_, 1, 1}}, wait);
}

double CudaProgram::launch_grid(const std::vector<void*>& bufs, const std::vector<int64_t>& vals, const LaunchDims& dims,
                                bool wait) {
  if (dims.local == std::array<int64_t, 3>{1, 1, 1} && dims.global[1] == 1 && dims.global[2] == 1)
    return launch(bufs, vals, dims.global[0], wait);
  LaunchDims grid;  // in blocks, and threads per block
  for (int d = 0; d < 3; d++) {
    if (dims.global[d] < 1 || dims.local[d] < 1 || dims.global[d] % dims.local[d] != 0)
      throw_error("CUDA kernel ", name_, ": expected global sizes that are positive multiples of the local sizes, got ",
                  dims.global[d], " and ", dims.local[d], " along dimension ", d);
    grid.global[d] = dims.global[d] / dims.local[d];
    grid.local[d] = dims.local[d];
  }
  const int64_t threads = grid.local[0] * grid.local[1] * grid.local[2];
  if (threads > max_block_threads_)
    throw_error("CUDA kernel ", name_, ": expected at most ", max_block_threads_, " threads per block, got ", threads);
  return run(bufs, vals, grid, wait);
}

double CudaProgram::run(const std::vector<void*>& bufs, const std::vector<int64_t>& vals, const LaunchDims& grid,
                        bool wait) {
  if (!vals.empty()) throw_error("CUDA kernel ", name_, ": expected no integer arguments, got ", vals.size());
  for (int64_t blocks : grid.global)
    if (blocks > INT_MAX) throw_error("CUDA kernel ", name_, ": ", blocks, " blocks exceed one launch");
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
  auto u = [](int64_t n) { return static_cast<unsigned>(n); };
  ctx_.driver.check(ctx_.driver.LaunchKernel(function_, u(grid.global[0]), u(grid.global[1]), u(grid.global[2]),
                                             u(grid.local[0]), u(grid.local[1]), u(grid.local[2]), 0, nullptr,
                                             params.data(), nullptr),
                    "cuLaunchKernel");
  if (!wait) return 0;
  ctx_.driver.check(ctx_.driver.CtxSynchronize(), "cuCtxSynchronize");
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace kiln::runtime::cuda
