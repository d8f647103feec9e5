// PROFILE=1: the demo program (run as a child, since PROFILE is read once per process) writes a
// Chrome/Perfetto trace at exit; its events are well formed, cover every stage, include the
// thread pool's workers, and nest properly on each thread.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "subprocess.h"

using nlohmann::json;

namespace {

json run_demo_with_profile(const std::string& path) {
  std::filesystem::remove(path);
  kt::Subprocess demo(KILN_VIZ_DEMO, {{"PROFILE", "1"}, {"PROFILE_PATH", path}});
  std::string err = demo.read_until("PROFILE: wrote", 120);
  EXPECT_EQ(demo.wait(), 0) << err;
  EXPECT_NE(err.find("PROFILE: wrote " + path), std::string::npos) << err;
  std::ifstream in(path);
  return json::parse(in);
}

}  // namespace

TEST(Profile, TheDemoWritesAWellFormedChromeTrace) {
  const std::string path = (std::filesystem::temp_directory_path() / "kiln_test_profile.json").string();
  json trace = run_demo_with_profile(path);
  ASSERT_TRUE(trace.contains("traceEvents"));
  const json& events = trace["traceEvents"];

  std::map<int, std::string> thread_names;
  std::set<std::string> categories;
  std::set<int> task_threads;
  std::map<int, std::vector<std::pair<double, double>>> spans;  // tid -> (start, end)
  for (const json& e : events) {
    for (const char* key : {"name", "ph", "pid", "tid"}) ASSERT_TRUE(e.contains(key)) << key << " missing: " << e;
    if (e["ph"] == "M") {
      if (e["name"] == "thread_name") thread_names[e["tid"]] = e["args"]["name"];
      continue;
    }
    ASSERT_EQ(e["ph"], "X") << e;
    ASSERT_TRUE(e.contains("ts") && e.contains("dur") && e.contains("cat")) << e;
    EXPECT_GE(e["ts"].get<double>(), 0) << e;
    EXPECT_GE(e["dur"].get<double>(), 0) << e;
    categories.insert(e["cat"]);
    if (e["cat"] == "task") task_threads.insert(e["tid"].get<int>());
    double ts = e["ts"];
    spans[e["tid"]].push_back({ts, ts + e["dur"].get<double>()});
  }
  for (const char* cat : {"schedule", "codegen", "compile", "copy", "launch", "task"})
    EXPECT_TRUE(categories.count(cat)) << "no " << cat << " event";
  // The pool's workers are in the trace (given more than one core). Whether one of them ran a task
  // depends on the OS waking it before the main thread took every task, so that is only reported.
  EXPECT_EQ(thread_names[0], "main");
  if (std::thread::hardware_concurrency() > 1)
    EXPECT_TRUE(std::any_of(thread_names.begin(), thread_names.end(), [](const auto& t) { return t.second == "kiln worker"; }));
  bool worker_ran = std::any_of(task_threads.begin(), task_threads.end(), [&](int t) { return thread_names[t] == "kiln worker"; });
  if (!worker_ran) std::printf("note: every task ran on the main thread this time\n");

  // Scopes on one thread nest: sorted by start (longer first on ties), each event ends before the
  // enclosing one it starts in.
  constexpr double kSlack = 1e-3;  // µs: timestamps are printed as decimals
  for (auto& [tid, list] : spans) {
    std::sort(list.begin(), list.end(), [](auto a, auto b) { return a.first != b.first ? a.first < b.first : a.second > b.second; });
    std::vector<std::pair<double, double>> open;
    for (const auto& span : list) {
      while (!open.empty() && open.back().second <= span.first + kSlack) open.pop_back();
      if (!open.empty()) EXPECT_LE(span.second, open.back().second + kSlack) << "thread " << tid << " overlaps";
      open.push_back(span);
    }
  }
  std::filesystem::remove(path);
}
