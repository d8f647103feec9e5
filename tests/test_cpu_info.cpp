// The CPU device's description of its host (runtime/cpu_info.h) against this test's own read of
// /proc/cpuinfo and sysfs, and the line the device prints at DEBUG=2 when it opens.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/cpu_info.h"

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The value of the first "key<tabs> : value" line of /proc/cpuinfo, "" if none.
std::string cpuinfo_value(const std::string& key) {
  std::istringstream lines(read_text("/proc/cpuinfo"));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(key, 0) != 0) continue;
    const std::string rest = line.substr(key.size());
    if (rest.find_first_not_of(" \t") != rest.find(':')) continue;  // a longer key with this prefix
    const size_t value = rest.find_first_not_of(' ', rest.find(':') + 1);
    return value == std::string::npos ? "" : rest.substr(value);
  }
  return "";
}

int processor_lines() {
  std::istringstream lines(read_text("/proc/cpuinfo"));
  int n = 0;
  for (std::string line; std::getline(lines, line);) n += line.rfind("processor", 0) == 0;
  return n;
}

bool has_flag(const std::string& flag) { return (" " + cpuinfo_value("flags") + " ").find(" " + flag + " ") != std::string::npos; }

struct Caches {
  int64_t l1d = 0, l2 = 0, llc = 0;
};

// cpu0's caches as sysfs lists them; sizes are written like "48K" or "32768K".
Caches sysfs_caches() {
  Caches c;
  int highest = 0;
  const std::filesystem::path root = "/sys/devices/system/cpu/cpu0/cache";
  if (!std::filesystem::exists(root)) return c;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    if (entry.path().filename().string().rfind("index", 0) != 0) continue;
    const int level = std::stoi(read_text(entry.path() / "level"));
    const std::string type = read_text(entry.path() / "type"), size_text = read_text(entry.path() / "size");
    size_t digits = 0;
    int64_t size = std::stoll(size_text, &digits);
    const char unit = size_text[digits];
    size <<= unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : 0;
    if (type.rfind("Instruction", 0) == 0) continue;
    if (level == 1) c.l1d = size;
    if (level == 2) c.l2 = size;
    if (level > highest) highest = level, c.llc = size;
  }
  return c;
}

int expected_vector_bytes() { return has_flag("avx512f") ? 64 : has_flag("avx2") ? 32 : 16; }

TEST(CpuInfo, AgreesWithProcAndSysfs) {
  const kiln::runtime::CpuInfo& cpu = kiln::runtime::host_cpu();
  EXPECT_EQ(cpu.model, cpuinfo_value("model name"));
  EXPECT_EQ(cpu.logical_cpus, processor_lines());
  EXPECT_EQ(cpu.vector_bytes, expected_vector_bytes());
  EXPECT_EQ(cpu.vector_registers, has_flag("avx512f") ? 32 : 16);
  const Caches caches = sysfs_caches();
  EXPECT_EQ(cpu.l1d_bytes, caches.l1d);
  EXPECT_EQ(cpu.l2_bytes, caches.l2);
  EXPECT_EQ(cpu.llc_bytes, caches.llc);
  // What the code generator is told is the same description.
  kiln::runtime::Device& dev = kiln::runtime::get_device("CPU");
  EXPECT_EQ(dev.vector_bytes(), cpu.vector_bytes);
  EXPECT_EQ(dev.l2_cache_bytes(), caches.l2);
  EXPECT_EQ(dev.last_level_cache_bytes(), caches.llc);
}

// `text` as a POSIX extended regex that matches it literally.
std::string literal_regex(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (std::string("\\^$.|?*+()[]{}").find(ch) != std::string::npos) out += '\\';
    out += ch;
  }
  return out;
}

std::string kib(int64_t bytes) { return bytes ? std::to_string(bytes / 1024) + " KiB" : "unknown"; }

TEST(CpuInfo, DeviceOpenPrintsDescriptionAtDebug2) {
  // A fresh process (the test binary run again for this statement alone), whose CPU device opens
  // inside it.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const Caches caches = sysfs_caches();
  const std::string line = "CPU \"" + cpuinfo_value("model name") + "\": " + std::to_string(processor_lines()) +
                           " logical CPUs, " + std::to_string(expected_vector_bytes()) + "-byte vectors x " +
                           std::to_string(has_flag("avx512f") ? 32 : 16) + " registers, L1d " + kib(caches.l1d) +
                           ", L2 " + kib(caches.l2) + ", LLC " + kib(caches.llc);
  EXPECT_EXIT(
      {
        kiln::Context debug({{"DEBUG", 2}});
        kiln::runtime::get_device("CPU");
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), literal_regex(line) + "(, [0-9]+ FMA units per core)?\n");
}

}  // namespace
