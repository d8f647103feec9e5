#pragma once
// The CPU device's compiler: C source -> shared object via the system C compiler, with a disk
// cache (runtime/disk_cache.h) so a kernel compiled once (in any process) is never compiled again.
#include <string>

#include "runtime/compiler.h"

namespace kiln::runtime {

// Uses env CC if set (a program name or path, optionally followed by extra compile flags), else
// clang, else gcc from PATH; links with ld from PATH. Safe to call from several threads and
// processes at once.
class CcCompiler final : public Compiler {
 public:
  // The C compiler's resolved path (plus the extra flags from CC, if any).
  std::string name() const override;
  // Both return the path of the shared object: its cache entry.
  std::string compile(const std::string& source) override;
  std::string recompile(const std::string& source) override;

 private:
  std::string build(const std::string& source, bool reuse_entry);
};

}  // namespace kiln::runtime
