#include "runtime/builtin_devices.h"

namespace kiln::runtime {

void register_builtin_devices() {
  register_cpu_device();
#ifdef KILN_OPENCL
  register_opencl_device();
#endif
  register_cuda_device();
}

}  // namespace kiln::runtime
