// The program the VIZ and PROFILE tests run: one SGD step of a tiny two-layer network, so the
// gradient, the scheduler and codegen all leave traces and several kernels run on the thread pool.
// With VIZ=1 it serves the page at exit (until killed); with PROFILE=1 it writes the trace.
#include <cstdio>

#include "kiln/kiln.h"

using namespace kiln;

int main() {
  // big enough that each kernel's work is split over the thread pool's workers
  Tensor x = Tensor::randn({512, 256});
  Tensor w1 = Tensor::randn({256, 512}).requires_grad_(), w2 = Tensor::randn({512, 10}).requires_grad_();
  Tensor loss = x.matmul(w1).relu().matmul(w2).square().mean();
  loss.backward();
  Tensor new_w1 = w1 - *w1.grad() * 0.01f, new_w2 = w2 - *w2.grad() * 0.01f;
  Tensor::realize({loss, new_w1, new_w2});
  printf("loss %.4f\n", loss.item<float>());
  fflush(stdout);
}
