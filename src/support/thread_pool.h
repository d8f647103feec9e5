#pragma once
// A fixed set of persistent worker threads that run a batch of indexed tasks and wait for all of
// them. CPU kernels use it to run one call per core_id; the calling thread works on the batch too.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

namespace kiln::runtime {

class ThreadPool {
 public:
  // n_threads counts the calling thread, so n_threads - 1 workers are started (values < 1 mean 1).
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Runs fn(0) ... fn(n_tasks - 1), each exactly once, and returns when all have finished.
  // If a task throws, tasks not yet started are skipped and the first exception is rethrown here.
  // One batch runs at a time: calls from several threads are serialized, and a call made from
  // inside a task of this pool runs its tasks inline (instead of deadlocking). With PROFILE=1 each
  // task is timed on the thread that ran it, as `name`.
  void run(int n_tasks, const std::function<void(int task)>& fn, std::string_view name = "task");

  // Number of threads that work on a batch, the caller included.
  int size() const;

  // The process-wide pool, one thread per hardware thread, started on first use.
  static ThreadPool& global();

 private:
  struct Batch;
  void worker_loop();
  void work_on(Batch& batch);

  std::vector<std::thread> workers_;
  std::mutex run_mu_;  // serializes run() callers
  std::mutex mu_;      // guards everything below
  std::condition_variable work_cv_;  // workers wait here for a batch (or stop)
  std::condition_variable done_cv_;  // run() waits here for workers to leave its batch
  Batch* batch_ = nullptr;           // the batch being run, null when idle
  // Written under mu_; atomic so that workers polling before they sleep can read them without it.
  std::atomic<uint64_t> generation_{0};  // bumped per batch so a worker joins each batch at most once
  std::atomic<bool> stop_{false};
};

}  // namespace kiln::runtime
