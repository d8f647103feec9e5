#pragma once
// The VIZ page's data, as JSON text: what the server answers on /api/... (see server.cpp).
#include <optional>
#include <string>

namespace kiln::viz {

// Every recorded rewrite and kernel, grouped by context in the order they first appeared.
std::string traces_json();
// One rewrite: its nodes, the root of its graph before and after each step, each step's rule.
// nullopt when there is no trace `id`.
std::optional<std::string> trace_json(size_t id);
// Every generated kernel's source.
std::string kernels_json();
// Every schedule run: its launches in order, with buffers and times.
std::string schedules_json();

}  // namespace kiln::viz
