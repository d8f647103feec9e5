#pragma once
// BEAM search (BEAM=n), as tinygrad's: starting from the kernel without opts and from the
// hand-written rules' choice, each round applies every legal opt (codegen::possible_opts) to each
// of the n fastest kernels so far, compiles the new ones in parallel, times them on scratch buffers
// and keeps the n fastest; it stops when a round gains less than 1%. The winning opts are cached on
// disk by kernel AST, device, toolchain and n, so a second run pays nothing.
#include <cstdint>
#include <memory>
#include <vector>

#include "codegen/codegen.h"
#include "runtime/device.h"

namespace kiln::engine {

// Device memory for one kernel's PARAMs, each sized by the largest index the kernel reaches in it
// (every opt of the kernel stays inside), filled with plausible values of each dtype.
class KernelBuffers {
 public:
  KernelBuffers(const UOpRef& ast, runtime::Device& dev);
  ~KernelBuffers();
  KernelBuffers(const KernelBuffers&) = delete;
  KernelBuffers& operator=(const KernelBuffers&) = delete;

  size_t count() const { return addresses_.size(); }
  size_t bytes(size_t i) const { return bytes_.at(i); }
  DType dtype(size_t i) const { return dtypes_.at(i); }
  void write(size_t i, const void* host);  // bytes(i) bytes
  void read(size_t i, void* host) const;
  const std::vector<void*>& addresses() const { return addresses_; }

 private:
  runtime::Device& dev_;
  std::vector<void*> addresses_;
  std::vector<size_t> bytes_;
  std::vector<DType> dtypes_;
};

// A kernel compiled with chosen opts, ready to launch.
struct Candidate {
  codegen::Program program;
  std::unique_ptr<runtime::Program> runtime;
};
// Codegen with `opts`, the device's compiler, loading; throws kiln::Error if any step fails.
Candidate compile_candidate(const UOpRef& ast, runtime::Device& dev, const codegen::Target& target,
                            const std::vector<codegen::Opt>& opts);
// Launches it on `bufs` once, then `runs` more times unless the first took over `give_up_after`
// seconds; the fastest launch, in seconds.
double time_candidate(const Candidate& c, const KernelBuffers& bufs, int runs, double give_up_after = 1e30);

// The opts BEAM search with `width` finds fastest for `ast` on `dev`.
std::vector<codegen::Opt> beam_search(const UOpRef& ast, runtime::Device& dev, const codegen::Target& target, int width);

struct BeamStats {
  int64_t searches = 0;    // kernels searched
  int64_t cache_hits = 0;  // kernels whose opts came from the disk cache
  int64_t timed = 0;       // candidates compiled and timed
};
BeamStats& beam_stats();

}  // namespace kiln::engine
