#pragma once
// PROFILE=1: timed scopes (schedule, codegen, compile, copies, kernel launches, thread-pool tasks)
// recorded per thread, written at exit as a Chrome/Perfetto trace by src/viz/profile_trace.cpp.
// Off (the default), a scope costs one predictable branch and allocates nothing.
#include <atomic>
#include <concepts>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::profile {

namespace detail {
extern std::atomic<int8_t> state;  // -1 not read yet, 0 off, 1 on
bool read_setting();               // reads PROFILE once, sets `state`
}  // namespace detail

// Whether scopes are recorded: PROFILE >= 1, read once.
inline bool enabled() {
  int8_t s = detail::state.load(std::memory_order_relaxed);
  if (s == 0) [[likely]] return false;
  return s > 0 || detail::read_setting();
}

struct Event {
  std::string name;      // "r_16_16", "copyin", ...
  const char* category;  // "schedule", "codegen", "compile", "copy", "launch", "task"
  int64_t bytes;         // memory the event moved or touched, -1 when not known
  int64_t start_ns, dur_ns;  // steady clock
  int thread;                // small per-process thread number, 0 for the first thread seen
};

// Times the enclosing scope on this thread. Pass a function to build the name only when on.
class Scope {
 public:
  Scope(const char* category, std::string_view name, int64_t bytes = -1) {
    if (enabled()) [[unlikely]] begin(category, std::string(name), bytes);
  }
  template <std::invocable F>
  Scope(const char* category, F&& make_name, int64_t bytes = -1) {
    if (enabled()) [[unlikely]] begin(category, std::string(make_name()), bytes);
  }
  ~Scope() {
    if (category_) end();
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  void begin(const char* category, std::string name, int64_t bytes);
  void end();
  const char* category_ = nullptr;
  std::string name_;
  int64_t bytes_ = -1, start_ns_ = 0;
};

// Names this thread in the trace ("kiln worker 1"); the first thread seen is "main".
void name_thread(std::string name);

struct Recording {
  std::vector<Event> events;              // in the order they ended
  std::vector<std::string> thread_names;  // by Event::thread
};
// A copy of everything recorded so far.
Recording snapshot();

}  // namespace kiln::profile
