#include "viz/run_log.h"

#include <mutex>

namespace kiln::viz {
namespace {

struct Log {
  std::mutex mu;
  std::vector<KernelSource> kernels;
  std::vector<ScheduleRun> schedules;
};
Log& run_log() {
  static Log* l = new Log();  // never destroyed: the VIZ server reads it while the process exits
  return *l;
}

}  // namespace

int64_t record_kernel(KernelSource k) {
  std::lock_guard lock(run_log().mu);
  run_log().kernels.push_back(std::move(k));
  return static_cast<int64_t>(run_log().kernels.size()) - 1;
}

void record_schedule(ScheduleRun s) {
  std::lock_guard lock(run_log().mu);
  run_log().schedules.push_back(std::move(s));
}

void visit_run_log(const std::function<void(const std::vector<KernelSource>&, const std::vector<ScheduleRun>&)>& fn) {
  std::lock_guard lock(run_log().mu);
  fn(run_log().kernels, run_log().schedules);
}

void clear_run_log() {
  std::lock_guard lock(run_log().mu);
  run_log().kernels.clear();
  run_log().schedules.clear();
}

}  // namespace kiln::viz
