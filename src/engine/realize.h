#pragma once
// The engine pairs the stages: schedule → codegen → renderer → runtime. It compiles each kernel
// once per process (and the runtime's disk cache makes that once per machine), then launches.
#include <vector>

#include "kiln/ir/uop.h"
#include "schedule/schedule.h"

namespace kiln::engine {

// Schedules `roots` (tensor-graph nodes), runs the kernels, and returns what each realized node
// became (views of the new buffers).
schedule::Schedule realize(const std::vector<UOpRef>& roots);

// Runs a LINEAR of CALLs: allocates their buffers, compiles (cached) and launches each kernel.
void run_linear(const UOpRef& linear);

}  // namespace kiln::engine
