#pragma once
// Device memory as raw bytes. The runtime never knows what the bytes mean.
#include <cstddef>

namespace kiln::runtime {

struct Allocator {
  virtual ~Allocator() = default;
  // Returns memory for `bytes` bytes (bytes may be 0). Throws kiln::Error when out of memory.
  virtual void* alloc(size_t bytes) = 0;
  // Releases memory from alloc; `bytes` is the size it was allocated with.
  virtual void free(void* ptr, size_t bytes) = 0;
  // Host -> device: dst is device memory, src is host memory.
  virtual void copyin(void* dst, const void* src, size_t bytes) = 0;
  // Device -> host: dst is host memory, src is device memory.
  virtual void copyout(void* dst, const void* src, size_t bytes) = 0;
  // Is the memory host memory, which host code reads and writes in place (copies need no staging)?
  virtual bool host_memory() const { return false; }
};

}  // namespace kiln::runtime
