// A tour of kiln: lazy tensors, the schedule they become, and the results.
// Run with DEBUG=2 to see one line per kernel, DEBUG=4 for the generated C.
#include <kiln/kiln.h>

#include <cstdio>

using namespace kiln;

static void print(const char* label, const Tensor& t) {
  std::vector<float> v = t.to_vector<float>();
  std::printf("%-22s", label);
  for (size_t i = 0; i < v.size() && i < 8; i++) std::printf(" %9.4f", v[i]);
  std::printf(v.size() > 8 ? " ...\n" : "\n");
}

int main() {
  Tensor::manual_seed(0);
  Tensor a = Tensor::randn({4, 1});
  Tensor b = Tensor::randn({1, 8});
  Tensor c = Tensor::randn({4, 8});

  // Nothing has run yet: this is a graph. schedule() shows the kernels realize() would run.
  Tensor y = (a * b + c).relu() * 2.0f - 1.0f;
  std::vector<ScheduleItem> plan = y.schedule();
  std::printf("(a*b+c).relu()*2-1 with broadcasting -> %zu kernel(s): %s\n", plan.size(), plan[0].name.c_str());
  print("result", y);

  // Elementwise -> reduce -> elementwise fuses into one kernel too.
  Tensor z = ((c * 2.0f).sum({1}) + 1.0f).exp();
  std::printf("((c*2).sum(1)+1).exp() -> %zu kernel(s)\n", z.schedule().size());
  print("result", z);

  // Softmax needs the max and the sum before it can broadcast them back: three kernels.
  Tensor s = c.softmax(1);
  std::printf("softmax -> %zu kernels\n", s.schedule().size());
  print("softmax row 0", s.shrink({{0, 1}, {0, 8}}));

  // Movement ops are views: a reshape of a realized buffer needs no kernel.
  c.realize();
  std::printf("reshape of a realized tensor -> %zu kernels\n", c.reshape({8, 4}).schedule().size());

  Tensor m = c.matmul(c.transpose());
  print("c @ c.T (row 0)", m.shrink({{0, 1}, {0, 4}}));
  std::printf("argmax of each row of c: ");
  for (int32_t i : c.argmax(1).to_vector<int32_t>()) std::printf("%d ", i);
  std::printf("\n");
  return 0;
}
