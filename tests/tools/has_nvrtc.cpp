// Exits 0 when kiln can load NVRTC (libnvrtc) on this machine, else 77 (ctest's "skipped") with
// a message: the CHECK_RENDER=CUDA test entries run only where the CUDA toolkit is installed.
#include <cstdio>

#include "runtime/cuda/cuda_compiler.h"

int main() {
  if (kiln::runtime::cuda::nvrtc_available()) return 0;
  std::printf("skipped: libnvrtc not found (install the CUDA toolkit, e.g. in /usr/local/cuda)\n");
  return 77;
}
