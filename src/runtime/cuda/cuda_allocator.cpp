#include "runtime/cuda/cuda_allocator.h"

#include <algorithm>

#include "kiln/error.h"

namespace kiln::runtime::cuda {
namespace {

CUdeviceptr device_pointer(const void* ptr) { return reinterpret_cast<CUdeviceptr>(ptr); }

}  // namespace

void* CudaAllocator::alloc(size_t bytes) {
  ctx_.make_current();
  // cuMemAlloc refuses 0 bytes; a 0-byte request gets one byte so every allocation is distinct.
  CUdeviceptr ptr = 0;
  CUresult r = ctx_.driver.MemAlloc(&ptr, std::max<size_t>(bytes, 1));
  if (r != 0)
    throw_error("out of memory: could not allocate ", bytes, " bytes on CUDA (", ctx_.device_name,
                "): ", ctx_.driver.error_name(r));
  return reinterpret_cast<void*>(ptr);
}

void CudaAllocator::free(void* ptr, size_t) {
  // Unchecked: freeing runs in destructors, and a failure leaves nothing to undo.
  ctx_.driver.CtxSetCurrent(ctx_.context);
  ctx_.driver.MemFree(device_pointer(ptr));
}

void CudaAllocator::copyin(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  ctx_.make_current();
  ctx_.driver.check(ctx_.driver.MemcpyHtoD(device_pointer(dst), src, bytes), "cuMemcpyHtoD");
}

void CudaAllocator::copyout(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  ctx_.make_current();
  ctx_.driver.check(ctx_.driver.MemcpyDtoH(dst, device_pointer(src), bytes), "cuMemcpyDtoH");
}

}  // namespace kiln::runtime::cuda
