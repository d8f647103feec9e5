#pragma once
// CUDA C++ -> PTX with NVRTC (libnvrtc, opened at run time), kept in a disk cache keyed by source,
// NVRTC version and options. The driver turns the PTX into the GPU's code when it loads it.
#include <string>
#include <vector>

#include "runtime/compiler.h"

namespace kiln::runtime::cuda {

// Whether libnvrtc loads on this machine (the CUDA compile checks skip without it).
bool nvrtc_available();

// The virtual architecture PTX is made for: env CUDA_ARCH (e.g. "compute_86" or "sm_86"), else
// `fallback`.
std::string target_arch(const std::string& fallback);

class CudaCompiler final : public Compiler {
 public:
  // For `arch`, e.g. "compute_80". Throws kiln::Error when libnvrtc cannot be loaded.
  explicit CudaCompiler(std::string arch);
  std::string name() const override;
  // Returns the PTX text. A failed compile throws kiln::Error with NVRTC's log and the numbered
  // source.
  std::string compile(const std::string& source) override;
  std::string recompile(const std::string& source) override;

 private:
  // What identifies a binary in the disk cache: the source and everything the build depends on.
  std::string cache_key(const std::string& source) const;
  std::string build(const std::string& source);

  std::string version_;                // NVRTC's, e.g. "13.0"
  std::vector<std::string> options_;
};

}  // namespace kiln::runtime::cuda
