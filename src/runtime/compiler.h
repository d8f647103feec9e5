#pragma once
// Turns kernel source into a device binary (kiln::runtime::Compiler, defined in the public
// interface for devices, kiln/device.h), and counts how often that actually happened.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "kiln/device.h"

namespace kiln::runtime {

// cached_build for toolchains that hand back the binary as bytes (OpenCL program binaries, PTX):
// the bytes of the entry for `key`, made by `build` when there is none (or always, with rebuild).
std::string cached_bytes(const std::string& device, const std::string& key, bool rebuild,
                         const std::function<std::string()>& build);

// `source` with each line prefixed by its number ("   2 | ..."), for compile errors; after
// `max_lines` lines, "  ...".
std::string numbered_source(const std::string& source, int max_lines = 1 << 30);

// Process-wide counters. The fields are atomic because compiles may run on several threads;
// copying takes a snapshot, e.g. `CompileStats before = compile_stats();`.
struct CompileStats {
  std::atomic<int64_t> compiled{0};    // real compiler invocations that succeeded
  std::atomic<int64_t> cache_hits{0};  // compiles answered from the disk cache

  CompileStats() = default;
  CompileStats(const CompileStats& other) : compiled(other.compiled.load()), cache_hits(other.cache_hits.load()) {}
  CompileStats& operator=(const CompileStats& other) {
    compiled = other.compiled.load();
    cache_hits = other.cache_hits.load();
    return *this;
  }
};
CompileStats& compile_stats();

}  // namespace kiln::runtime
