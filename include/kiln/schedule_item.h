#pragma once
// ScheduleItem: one kernel (or copy) that realize() will run — a view of the schedule's CALLs.
#include <string>
#include <vector>

#include "kiln/ir/uop.h"

namespace kiln {

struct ScheduleItem {
  std::string name;            // e.g. "r_16_16" (axes by kind, as tinygrad names kernels), "copy 4096, CL <- CPU"
  UOpRef ast;                  // a kernel: SINK of STOREs over PARAMs; a copy between devices: COPY
  std::vector<UOpRef> buffers; // a kernel's: bound to PARAM 0..n-1 (outputs first); a copy's: destination, source
  bool is_copy() const { return ast->op == Ops::COPY; }
  std::string str() const;     // name, buffers and the AST (a kernel's), printed
};

}  // namespace kiln
