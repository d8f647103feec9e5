#pragma once
// ScheduleItem: one kernel (or copy) that realize() will run — a view of the schedule's CALLs.
#include <string>
#include <vector>

#include "kiln/ir/uop.h"

namespace kiln {

struct ScheduleItem {
  std::string name;            // e.g. "r_16_16" (axes by kind, as tinygrad names kernels)
  UOpRef ast;                  // the kernel: SINK of STOREs over PARAMs
  std::vector<UOpRef> buffers; // BUFFER UOps bound to PARAM 0..n-1 (outputs first)
  std::string str() const;     // name, buffers and the AST, printed
};

}  // namespace kiln
