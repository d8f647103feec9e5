#pragma once
// Counters since the last reset: kernels launched, FLOPs and bytes they moved, device memory in use
// and its peak.
#include <cstdint>

namespace kiln {

struct GlobalCounters {
  static int64_t kernel_count;  // kernels launched
  static int64_t global_ops;    // estimated arithmetic operations
  static int64_t global_mem;    // bytes of the buffers the kernels touched
  static int64_t mem_used;      // device bytes allocated now (not reset)
  static int64_t mem_peak;      // the most mem_used has been since the last reset
  static double time_sum_s;     // seconds spent in kernels
  static void reset();
};

}  // namespace kiln
