#include "support/profile.h"

#include <chrono>
#include <mutex>

#include "support/env.h"

namespace kiln::profile {

std::atomic<int8_t> detail::state{-1};

bool detail::read_setting() {
  int8_t on = env::get_int("PROFILE", 0) >= 1 ? 1 : 0;
  int8_t unread = -1;
  state.compare_exchange_strong(unread, on);
  return state.load() > 0;
}

namespace {

struct Store {
  std::mutex mu;
  Recording rec;
};
Store& profile_store() {
  static Store* s = new Store();  // never destroyed: written out while the process exits
  return *s;
}

thread_local int t_thread = -1;

// This thread's number, given on first use (the first thread to record is the program's main one).
int this_thread() {
  if (t_thread < 0) {
    Store& s = profile_store();
    std::lock_guard lock(s.mu);
    t_thread = static_cast<int>(s.rec.thread_names.size());
    s.rec.thread_names.push_back(t_thread == 0 ? "main" : "thread " + std::to_string(t_thread));
  }
  return t_thread;
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void Scope::begin(const char* category, std::string name, int64_t bytes) {
  category_ = category;
  name_ = std::move(name);
  bytes_ = bytes;
  this_thread();  // numbered before the clock starts: the first scope does not time the lock
  start_ns_ = now_ns();
}

void Scope::end() {
  int64_t end_ns = now_ns();
  Store& s = profile_store();
  std::lock_guard lock(s.mu);
  s.rec.events.push_back({std::move(name_), category_, bytes_, start_ns_, end_ns - start_ns_, t_thread});
}

void name_thread(std::string name) {
  if (!enabled()) return;
  int t = this_thread();
  Store& s = profile_store();
  std::lock_guard lock(s.mu);
  s.rec.thread_names[t] = std::move(name);
}

Recording snapshot() {
  Store& s = profile_store();
  std::lock_guard lock(s.mu);
  return s.rec;
}

}  // namespace kiln::profile
