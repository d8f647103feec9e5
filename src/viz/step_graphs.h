#pragma once
// The graph after each step of a recorded rewrite. A trace keeps only the input graph and each
// replacement; the graph after step k is the input with the replacements of steps 1..k applied,
// rebuilt bottom-up the way graph_rewrite built it (nodes are hash-consed here too, by content, so
// a rebuilt node that graph_rewrite had seen gets that node's id).
#include <vector>

#include "uop/rewrite_trace.h"

namespace kiln::viz {

// The root of the graph before step 1 and after each step (size steps + 1). Nodes made while
// rebuilding are appended to `nodes`, which starts as the trace's own.
std::vector<int> step_roots(const trace::Trace& t, std::vector<trace::Node>& nodes);

}  // namespace kiln::viz
