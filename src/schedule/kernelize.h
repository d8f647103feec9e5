#pragma once
// The scheduler's two halves meet here: rangeify decides which nodes become buffers and with which
// loop ranges every node is read (a Plan); kernelize turns the Plan into kernel ASTs.
#include <map>
#include <unordered_map>
#include <vector>

#include "kiln/ir/uop.h"
#include "schedule/indexing.h"
#include "schedule/schedule.h"

namespace kiln::schedule {

// Identifies an Access by its nodes (they are interned, so pointers identify them).
using AccessKey = std::vector<const UOp*>;
AccessKey key_of(const Access& a);

struct Plan {
  std::vector<const UOp*> realized;                    // nodes that get a buffer, sources first
  std::unordered_map<const UOp*, Access> own;          // each realized node's own output ranges
  // The ranges a REDUCE loops over when read through a given access.
  std::map<std::pair<const UOp*, AccessKey>, std::vector<UOpRef>> reduce_ranges;
  UOpRef keep_alive;                                   // holds the graph the pointers point into
  std::vector<Access> keep_accesses;                   // and the index expressions of the keys
};

// `rows_in_kernel`: reductions over short rows broadcast back may stay in their consumer's kernel
// (on devices whose kernels loop over rows; a work-item per output would recompute them).
Plan plan_kernels(const std::vector<UOpRef>& roots, bool rows_in_kernel);

// The realized nodes grouped into kernels, in the order the kernels run: mostly one node each;
// same-shaped elementwise nodes reading each other as is share one (multi_output.cpp).
std::vector<std::vector<const UOp*>> kernel_groups(const Plan& plan);

}  // namespace kiln::schedule
