// A job in which rank 1 fails while the other ranks wait for it in a collective, for
// tests/distributed_abort.sh:
//   distributed_fail throw   rank 1 throws a kiln::Error that nothing catches
//   distributed_fail exit    rank 1 reports an error and returns 1 from main
#include <cstdio>
#include <string>

#include "kiln/distributed.h"
#include "kiln/error.h"

int main(int argc, char** argv) {
  kiln::distributed::init();
  const std::string mode = argc > 1 ? argv[1] : "throw";
  if (kiln::distributed::rank() == 1) {
    if (mode == "throw") throw kiln::Error("rank 1 failed on purpose");
    std::fprintf(stderr, "distributed_fail: error: rank 1 failed on purpose\n");
    return 1;
  }
  kiln::distributed::all_reduce(kiln::Tensor::ones({4})).realize();  // waits for rank 1, which never comes
  return 0;
}
