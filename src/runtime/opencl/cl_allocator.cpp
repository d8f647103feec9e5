#include "runtime/opencl/cl_allocator.h"

#include <algorithm>

#include "kiln/error.h"

namespace kiln::runtime::cl {

void* ClAllocator::alloc(size_t bytes) {
  // OpenCL has no empty buffers; a 0-byte request gets one byte so every allocation is distinct.
  cl_int err = CL_SUCCESS;
  cl_mem mem = clCreateBuffer(ctx_.context, CL_MEM_READ_WRITE, std::max<size_t>(bytes, 1), nullptr, &err);
  if (err != CL_SUCCESS)
    throw_error("out of memory: could not allocate ", bytes, " bytes on CL (", ctx_.device_name, "): ", error_name(err));
  return mem;
}

void ClAllocator::free(void* ptr, size_t) { clReleaseMemObject(static_cast<cl_mem>(ptr)); }

void ClAllocator::copyin(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  check(clEnqueueWriteBuffer(ctx_.queue, static_cast<cl_mem>(dst), CL_TRUE, 0, bytes, src, 0, nullptr, nullptr),
        "clEnqueueWriteBuffer");
}

void ClAllocator::copyout(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  // The read does not modify the buffer; the API just takes a non-const cl_mem.
  cl_mem mem = static_cast<cl_mem>(const_cast<void*>(src));
  check(clEnqueueReadBuffer(ctx_.queue, mem, CL_TRUE, 0, bytes, dst, 0, nullptr, nullptr), "clEnqueueReadBuffer");
}

}  // namespace kiln::runtime::cl
