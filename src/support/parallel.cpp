#include "support/parallel.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "support/profile.h"

namespace kiln::support {

void parallel_for(size_t n, const std::function<void(size_t)>& fn) {
  const size_t workers = std::min<size_t>(n, std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < n;) fn(i);
  };
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; w++)
    threads.emplace_back([&] {
      profile::name_thread("kiln compile");
      work();
    });
  work();
  for (std::thread& t : threads) t.join();
}

}  // namespace kiln::support
