#pragma once
// OpenCL device memory: each allocation is a cl_mem (handed out as void*), copied through the queue.
#include "runtime/allocator.h"
#include "runtime/opencl/cl_context.h"

namespace kiln::runtime::cl {

class ClAllocator final : public Allocator {
 public:
  explicit ClAllocator(const Context& ctx) : ctx_(ctx) {}
  void* alloc(size_t bytes) override;
  void free(void* ptr, size_t bytes) override;
  // Both copies block until done; queued kernels run first, as the queue is in order.
  void copyin(void* dst, const void* src, size_t bytes) override;
  void copyout(void* dst, const void* src, size_t bytes) override;

 private:
  const Context& ctx_;
};

}  // namespace kiln::runtime::cl
