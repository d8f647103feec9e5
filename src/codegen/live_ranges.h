#pragma once
// The loops a node lives in: the RANGEs it depends on that no END between here and them closes.
#include <vector>

#include "kiln/ir/uop.h"

namespace kiln::codegen {

// Open ranges of `u`, ordered by range id.
std::vector<UOpRef> live_ranges(const UOpRef& u);

}  // namespace kiln::codegen
