#pragma once
// The host CPU as the CPU device's code generator sees it, read once at run time: kernels are
// compiled with -march=native, so their vector registers and caches are this machine's.
#include <cstdint>
#include <string>

namespace kiln::runtime {

struct CpuInfo {
  std::string model;         // /proc/cpuinfo's "model name" ("" if absent)
  int logical_cpus = 1;      // online hardware threads: the thread pool's size
  int vector_bytes = 16;     // widest SIMD register: 64 with AVX-512, 32 with AVX2, else SSE's 16
  int vector_registers = 16;  // 32 with AVX-512, else 16
  // cpu0's caches from sysfs, 0 where unknown.
  int64_t l1d_bytes = 0, l2_bytes = 0, llc_bytes = 0;
  int fma_units = 0;  // vector FMA pipes per core, 0 where unknown
};

// Read on first call.
const CpuInfo& host_cpu();
// One line: model, logical CPUs, vector width and registers, cache sizes, FMA units if known.
std::string describe(const CpuInfo& cpu);

}  // namespace kiln::runtime
