// Exits 0 when kiln registers the device named by argv[1] on this machine, else 77 (ctest's
// "skipped"), printing the devices it has: the DEV=CL test entries run only where OpenCL does.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/device.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: has_device NAME\n");
    return 2;
  }
  std::vector<std::string> names = kiln::runtime::device_names();
  if (std::find(names.begin(), names.end(), argv[1]) != names.end()) return 0;
  std::printf("skipped: no %s device here; devices:", argv[1]);
  for (const std::string& n : names) std::printf(" %s", n.c_str());
  std::printf("\n");
  return 77;
}
