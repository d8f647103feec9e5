#pragma once
// Host memory for the CPU device, 64-byte aligned so kernels can use aligned vector loads.
#include <cstdint>

#include "runtime/allocator.h"

namespace kiln::runtime {

class CpuAllocator final : public Allocator {
 public:
  void* alloc(size_t bytes) override;
  void free(void* ptr, size_t bytes) override;
  void copyin(void* dst, const void* src, size_t bytes) override;
  void copyout(void* dst, const void* src, size_t bytes) override;
  bool host_memory() const override { return true; }
};

// Bytes currently allocated by all CpuAllocators (as requested, before rounding up).
int64_t cpu_bytes_in_use();

}  // namespace kiln::runtime
