#pragma once
// The C-style renderer shared by every C-like language (tinygrad's CStyleLanguage): one walk over
// the linearized UOps, with what differs between C, OpenCL C and CUDA C given as data and small
// functions in a CStyleLanguage (c_language.cpp, opencl_language.cpp, cuda_language.cpp).
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "renderer/renderer.h"

namespace kiln::renderer {

struct CStyleLanguage {
  std::string name;                          // Renderer::language(), e.g. "OpenCL"
  std::string preamble;                      // defines KILN_MAX and KILN_BITCAST(to, from, x)
  std::map<ScalarType, std::string> types;   // scalar type names that differ from DType::c_name
  std::string bool_in_memory;                // the type a bool buffer holds
  std::string int64_suffix, uint64_suffix;   // of 64-bit integer literals: "ll" in C
  std::string nan, inf, nan_double, inf_double;  // literals of the special values
  bool vectors = true;                       // can it render vector dtypes?
  // The type of index arithmetic that only addresses memory (offsets, the loop counters and gates
  // they come from), or "" to keep the index dtype. On a CPU a pointer-sized integer saves a sign
  // extension and an add per access (int32 math that wraps cannot be folded into an address), which
  // a conv's register tile does on every load. GPUs compute 32-bit integers faster than 64-bit ones.
  std::string address_type;
  // The function header up to its opening brace and the lines that name the buffers data<i> (and
  // core_id where it is a parameter). `params` are (index, element type in memory) in the kernel's order.
  std::function<std::string(const std::string& kernel, const std::vector<std::pair<int64_t, std::string>>& params)>
      signature;
  // Lines after the signature that end the work items past the kernel's `threads` (CUDA launches
  // whole blocks); unset where a launch runs exactly `threads` of them. Kernels with work-groups
  // launch exactly their groups and need none.
  std::function<std::string(int64_t threads)> thread_guard;
  // Work-items and work-groups (empty where the signature defines core_id and there are no groups):
  // the expressions of core_id without groups (the work-item) and with them (the group), of the
  // work-item's index in its group along a dimension, the qualifier of a group's shared arrays and
  // the statement that waits for the group's work-items and their writes to them.
  std::string global_index, group_index;
  std::function<std::string(int dim)> local_index;
  std::string local_memory, barrier;
  // A one-argument math function on values of dtype `d` whose register type is `type` (a vector
  // type where the language has vectors), e.g. ("exp", float32, "float") -> "__builtin_expf"; and
  // what the kernel must define once to call it ("" or unset: nothing).
  std::function<std::string(const std::string& f, DType d, const std::string& type)> math;
  std::function<std::string(const std::string& f, DType d, const std::string& type)> math_definition;
  // max(a, b) where NaN wins (PyTorch's semantics) for values of type `type`, and the definitions
  // it needs once per kernel for that type ("" when the preamble has them).
  std::function<std::string(const std::string& a, const std::string& b, const std::string& type)> max;
  std::function<std::string(const std::string& type)> max_definition;
  // Stores past the caches (Kernel::streaming_stores): the bytes of one (a cache line; 0: the
  // language has none), the macro that stores a vector of that size at a pointer, what a kernel
  // with such stores defines once for it, and the statement after the kernel's last one (which
  // orders them before the kernel's end).
  int streaming_store_bytes = 0;
  std::string streaming_store, streaming_definition, streaming_fence;
  // The function that hints a read of memory ahead of a load, given a pointer ("" where none).
  std::string prefetch;
};

// The parameter list "(T0 data0, T1 data1, ...)" of a kernel whose arguments are positional (a
// launch passes buffer i as argument i): `declare(type)` declares a pointer to `type`, and a buffer
// the kernel no longer reads (simplified away) keeps its place as an unused `unused_pointer`.
std::string positional_parameters(std::vector<std::pair<int64_t, std::string>> params,
                                  const std::function<std::string(const std::string& type)>& declare,
                                  const std::string& unused_pointer);

class CStyleRenderer final : public Renderer {
 public:
  explicit CStyleRenderer(CStyleLanguage language) : lang_(std::move(language)) {}
  std::string render(const Kernel& kernel) const override;
  std::string language() const override { return lang_.name; }

 private:
  CStyleLanguage lang_;
};

}  // namespace kiln::renderer
