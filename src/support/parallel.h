#pragma once
// Runs independent, slow, blocking jobs (compiler processes) on short-lived threads, one per
// hardware thread. Kernel launches use the persistent ThreadPool instead.
#include <cstddef>
#include <functional>

namespace kiln::support {

// fn(0) ... fn(n - 1), each once, on up to hardware_concurrency threads (the caller among them);
// returns when all have finished. fn must not throw: jobs keep their own errors.
void parallel_for(size_t n, const std::function<void(size_t)>& fn);

}  // namespace kiln::support
