#pragma once
// The live progress line on stderr: rewritten in place with \r on a terminal, one line every
// `every` steps otherwise (logs and CI keep a readable history without a line per step).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace mnist {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// 75 -> "1m15s", 4000 -> "1h06m"
inline std::string format_duration(double seconds) {
  auto s = static_cast<int64_t>(std::max(0.0, seconds) + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(s / 3600), static_cast<long long>(s / 60 % 60));
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
  return buf;
}

class Progress {
 public:
  // `steps_to_go`: optimizer steps this process will run (for the ETA).
  Progress(int64_t steps_to_go, int64_t batch_size, int64_t every)
      : tty_(isatty(fileno(stderr)) != 0), steps_to_go_(steps_to_go), batch_size_(batch_size), every_(every) {}

  // Call after each step. `loss` is known only on the steps that read it.
  void step_done(int64_t epoch, int64_t epochs, int64_t step, int64_t steps, std::optional<float> loss) {
    done_++;
    // The first step compiles its kernels (seconds to minutes), so rates are measured from its end.
    if (done_ == 1) first_done_ = Clock::now();
    if (loss) loss_ = loss;
    bool last_of_epoch = step == steps;
    if (!tty_ && step % every_ != 0 && !last_of_epoch && done_ != 1) return;
    double per_step = seconds_per_step();
    char loss_text[32] = "   ...";
    if (loss_) std::snprintf(loss_text, sizeof loss_text, "%6.3f", static_cast<double>(*loss_));
    std::fprintf(stderr, "%sepoch %lld/%lld  step %lld/%lld  loss %s  %7.1f examples/s  ETA %s%s",
                 tty_ ? "\r\033[K" : "", static_cast<long long>(epoch), static_cast<long long>(epochs),
                 static_cast<long long>(step), static_cast<long long>(steps), loss_text,
                 static_cast<double>(batch_size_) / per_step,
                 format_duration(per_step * static_cast<double>(steps_to_go_ - done_)).c_str(), tty_ ? "" : "\n");
    line_open_ = tty_;
  }

  // A line saying what runs now: on a terminal it stays until clear_status() erases it.
  void status(const std::string& text) {
    std::fprintf(stderr, tty_ ? "\r\033[K%s" : "%s\n", text.c_str());
    status_open_ = tty_;
  }
  void clear_status() {
    if (status_open_) std::fprintf(stderr, "\r\033[K");
    status_open_ = false;
  }

  // Ends an in-place progress line, so that other output starts on a line of its own.
  void end_line() {
    if (line_open_) std::fputc('\n', stderr);
    line_open_ = false;
  }

 private:
  double seconds_per_step() const {
    if (done_ <= 1) return seconds_since(start_);
    return seconds_since(first_done_) / static_cast<double>(done_ - 1);
  }

  bool tty_;
  int64_t steps_to_go_, batch_size_, every_;
  int64_t done_ = 0;
  std::optional<float> loss_;
  bool line_open_ = false, status_open_ = false;
  Clock::time_point start_ = Clock::now(), first_done_;
};

}  // namespace mnist
