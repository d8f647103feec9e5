#include "runtime/cpu_allocator.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "kiln/error.h"

namespace kiln::runtime {
namespace {

constexpr size_t kAlignment = 64;
std::atomic<int64_t> g_bytes_in_use{0};

}  // namespace

void* CpuAllocator::alloc(size_t bytes) {
  // aligned_alloc wants a multiple of the alignment; a 0-byte request still gets its own block so
  // every allocation has a distinct pointer.
  if (bytes > std::numeric_limits<size_t>::max() - kAlignment) {
    throw_error("out of memory: could not allocate ", bytes, " bytes on CPU");
  }
  size_t rounded = bytes == 0 ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* ptr = std::aligned_alloc(kAlignment, rounded);
  if (!ptr) throw_error("out of memory: could not allocate ", bytes, " bytes on CPU");
  g_bytes_in_use += static_cast<int64_t>(bytes);
  return ptr;
}

void CpuAllocator::free(void* ptr, size_t bytes) {
  if (!ptr) return;
  std::free(ptr);
  g_bytes_in_use -= static_cast<int64_t>(bytes);
}

void CpuAllocator::copyin(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}

void CpuAllocator::copyout(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}

int64_t cpu_bytes_in_use() { return g_bytes_in_use.load(); }

}  // namespace kiln::runtime
