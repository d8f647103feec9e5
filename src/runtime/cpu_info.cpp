#include "runtime/cpu_info.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

namespace kiln::runtime {
namespace {

// The first processor's `key : value` lines of /proc/cpuinfo.
std::map<std::string, std::string> first_processor_fields() {
  std::map<std::string, std::string> fields;
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line) && !line.empty();) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t key_end = line.find_last_not_of(" \t", colon == 0 ? 0 : colon - 1);
    const size_t value_begin = line.find_first_not_of(" \t", colon + 1);
    fields[line.substr(0, key_end == std::string::npos ? 0 : key_end + 1)] =
        value_begin == std::string::npos ? "" : line.substr(value_begin);
  }
  return fields;
}

// cpu0's L1 data, L2 and highest-level caches from sysfs. (glibc's sysconf(_SC_LEVEL3_CACHE_SIZE)
// says 320 MB for a VM's 32 MB L3 on AMD EPYC.)
void read_caches(CpuInfo& cpu) {
  int highest = 0;
  for (int i = 0;; i++) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream level_file(dir + "level"), size_file(dir + "size"), type_file(dir + "type");
    int level = 0;
    int64_t size = 0;
    char unit = 0;
    std::string type;
    if (!(level_file >> level) || !(size_file >> size)) return;
    size_file >> unit;  // "32768K"
    type_file >> type;  // Data, Instruction or Unified
    size *= unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : unit == 'G' ? 1024 * 1024 * 1024 : 1;
    if (level == 1 && type == "Data") cpu.l1d_bytes = size;
    if (level == 2 && type != "Instruction") cpu.l2_bytes = size;
    if (level >= highest && type != "Instruction") highest = level, cpu.llc_bytes = size;
  }
}

// AMD's Zen cores (family 17h and later) have two vector FMA pipes; Intel's count varies within a
// model line (one or two 512-bit units on Xeon Scalable), so it stays unknown there.
int fma_units(const std::map<std::string, std::string>& fields) {
  auto vendor = fields.find("vendor_id"), family = fields.find("cpu family");
  if (vendor == fields.end() || family == fields.end() || vendor->second != "AuthenticAMD") return 0;
  return std::strtol(family->second.c_str(), nullptr, 10) >= 0x17 ? 2 : 0;
}

CpuInfo read_host_cpu() {
  CpuInfo cpu;
  const auto fields = first_processor_fields();
  if (auto it = fields.find("model name"); it != fields.end()) cpu.model = it->second;
  cpu.logical_cpus = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  cpu.vector_bytes = __builtin_cpu_supports("avx512f") ? 64 : __builtin_cpu_supports("avx2") ? 32 : 16;
  cpu.vector_registers = __builtin_cpu_supports("avx512f") ? 32 : 16;
  read_caches(cpu);
  if (__builtin_cpu_supports("fma")) cpu.fma_units = fma_units(fields);
  return cpu;
}

std::string kib(int64_t bytes) { return bytes > 0 ? std::to_string(bytes / 1024) + " KiB" : "unknown"; }

}  // namespace

const CpuInfo& host_cpu() {
  static const CpuInfo cpu = read_host_cpu();
  return cpu;
}

std::string describe(const CpuInfo& cpu) {
  std::string line = "CPU \"" + cpu.model + "\": " + std::to_string(cpu.logical_cpus) + " logical CPUs, " +
                     std::to_string(cpu.vector_bytes) + "-byte vectors x " + std::to_string(cpu.vector_registers) +
                     " registers, L1d " + kib(cpu.l1d_bytes) + ", L2 " + kib(cpu.l2_bytes) + ", LLC " +
                     kib(cpu.llc_bytes);
  if (cpu.fma_units > 0) line += ", " + std::to_string(cpu.fma_units) + " FMA units per core";
  return line;
}

}  // namespace kiln::runtime
