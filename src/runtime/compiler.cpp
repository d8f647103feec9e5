#include "runtime/compiler.h"

namespace kiln::runtime {

Compiler::~Compiler() = default;

CompileStats& compile_stats() {
  static CompileStats stats;
  return stats;
}

}  // namespace kiln::runtime
