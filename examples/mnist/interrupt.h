#pragma once
// Ctrl-C during training: the first SIGINT only asks the training loop to stop at the next step
// boundary (where the model and the optimizer are consistent) and save a checkpoint; the handler
// then resets itself, so a second Ctrl-C ends the program at once, as it would without one.
#include <signal.h>
#include <unistd.h>

#include <csignal>

namespace mnist {

namespace detail {
inline volatile std::sig_atomic_t g_interrupted = 0;
inline void on_interrupt(int) {
  g_interrupted = 1;
  static constexpr char kSaying[] =
      "\ninterrupted: saving a checkpoint after the current step (Ctrl-C again quits without saving)\n";
  (void)!write(STDERR_FILENO, kSaying, sizeof kSaying - 1);  // write() is safe in a signal handler; printf is not
}
}  // namespace detail

inline void catch_interrupt() {
  struct sigaction action {};
  action.sa_handler = detail::on_interrupt;
  // SA_RESTART: system calls the signal lands in (reading a compiler's output, ...) carry on.
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
}

inline bool interrupted() { return detail::g_interrupted != 0; }

}  // namespace mnist
