// OpenCL C: kernels take their buffers as __global pointers and find their thread index with
// get_global_id (with work-groups: the group's with get_group_id). Scalar code only for now (no vector types), and no GNU extensions.
#include <algorithm>

#include "renderer/cstyle_renderer.h"

namespace kiln::renderer {
namespace {

// The pragma is needed before OpenCL 1.2 and harmless after; a kernel without doubles is fine on
// devices without cl_khr_fp64.
const char* kPreamble = R"(#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define KILN_BITCAST(to, from, x) (((union { from f; to t; }){(x)}).t)
)";

std::string identifier(std::string type) {
  std::replace(type.begin(), type.end(), ' ', '_');
  return type;
}

CStyleLanguage opencl_language() {
  CStyleLanguage cl;
  cl.name = "OpenCL";
  cl.preamble = kPreamble;
  cl.types = {{ScalarType::Bool, "bool"},    {ScalarType::Int8, "char"},    {ScalarType::Int64, "long"},
              {ScalarType::UInt8, "uchar"},  {ScalarType::UInt16, "ushort"}, {ScalarType::UInt32, "uint"},
              {ScalarType::UInt64, "ulong"}};
  cl.bool_in_memory = "uchar";  // kernel arguments may not point to bool
  cl.int64_suffix = "l";
  cl.uint64_suffix = "ul";
  cl.nan = "NAN";
  cl.nan_double = "((double)NAN)";
  cl.inf = "INFINITY";
  cl.inf_double = "((double)INFINITY)";
  cl.vectors = false;
  // Arguments are positional: the launch sets argument i to buffer i. A buffer the kernel no longer
  // reads (simplified away) keeps its place as an unused argument.
  cl.signature = [](const std::string& kernel, const std::vector<std::pair<int64_t, std::string>>& params) {
    std::string args = positional_parameters(
        params, [](const std::string& type) { return "__global " + type + "* restrict"; }, "__global const uchar*");
    return "__kernel void " + kernel + args + " {\n";
  };
  cl.global_index = "get_global_id(0)";
  cl.group_index = "get_group_id(0)";
  cl.local_index = [](int dim) { return "get_local_id(" + std::to_string(dim) + ")"; };
  cl.local_memory = "__local";
  cl.barrier = "barrier(CLK_LOCAL_MEM_FENCE);";
  cl.math = [](const std::string& f, DType, const std::string&) { return f; };  // overloaded for float and double
  // fmax would drop a NaN; PyTorch's max propagates it. One function per type, as OpenCL C has
  // neither __typeof__ nor statement expressions.
  cl.max = [](const std::string& a, const std::string& b, const std::string& type) {
    return "kiln_max_" + identifier(type) + "(" + a + ", " + b + ")";
  };
  cl.max_definition = [](const std::string& type) {
    // only a float can be NaN (a != a on integers is a self-comparison PoCL's clang warns about)
    const bool is_float = type.starts_with("float") || type.starts_with("double") || type.starts_with("half");
    return "static inline " + type + " kiln_max_" + identifier(type) + "(" + type + " a, " + type + " b) { return (a > b" +
           (is_float ? " || a != a" : "") + ") ? a : b; }\n";
  };
  return cl;
}

}  // namespace

const Renderer& opencl_renderer() {
  static const CStyleRenderer r(opencl_language());
  return r;
}

}  // namespace kiln::renderer
