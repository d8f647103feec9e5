#pragma once
// Turns kernel source into a device binary, and counts how often that actually happened.
#include <atomic>
#include <cstdint>
#include <string>

namespace kiln::runtime {

struct Compiler {
  virtual ~Compiler();
  // Identifies the toolchain (for logs and cache keys).
  virtual std::string name() const = 0;
  // Returns a path or blob identifying the binary, to pass to Device::load.
  // Throws kiln::Error with the compiler's diagnostics when the source does not compile.
  virtual std::string compile(const std::string& source) = 0;
  // Like compile, but never answered from the disk cache: builds `source` again and replaces its
  // entry. For a cached binary the device could not load.
  virtual std::string recompile(const std::string& source) = 0;
};

// `source` with each line prefixed by its number ("   2 | ..."), for compile errors.
std::string numbered_source(const std::string& source);

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
