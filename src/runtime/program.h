#pragma once
// A compiled kernel loaded on a device, ready to launch.
#include <cstdint>
#include <vector>

namespace kiln::runtime {

struct Program {
  virtual ~Program() = default;
  // Runs the kernel over `global_size` work items with the given buffers and integer arguments.
  // With wait == true, returns after the kernel finished; returns the seconds it took (devices
  // that cannot time an unwaited launch return 0 for it).
  virtual double launch(const std::vector<void*>& bufs, const std::vector<int64_t>& vals,
                        int64_t global_size, bool wait) = 0;
};

}  // namespace kiln::runtime
