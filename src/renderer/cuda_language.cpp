// CUDA C++ (compiled by NVRTC): one thread per core_id, found from the block and thread indices (or
// one block per core_id, its threads the work-group's work-items); scalar code only. NVRTC compiles
// with -default-device, so the shared plain-C helpers (the half-precision conversions) are device
// functions too.
#include "renderer/cstyle_renderer.h"

namespace kiln::renderer {
namespace {

// The union is the bit cast NVCC documents for device code. kiln_max: NaN wins (PyTorch's max);
// fmaxf would drop it.
const char* kPreamble = R"(#define KILN_BITCAST(to, from, x) kiln_bitcast<to, from>(x)
template <class To, class From> __device__ To kiln_bitcast(From x) { union { From f; To t; } u; u.f = x; return u.t; }
template <class T> __device__ T kiln_max(T a, T b) { return (a > b || a != a) ? a : b; }
)";

CStyleLanguage cuda_language() {
  CStyleLanguage cu;
  cu.name = "CUDA";
  cu.preamble = kPreamble;
  cu.types = {{ScalarType::Bool, "bool"}};  // C++ has no _Bool
  cu.bool_in_memory = "bool";
  cu.int64_suffix = "ll";
  cu.uint64_suffix = "ull";
  // The bit patterns CUDA's own headers use (CUDART_NAN_F, CUDART_INF, ...): no header needed.
  cu.nan = "__int_as_float(0x7fffffff)";
  cu.inf = "__int_as_float(0x7f800000)";
  cu.nan_double = "__longlong_as_double(0x7ff8000000000000ll)";
  cu.inf_double = "__longlong_as_double(0x7ff0000000000000ll)";
  cu.vectors = false;
  // extern "C": the runtime finds the kernel by its unmangled name.
  cu.signature = [](const std::string& kernel, const std::vector<std::pair<int64_t, std::string>>& params) {
    std::string args = positional_parameters(
        params, [](const std::string& type) { return type + "* __restrict__"; }, "const unsigned char*");
    return "extern \"C\" __global__ void " + kernel + args + " {\n";
  };
  cu.global_index = "(blockIdx.x * blockDim.x + threadIdx.x)";
  cu.group_index = "blockIdx.x";
  cu.local_index = [](int dim) { return std::string("threadIdx.") + "xyz"[dim]; };
  cu.local_memory = "__shared__";
  cu.barrier = "__syncthreads();";
  cu.thread_guard = [](int64_t threads) { return "  if (core_id >= " + std::to_string(threads) + ") return;\n"; };
  cu.math = [](const std::string& f, DType d, const std::string&) { return d.scalar == ScalarType::Float64 ? f : f + "f"; };
  cu.max = [](const std::string& a, const std::string& b, const std::string& type) {
    return "kiln_max<" + type + ">(" + a + ", " + b + ")";
  };
  cu.max_definition = [](const std::string&) { return std::string(); };  // the preamble's template
  return cu;
}

}  // namespace

const Renderer& cuda_renderer() {
  static const CStyleRenderer r(cuda_language());
  return r;
}

}  // namespace kiln::renderer
