// Built by tests/install_consumer.sh with nothing but `pkg-config --cflags --libs kiln` against an
// installed kiln: a fused expression and a reduction on the default device, against naive loops
// in double. Exits 1 on a mismatch.
#include <kiln/kiln.h>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  using kiln::Tensor;
  std::vector<float> a(6), b(6);
  for (int i = 0; i < 6; i++) a[i] = 0.5f * float(i) - 1.0f, b[i] = float(i % 4) - 1.5f;
  Tensor ta = Tensor::from_vector(a, {2, 3}), tb = Tensor::from_vector(b, {2, 3});
  std::vector<float> fused = (ta * tb + 1.0f).relu().to_vector<float>();
  std::vector<float> row_sums = ta.sum({1}).to_vector<float>();
  int bad = 0;
  for (int i = 0; i < 6; i++) bad += std::fabs(fused[i] - std::max(0.0, double(a[i]) * b[i] + 1)) > 1e-6;
  for (int r = 0; r < 2; r++) bad += std::fabs(row_sums[r] - (double(a[3 * r]) + a[3 * r + 1] + a[3 * r + 2])) > 1e-6;
  std::printf("pkg-config consumer on %s: %s\n", ta.device().c_str(), bad ? "MISMATCH" : "ok");
  return bad ? 1 : 0;
}
