#pragma once
// The CPU device's compiler: C source -> shared object via the system C compiler, with a disk
// cache so a kernel compiled once (in any process) is never compiled again.
#include <string>

#include "runtime/compiler.h"

namespace kiln::runtime {

// Uses env CC if set (a program name or path, optionally followed by extra flags), else clang,
// else gcc from PATH. Binaries are cached in $KILN_CACHE/cpu, else $XDG_CACHE_HOME/kiln/cpu,
// else $HOME/.cache/kiln/cpu. Safe to call from several threads and processes at once.
class CcCompiler final : public Compiler {
 public:
  // The C compiler's resolved path (plus the extra flags from CC, if any).
  std::string name() const override;
  // Returns the path of the shared object.
  std::string compile(const std::string& source) override;
};

}  // namespace kiln::runtime
