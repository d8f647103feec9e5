#include "runtime/compiler.h"

#include <cstdio>
#include <sstream>

namespace kiln::runtime {

Compiler::~Compiler() = default;

std::string numbered_source(const std::string& source, int max_lines) {
  std::istringstream in(source);
  std::string out;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    if (++n > max_lines) {
      out += "  ...\n";
      break;
    }
    char num[16];
    std::snprintf(num, sizeof num, "%4d | ", n);
    out += num + line + "\n";
  }
  return out;
}

CompileStats& compile_stats() {
  static CompileStats stats;
  return stats;
}

}  // namespace kiln::runtime
