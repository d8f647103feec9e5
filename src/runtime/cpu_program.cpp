#include "runtime/cpu_program.h"

#include <dlfcn.h>

#include <chrono>
#include <climits>
#include <vector>

#include "kiln/error.h"
#include "support/thread_pool.h"

namespace kiln::runtime {
namespace {

// Kernels call libm's functions and clang's vectorized loops call libmvec's; their libraries are
// linked without either (linking them is a good part of a small kernel's cold compile), so both
// are loaded into the process's global scope once, where a kernel's undefined symbols are bound.
void load_math_libraries() {
  static const std::string failure = [] {
    for (const char* library : {"libm.so.6", "libmvec.so.1"})
      if (!dlopen(library, RTLD_NOW | RTLD_GLOBAL)) return std::string(library) + ": " + dlerror();
    return std::string();
  }();
  if (!failure.empty()) throw_error("could not load the math library CPU kernels call, ", failure);
}

}  // namespace

CpuProgram::CpuProgram(const std::string& library_path, const std::string& function_name) : name_(function_name) {
  load_math_libraries();
  // RTLD_LOCAL: kernels from different libraries may share symbol names.
  handle_ = dlopen(library_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) throw_error("could not load CPU kernel library ", library_path, ": ", dlerror());
  void* symbol = dlsym(handle_, function_name.c_str());
  if (!symbol) {
    dlclose(handle_);
    throw_error("CPU kernel library ", library_path, " has no function '", function_name, "'");
  }
  fn_ = reinterpret_cast<KernelFn>(symbol);
}

CpuProgram::~CpuProgram() { dlclose(handle_); }

double CpuProgram::launch(const std::vector<void*>& bufs, const std::vector<int64_t>& vals, int64_t global_size,
                          [[maybe_unused]] bool wait) {
  if (global_size > INT_MAX) throw_error("CPU launch: global_size ", global_size, " does not fit the kernel's int core_id");
  int n_cores = global_size <= 0 ? 1 : static_cast<int>(global_size);

  // The ABI says long long; int64_t has the same width but is a different type (long) on Linux.
  const std::vector<long long> vals_ll(vals.begin(), vals.end());
  const long long* vals_ptr = vals_ll.data();
  // The kernel takes void** but does not modify the array of pointers.
  void** bufs_ptr = const_cast<void**>(bufs.data());

  auto start = std::chrono::steady_clock::now();
  // The task captures one pointer so that std::function holds it without allocating.
  struct Call {
    KernelFn fn;
    void** bufs;
    const long long* vals;
  } call{fn_, bufs_ptr, vals_ptr};
  ThreadPool::global().run(n_cores, [&call](int core_id) { call.fn(call.bufs, call.vals, core_id); }, name_);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace kiln::runtime
