#pragma once
// Timing and reporting helpers shared by the benchmarks: best-of-N kernel and wall times, work
// split over all cores (for hand-written references), and a figures table written both as
// `key value` lines and as one appended JSON object per run.
#include <kiln/kiln.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Best of `reps` kernel times of building and realizing `make()`. The warm-up realize keeps
// compiling out of the figure; kernel time (GlobalCounters) keeps scheduling out of it too.
template <class F>
double best_kernel_seconds(F make, int reps) {
  make().realize();
  double best = 1e30;
  for (int i = 0; i < reps; i++) {
    kiln::GlobalCounters::reset();
    make().realize();
    best = std::min(best, kiln::GlobalCounters::time_sum_s);
  }
  return best;
}

// Best of `reps` wall times of `run()`, after one untimed warm-up call (page faults, thread pools).
template <class F>
double best_wall_seconds(F run, int reps) {
  run();
  double best = 1e30;
  for (int i = 0; i < reps; i++) {
    auto t0 = Clock::now();
    run();
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

// Median of `reps` wall times of `run()`, after two untimed warm-up calls (compiles, allocations):
// steadier than the best where another process may share the device.
template <class F>
double median_wall_seconds(F run, int reps) {
  run();
  run();
  std::vector<double> times;
  for (int i = 0; i < reps; i++) {
    auto t0 = Clock::now();
    run();
    times.push_back(seconds_since(t0));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Runs body(lo, hi) on every core, each thread over its contiguous share of [0, n), as kiln's
// CPU kernels split their work.
template <class F>
void parallel_for(size_t n, F body) {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; t++)
    workers.emplace_back([&, t] { body(n * t / threads, n * (t + 1) / threads); });
  for (auto& w : workers) w.join();
}

// Named figures in the order they were added, and notes (one word each) about how they were made.
class Figures {
 public:
  void add(std::string key, double value) { items_.emplace_back(std::move(key), value); }
  void note(std::string key, std::string word) { items_.emplace_back(std::move(key), std::move(word)); }

  // `key value` per line, replacing the file (later steps of bench/run.sh append to it).
  void write_text(const std::string& path) const {
    std::ofstream out(path);
    for (auto& [k, v] : items_) std::visit([&](const auto& value) { out << k << ' ' << value << '\n'; }, v);
  }

  // One JSON object per run appended to `path`, so the file keeps the history of runs.
  void append_json(const std::string& path, const std::string& program) const {
    nlohmann::ordered_json j;  // keeps the time first and the figures in order
    std::time_t now = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    j["time"] = stamp;
    j["program"] = program;
    for (auto& [k, v] : items_) std::visit([&](const auto& value) { j[k] = value; }, v);
    std::ofstream(path, std::ios::app) << j.dump() << '\n';
  }

 private:
  std::vector<std::pair<std::string, std::variant<double, std::string>>> items_;
};

}  // namespace bench
