#pragma once
// GPU memory: each allocation is a CUdeviceptr (handed out as void*), copied with blocking copies.
#include "runtime/allocator.h"
#include "runtime/cuda/cuda_context.h"

namespace kiln::runtime::cuda {

class CudaAllocator final : public Allocator {
 public:
  explicit CudaAllocator(const Context& ctx) : ctx_(ctx) {}
  void* alloc(size_t bytes) override;
  void free(void* ptr, size_t bytes) override;
  // Both copies return when done; launches issued before them finish first (one stream).
  void copyin(void* dst, const void* src, size_t bytes) override;
  void copyout(void* dst, const void* src, size_t bytes) override;

 private:
  const Context& ctx_;
};

}  // namespace kiln::runtime::cuda
