#pragma once
// OpenCL C source -> the device's program binary (clGetProgramInfo(CL_PROGRAM_BINARIES)), kept in
// a disk cache keyed by source, device name, driver version and build options.
#include <string>

#include "runtime/compiler.h"
#include "runtime/opencl/cl_context.h"

namespace kiln::runtime::cl {

class ClCompiler final : public Compiler {
 public:
  explicit ClCompiler(const Context& ctx);
  std::string name() const override;
  // Returns the binary itself. A failed build throws kiln::Error with the build log and the
  // numbered source.
  std::string compile(const std::string& source) override;
  // Builds again, replacing the cache entry (a cached binary the device would not load).
  std::string recompile(const std::string& source) override;
  // The options binaries are built with (loading one builds it again with the same options).
  const std::string& options() const { return options_; }

 private:
  // What identifies a binary in the disk cache: the source and everything the build depends on.
  std::string cache_key(const std::string& source) const;
  std::string build(const std::string& source);

  const Context& ctx_;
  std::string options_;
};

}  // namespace kiln::runtime::cl
