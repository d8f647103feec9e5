#pragma once
// Where each node of a tensor graph lives. A BUFFER lives on its device and a COPY on the device it
// copies to; any other node lives where its inputs do. Nodes that read no buffer (constants, arange)
// have no device of their own: they are computed where their reader runs.
#include <string>
#include <unordered_map>

#include "kiln/ir/uop.h"

namespace kiln::schedule {

// The device of `u`, or `fallback` when it reads no buffer.
std::string device_of(const UOp* u, const std::string& fallback);

// The device of every node under `sink` (a SINK of tensor-graph roots). Nodes that read no buffer
// take the device of a node that reads them, else `fallback`. A node whose inputs live on different
// devices is a kiln::Error naming the op and both devices: only a COPY moves data between devices.
std::unordered_map<const UOp*, std::string> assign_devices(const UOpRef& sink, const std::string& fallback);

}  // namespace kiln::schedule
