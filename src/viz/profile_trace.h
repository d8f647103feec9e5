#pragma once
// PROFILE=1's output: the recorded scopes (support/profile.h) as a Chrome/Perfetto trace, one
// complete ("X") event per scope on its thread, timestamps and durations in microseconds.
// Open it in chrome://tracing or ui.perfetto.dev.
#include <string>

#include "support/profile.h"

namespace kiln::viz {

std::string profile_trace_json(const profile::Recording& rec);
// PROFILE_PATH, else kiln_profile.json in the system's temporary directory.
std::string profile_trace_path();
// Writes everything recorded so far to profile_trace_path() and returns that path.
std::string write_profile_trace();

}  // namespace kiln::viz
