#include "viz/profile_trace.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/atomic_file.h"
#include "support/env.h"

namespace kiln::viz {

std::string profile_trace_json(const profile::Recording& rec) {
  using nlohmann::json;
  const int pid = static_cast<int>(getpid());
  json events = json::array();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", "kiln"}}}});
  for (size_t t = 0; t < rec.thread_names.size(); t++)
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", t}, {"args", {{"name", rec.thread_names[t]}}}});
  int64_t origin = rec.events.empty() ? 0 : rec.events[0].start_ns;
  for (const profile::Event& e : rec.events) origin = std::min(origin, e.start_ns);
  for (const profile::Event& e : rec.events) {
    json ev{{"name", e.name}, {"cat", e.category}, {"ph", "X"},
            {"ts", static_cast<double>(e.start_ns - origin) / 1e3}, {"dur", static_cast<double>(e.dur_ns) / 1e3},
            {"pid", pid}, {"tid", e.thread}};
    if (e.bytes >= 0) ev["args"] = {{"bytes", e.bytes}};
    events.push_back(std::move(ev));
  }
  return json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump();
}

std::string profile_trace_path() {
  std::string path = env::get_string("PROFILE_PATH");
  if (!path.empty()) return path;
  return (std::filesystem::temp_directory_path() / "kiln_profile.json").string();
}

std::string write_profile_trace() {
  std::string path = profile_trace_path();
  std::string text = profile_trace_json(profile::snapshot());
  AtomicFile f(path);
  f.write(text.data(), text.size());
  f.commit();
  return path;
}

}  // namespace kiln::viz
