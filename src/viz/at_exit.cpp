#include "viz/at_exit.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "kiln/error.h"
#include "support/env.h"
#include "support/profile.h"
#include "viz/profile_trace.h"
#include "viz/server.h"

namespace kiln::viz {
namespace {

// VIZ from the environment only: tests that turn recording on themselves must not serve at exit.
bool serve_at_exit() { return env::get_int("VIZ", 0) >= 1; }

void on_exit() {
  // exceptions cannot leave an exit handler: report them and let the process end
  try {
    if (profile::enabled()) fprintf(stderr, "PROFILE: wrote %s\n", write_profile_trace().c_str());
  } catch (const std::exception& e) {
    fprintf(stderr, "PROFILE: %s\n", e.what());
  }
  try {
    if (serve_at_exit()) serve();
  } catch (const std::exception& e) {
    fprintf(stderr, "%s\n", e.what());
  }
}

}  // namespace

void install_exit_hook() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (profile::enabled() || serve_at_exit()) std::atexit(on_exit);
  });
}

}  // namespace kiln::viz
