#include "engine/realize.h"

#include <chrono>
#include <cstdio>
#include <unordered_map>

#include "codegen/codegen.h"
#include "engine/buffers.h"
#include "kiln/counters.h"
#include "kiln/device.h"
#include "kiln/error.h"
#include "support/env.h"
#include "support/profile.h"
#include "uop/rewrite_trace.h"
#include "viz/at_exit.h"
#include "viz/run_log.h"

namespace kiln {

int64_t GlobalCounters::kernel_count = 0, GlobalCounters::global_ops = 0, GlobalCounters::global_mem = 0,
        GlobalCounters::mem_used = 0, GlobalCounters::mem_peak = 0;
double GlobalCounters::time_sum_s = 0;
void GlobalCounters::reset() {
  kernel_count = global_ops = global_mem = 0;
  time_sum_s = 0;
  mem_peak = mem_used;
}

namespace engine {
namespace {

std::vector<KernelCall>* capture_sink = nullptr;

// The memory planner: for each call, the buffers whose memory can be reused once it has run —
// buffers these calls write that nothing after them reads (not in `keep`), after their last reader.
std::vector<std::vector<const UOp*>> releases_after(const std::vector<KernelCall>& calls,
                                                    const std::unordered_set<const UOp*>& keep) {
  std::unordered_map<const UOp*, size_t> last_use;
  std::unordered_set<const UOp*> written;
  for (size_t c = 0; c < calls.size(); c++)
    for (size_t i = 0; i < calls[c].buffers.size(); i++) {
      const UOp* b = calls[c].buffers[i].get();
      last_use[b] = c;
      if (calls[c].writes(i)) written.insert(b);
    }
  std::vector<std::vector<const UOp*>> out(calls.size());
  for (const UOp* b : written)
    if (!keep.count(b)) out[last_use[b]].push_back(b);
  return out;
}

// A call's buffers as the VIZ schedule shows them.
std::vector<viz::BufferUse> viz_buffers(const KernelCall& call) {
  std::vector<viz::BufferUse> out;
  for (const UOpRef& buffer : call.buffers) {
    const BufferArg& b = buffer->arg_as<BufferArg>();
    out.push_back({b.id, buffer->dtype.name(), b.size, b.device});
  }
  return out;
}

// Launches one kernel; returns its seconds.
double launch(const CompiledKernel& k, runtime::Device& device, std::span<const UOp* const> buffers, int debug) {
  const std::vector<void*> bufs = buffer_addresses(buffers);
  int64_t bytes = 0;
  for (const UOp* b : buffers) bytes += static_cast<int64_t>(buffer_bytes(*b));
  double seconds;
  {
    profile::Scope timed("launch", k.program.name, bytes);
    seconds = k.runtime->launch_grid(bufs, {}, {k.program.global_size, k.program.local_size}, debug >= 2);
  }
  GlobalCounters::kernel_count++;
  GlobalCounters::global_ops += static_cast<int64_t>(k.program.flops);
  GlobalCounters::global_mem += bytes;
  GlobalCounters::time_sum_s += seconds;
  if (debug >= 2)
    fprintf(stderr, "*** %-6s %4lld %s arg %2zu mem %6.2f GB tm %10.2fus/%10.2fms (%9.2f GFLOPS %7.1f GB/s)\n",
            device.name().c_str(), (long long)GlobalCounters::kernel_count, pad(debug_name(k.program), 30).c_str(),
            buffers.size(), GlobalCounters::mem_used / 1e9, seconds * 1e6, GlobalCounters::time_sum_s * 1e3,
            k.program.flops / seconds / 1e9, bytes / seconds / 1e9);
  return seconds;
}

// Runs one copy between devices; returns its seconds.
double run_copy(runtime::Device& device, const UOp& dst, const UOp& src, int debug) {
  const std::string name = schedule::copy_name(dst, src);
  const auto bytes = static_cast<int64_t>(buffer_bytes(dst));
  auto start = std::chrono::steady_clock::now();
  {
    profile::Scope timed("copy", name, bytes);
    copy_buffer(dst, src);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  GlobalCounters::global_mem += bytes;
  GlobalCounters::time_sum_s += seconds;
  if (debug >= 2)
    fprintf(stderr, "*** %-6s %4lld %s arg %2d mem %6.2f GB tm %10.2fus/%10.2fms (%9.2f GB/s)\n",
            device.name().c_str(), (long long)GlobalCounters::kernel_count, pad(name, 30).c_str(), 2,
            GlobalCounters::mem_used / 1e9, seconds * 1e6, GlobalCounters::time_sum_s * 1e3, bytes / seconds / 1e9);
  return seconds;
}

}  // namespace

double run_call(const CompiledKernel* kernel, runtime::Device& device, std::span<const UOp* const> buffers) {
  const int debug = env::debug_level();
  return kernel ? launch(*kernel, device, buffers, debug) : run_copy(device, *buffers[0], *buffers[1], debug);
}

void run_calls(const std::vector<KernelCall>& calls, const std::unordered_set<const UOp*>& keep) {
  // A JIT capture keeps every buffer: results of kernels that depend on no input are reused by
  // the replays.
  const std::vector<std::vector<const UOp*>> releases =
      capture_sink ? std::vector<std::vector<const UOp*>>(calls.size()) : releases_after(calls, keep);
  viz::ScheduleRun viz_run;
  if (trace::enabled()) viz_run.context = trace::current_context();
  std::vector<const UOp*> buffers;
  for (size_t c = 0; c < calls.size(); c++) {
    const KernelCall& call = calls[c];
    buffers.clear();
    for (const UOpRef& b : call.buffers) buffers.push_back(b.get());
    const double seconds = run_call(call.kernel, *call.device, buffers);
    if (trace::enabled()) {
      std::string name = call.is_copy() ? schedule::copy_name(*call.buffers[0], *call.buffers[1]) : call.kernel->program.name;
      viz_run.launches.push_back({std::move(name), call.is_copy() ? -1 : call.kernel->viz_id, viz_buffers(call), seconds});
    }
    for (const UOp* b : releases[c]) release_memory(*b);
  }
  if (trace::enabled() && !viz_run.launches.empty()) viz::record_schedule(std::move(viz_run));
  if (capture_sink) capture_sink->insert(capture_sink->end(), calls.begin(), calls.end());
}

void set_capture(std::vector<KernelCall>* sink) { capture_sink = sink; }
bool capturing() { return capture_sink != nullptr; }

schedule::Schedule schedule(const std::vector<UOpRef>& roots) {
  viz::install_exit_hook();
  auto start = std::chrono::steady_clock::now();
  schedule::Schedule s = [&] {
    profile::Scope timed("schedule", "schedule");
    return schedule::create_schedule(roots, default_device(), [](const std::string& name) {
      const runtime::Device& device = runtime::get_device(name);
      return schedule::Target{.loops_in_order = device.max_local_size() == 0,
                              .vector_bytes = device.vector_bytes(),
                              .vector_registers = device.vector_registers(),
                              .matmul_tile_rows = device.vector_bytes() > 0
                                                      ? static_cast<int>(codegen::matmul_tile_rows(device.vector_registers()))
                                                      : 0};
    });
  }();
  engine_stats().schedules++;
  if (env::debug_level() >= 1 && !s.linear->src.empty())
    fprintf(stderr, "scheduled %zu kernels and copies in %.2f ms\n", s.linear->src.size(),
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  return s;
}

void run_schedule(const schedule::Schedule& s, const std::unordered_set<const UOp*>& needed) {
  // a call runs on its output's device (a copy: its destination's)
  auto device_of = [](const UOpRef& call) { return &runtime::get_device(call->src[1]->arg_as<BufferArg>().device); };
  std::vector<std::pair<UOpRef, runtime::Device*>> kernels;
  for (const UOpRef& call : s.linear->src)
    if (call->src[0]->op != Ops::COPY) kernels.push_back({call->src[0], device_of(call)});
  prepare_kernels(kernels);
  std::vector<KernelCall> calls;
  for (const UOpRef& call : s.linear->src) {
    runtime::Device* dev = device_of(call);
    CompiledKernel* kernel = call->src[0]->op == Ops::COPY ? nullptr : &compiled_kernel(call->src[0], *dev);
    calls.push_back({kernel, dev, std::vector<UOpRef>(call->src.begin() + 1, call->src.end())});
  }
  // the buffers of the realized nodes still needed; the rest are intermediates
  std::unordered_set<const UOp*> keep;
  for (const auto& [node, view] : s.becomes)
    if (needed.count(node))
      for (const UOp* u : view->toposort())
        if (u->op == Ops::BUFFER) keep.insert(u);
  run_calls(calls, keep);
  if (env::debug_level() >= 1 && !calls.empty())
    fprintf(stderr, "memory: %.2f MB in use, peak %.2f MB\n", GlobalCounters::mem_used / 1e6, GlobalCounters::mem_peak / 1e6);
}

}  // namespace engine
}  // namespace kiln
