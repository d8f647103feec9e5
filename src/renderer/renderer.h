#pragma once
// A renderer prints a linearized kernel (a flat, dependency-ordered list of UOps) as source text
// for one language. Codegen asks it what it can render; it knows nothing of devices.
#include <array>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/ir/uop.h"

namespace kiln::renderer {

struct Kernel {
  std::string name;                // function name
  std::vector<UOpRef> linear;      // from codegen's linearizer
  int64_t threads = 1;             // THREAD ranges are split over this many threads (core_id)
  // Work-groups: the LOCAL/GROUP_REDUCE range ids along local dimensions 0, 1, 2 and the group's
  // size along each (none: no work-groups, core_id is the work-item; else core_id is the group).
  std::vector<int64_t> local_axes;
  std::array<int64_t, 3> local_size{1, 1, 1};
  // Whether stores of whole cache lines to buffers bypass the caches (where the language can):
  // codegen asks for it when the kernel's output outgrows them.
  bool streaming_stores = false;
  // Loads to prefetch ahead of, by how many elements (where the language can): codegen's choice.
  std::unordered_map<const UOp*, int64_t> prefetch;
};

class Renderer {
 public:
  virtual ~Renderer() = default;
  virtual std::string render(const Kernel& kernel) const = 0;
  virtual std::string language() const = 0;
};

// C for the CPU (clang/gcc), called as void name(void** bufs, const long long* vals, int core_id).
const Renderer& c_renderer();
// OpenCL C, called as __kernel void name(__global T0* data0, ...) with one work-item per core_id.
const Renderer& opencl_renderer();
// CUDA C++ for NVRTC, as extern "C" __global__ void name(T0* data0, ...); thread core_id is
// blockIdx.x * blockDim.x + threadIdx.x, and threads past the kernel's count return at once.
const Renderer& cuda_renderer();
// The renderer of a device's kernel language ("C", "OpenCL", "CUDA"); throws kiln::Error for others.
const Renderer& renderer_for(const std::string& language);

}  // namespace kiln::renderer
