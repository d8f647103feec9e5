#include "runtime/builtin_devices.h"

namespace kiln::runtime {

void register_builtin_devices() {
  register_cpu_device();
#ifdef KILN_OPENCL
  register_opencl_device();
#endif
}

}  // namespace kiln::runtime
