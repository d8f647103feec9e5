#pragma once
// Compiled programs, by (kernel AST, device, optimized?): codegen and compilation happen once per
// kernel per process (and the runtime's disk cache makes compiling once per machine).
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codegen/codegen.h"
#include "runtime/device.h"

namespace kiln::engine {

struct CompiledKernel {
  codegen::Program program;
  std::unique_ptr<runtime::Program> runtime;
  std::vector<bool> writes;  // per PARAM: does the kernel store into it (an output)?
  int64_t viz_id = -1;       // its source in the VIZ log
};

// Generates and compiles the kernels not compiled yet; the compiler processes run in parallel.
void prepare_kernels(const std::vector<std::pair<UOpRef, runtime::Device*>>& kernels);
// A kernel prepare_kernels made ready (the dispatch path: one lookup).
CompiledKernel& compiled_kernel(const UOpRef& ast, runtime::Device& dev);

// A second compile of every kernel the cache compiles, for a target other than its device (the
// tests render each kernel as CUDA and compile it with NVRTC: tests/tools/cuda_render_check.cpp).
// The check is called beside the kernel's codegen, one kernel at a time, and returns the compile,
// which runs beside the device's, in parallel; an exception from either fails the schedule as a
// failed compile does. An empty check removes it.
using KernelCheck = std::function<std::function<void()>(const UOpRef& ast, bool optimize)>;
void set_kernel_check(KernelCheck check);

// Work the engine has done since the process started; a JIT replay adds nothing to the first two.
struct EngineStats {
  std::atomic<int64_t> schedules{0};          // graphs scheduled (a schedule-cache hit counts)
  std::atomic<int64_t> kernels_generated{0};  // kernels through codegen
};
EngineStats& engine_stats();

// `s` padded with spaces to `width` visible characters (kernel names carry ANSI colors).
std::string pad(const std::string& s, size_t width);
// The kernel's name for DEBUG lines on stderr: its axes colored only when stderr is a terminal, so
// pipes and log files get no escape codes.
const std::string& debug_name(const codegen::Program& p);

}  // namespace kiln::engine
