#include "support/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>

#include "support/profile.h"

namespace kiln::runtime {

// One run() call. It lives on the caller's stack; run() returns only after every worker that
// joined it has left (active_workers == 0), so workers never touch a dead batch.
struct ThreadPool::Batch {
  const std::function<void(int)>* fn = nullptr;
  std::string_view name;
  int64_t n_tasks = 0;
  std::atomic<int64_t> next{0};  // next unclaimed task; 64-bit so overshooting never wraps
  std::atomic<bool> failed{false};
  std::exception_ptr error;  // first exception; guarded by mu_
  std::atomic<int> active_workers{0};  // changed under mu_; read without it while spinning
};

namespace {
// A thread that would sleep polls this long first. Waking a sleeping thread takes tens of
// microseconds, on a VM whose idle vCPU the host has halted sometimes more than a small kernel's
// whole share: the caller then ran every task itself (matmul 256 at one core's speed in about
// half the runs). Back-to-back kernels find the workers still polling, as OpenMP's and
// OpenBLAS's threads do.
constexpr auto kSpin = std::chrono::microseconds(200);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();  // lets the core's other hyperthread run, and saves power while polling
#endif
}

// Polls `done` until it holds or kSpin passes; whether it held.
template <class F>
bool spin_until(F done) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  while (!done()) {
    for (int i = 0; i < 64; i++) cpu_relax();
    if (std::chrono::steady_clock::now() > deadline) return done();
  }
  return true;
}

// The pool whose tasks this thread is executing, to run nested run() calls inline.
thread_local const ThreadPool* t_current_pool = nullptr;

struct CurrentPoolScope {
  const ThreadPool* saved;
  explicit CurrentPoolScope(const ThreadPool* pool) : saved(t_current_pool) { t_current_pool = pool; }
  ~CurrentPoolScope() { t_current_pool = saved; }
};
}  // namespace

ThreadPool::ThreadPool(int n_threads) {
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

int ThreadPool::size() const { return static_cast<int>(workers_.size()) + 1; }

ThreadPool& ThreadPool::global() {
  static ThreadPool pool(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  return pool;
}

void ThreadPool::run(int n_tasks, const std::function<void(int task)>& fn, std::string_view name) {
  if (n_tasks <= 0) return;
  // Waking workers costs more than it saves for a single task, and nesting would deadlock.
  if (n_tasks == 1 || workers_.empty() || t_current_pool == this) {
    for (int i = 0; i < n_tasks; ++i) {
      profile::Scope timed("task", name);
      fn(i);
    }
    return;
  }

  std::lock_guard run_lock(run_mu_);
  Batch batch;
  batch.fn = &fn;
  batch.name = name;
  batch.n_tasks = n_tasks;
  {
    std::lock_guard lock(mu_);
    batch_ = &batch;
    ++generation_;
  }
  work_cv_.notify_all();
  {
    CurrentPoolScope scope(this);
    work_on(batch);
  }
  // Every task is claimed now; wait for workers still finishing theirs (a late worker may still
  // join until batch_ is cleared under the lock; the wait below counts it).
  spin_until([&] { return batch.active_workers.load(std::memory_order_acquire) == 0; });
  {
    std::unique_lock lock(mu_);
    batch_ = nullptr;
    done_cv_.wait(lock, [&] { return batch.active_workers == 0; });
  }
  if (batch.error) std::rethrow_exception(batch.error);
}

void ThreadPool::work_on(Batch& batch) {
  for (int64_t i; (i = batch.next.fetch_add(1, std::memory_order_relaxed)) < batch.n_tasks;) {
    if (batch.failed.load(std::memory_order_relaxed)) continue;  // skip the rest after a failure
    try {
      profile::Scope timed("task", batch.name);
      (*batch.fn)(static_cast<int>(i));
    } catch (...) {
      std::lock_guard lock(mu_);
      if (!batch.error) batch.error = std::current_exception();
      batch.failed.store(true, std::memory_order_relaxed);
    }
  }
}

void ThreadPool::worker_loop() {
  CurrentPoolScope scope(this);
  profile::name_thread("kiln worker");
  uint64_t seen_generation = 0;
  while (true) {
    spin_until([&] { return generation_ != seen_generation || stop_; });
    std::unique_lock lock(mu_);
    work_cv_.wait(lock, [&] { return stop_ || generation_ != seen_generation; });
    if (stop_) return;
    seen_generation = generation_;
    Batch* batch = batch_;
    // Woken too late for it (the caller ran every task): poll for the next batch, which
    // back-to-back kernels start within microseconds.
    if (!batch) continue;
    ++batch->active_workers;
    lock.unlock();
    work_on(*batch);
    lock.lock();
    if (--batch->active_workers == 0) done_cv_.notify_one();
  }
}

}  // namespace kiln::runtime
