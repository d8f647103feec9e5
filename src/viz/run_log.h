#pragma once
// What ran, for the VIZ page: each generated kernel's source and each schedule as it was launched.
// The engine records here only when VIZ is on (trace::enabled()).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kiln::viz {

struct KernelSource {
  std::string name;     // the function name, e.g. "r_4_16_4"
  std::string context;  // the VIZ context its codegen ran under (its rewrites share it)
  std::string source;
  std::vector<std::string> opts;
};

struct BufferUse {
  int64_t id;
  std::string dtype;
  int64_t size;  // elements
  std::string device;
};
struct Launch {
  std::string kernel;
  int64_t kernel_id;  // index of its KernelSource, -1 when it was generated before VIZ was on
  std::vector<BufferUse> buffers;  // the output first
  double seconds;
};
struct ScheduleRun {
  std::string context;
  std::vector<Launch> launches;  // in order
};

// Returns the kernel's id (its index in the log).
int64_t record_kernel(KernelSource k);
void record_schedule(ScheduleRun s);

// Calls fn with everything recorded so far (under the log's lock: keep fn short).
void visit_run_log(const std::function<void(const std::vector<KernelSource>&, const std::vector<ScheduleRun>&)>& fn);
void clear_run_log();

}  // namespace kiln::viz
