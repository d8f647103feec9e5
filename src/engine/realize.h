#pragma once
// The engine pairs the stages: schedule → codegen → renderer → runtime. It compiles each kernel
// once per process (and the runtime's disk cache makes that once per machine), then launches.
#include <span>
#include <unordered_set>
#include <vector>

#include "engine/kernel_cache.h"
#include "kiln/ir/uop.h"
#include "schedule/schedule.h"

namespace kiln::engine {

// One launch: a compiled kernel and the BUFFERs bound to its PARAMs; or a copy between devices
// (no kernel; buffers: destination, source; device: the destination's).
struct KernelCall {
  CompiledKernel* kernel;
  runtime::Device* device;
  std::vector<UOpRef> buffers;
  bool is_copy() const { return kernel == nullptr; }
  // Does the call store into buffers[i] (a kernel's outputs, a copy's destination)?
  bool writes(size_t i) const { return is_copy() ? i == 0 : i < kernel->writes.size() && kernel->writes[i]; }
};

// Schedules `roots` (tensor-graph nodes): the kernels to run and what each realized node becomes.
schedule::Schedule schedule(const std::vector<UOpRef>& roots);
// Runs a schedule. Realized nodes in `needed` (those something still refers to) keep their
// buffers; the other buffers are intermediates, reused as soon as their last reader has run.
void run_schedule(const schedule::Schedule& s, const std::unordered_set<const UOp*>& needed);

// Launches `calls` in order. Buffers they write that `keep` does not hold are intermediates: their
// memory is reused as soon as their last reader has run (the memory planner).
void run_calls(const std::vector<KernelCall>& calls, const std::unordered_set<const UOp*>& keep);
// Runs one call of run_calls over `buffers` (the kernel's PARAMs; a copy's destination, source),
// with the same counters and DEBUG=2 line; returns its seconds. The dispatch cache launches so.
double run_call(const CompiledKernel* kernel, runtime::Device& device, std::span<const UOp* const> buffers);

// While a sink is set, every call run_calls launches is also appended to it (JIT capture).
void set_capture(std::vector<KernelCall>* sink);
bool capturing();

}  // namespace kiln::engine
