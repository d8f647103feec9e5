// Winograd convolution (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks"; tinygrad's
// WINO). An m x m output tile of an r x r convolution is AT [(G g GT) * (BT d B)] A, with d the
// (m+r-1)^2 input tile: the per-channel products become one elementwise product per tile position,
// summed over input channels (a matmul per position), between memory-bound transforms.
// For F(4x4, 5x5): 64 multiplies per tile and channel pair instead of 400, which pays for the
// transforms on the MNIST CNN's 5x5 convolution of 32 channels on 24x24 inputs.
//
// Every pass moves along the channels (the SIMD axis): the input is read channels-last, the
// transforms mix one spatial axis at a time (8 multiply-adds per value instead of 64 for both at
// once), and the output is stored channels-last.
#include "tensor/winograd.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>

#include "kiln/error.h"
#include "support/env.h"

namespace kiln::winograd {
namespace {

constexpr int64_t kTile = 4;    // m: outputs per tile side
constexpr int64_t kKernel = 5;  // r
// Below these the transforms outweigh the saved multiplies: per transformed value a matmul over
// channels does 2 x channels FLOPs, the transforms a fixed ~30. (A 3x3 of 64 channels at 56x56
// in F(4, 3) only broke even, so only 5x5 kernels qualify.)
constexpr int64_t kMinChannels = 16;
constexpr int64_t kMinOutput = 2 * kTile;
// The weight gradient's sum over images runs in at most this many chunks (then their sum).
constexpr int64_t kImageChunks = 16;

// Coefficients of prod over `roots` of (x - root), lowest power first.
std::vector<double> poly_from_roots(const std::vector<double>& roots) {
  std::vector<double> p{1};
  for (double root : roots) {
    std::vector<double> q(p.size() + 1, 0);
    for (size_t i = 0; i < p.size(); i++) q[i + 1] += p[i], q[i] -= root * p[i];
    p = q;
  }
  return p;
}

const Matrices& cached_matrices() {
  static const Matrices m = toom_cook(kTile, kKernel);
  return m;
}

// t with axis `axis` (size cols) mixed by c (rows x cols): out[.., o, ..] = sum_i c[o, i] t[.., i, ..].
// The axis keeps its place, so the pass's store follows t's layout.
Tensor mix_axis(const Tensor& t, const Tensor& c, int axis) {
  const int64_t rows = c.shape()[0], cols = c.shape()[1];
  Shape with_out = t.shape();
  with_out.insert(with_out.begin() + axis, 1);
  Shape expanded = with_out, cshape(with_out.size(), 1);
  expanded[static_cast<size_t>(axis)] = rows;
  cshape[static_cast<size_t>(axis)] = rows, cshape[static_cast<size_t>(axis) + 1] = cols;
  return (t.reshape(with_out).expand(expanded) * c.reshape(cshape)).sum({axis + 1});
}

}  // namespace

Matrices toom_cook(int64_t m, int64_t r) {
  const int64_t a = m + r - 1;
  const std::vector<double> all{0, 1, -1, 2, -2, 0.5, -0.5, 3, -3, 1.0 / 3, -1.0 / 3};
  if (a - 1 > static_cast<int64_t>(all.size()))
    throw_error("winograd: F(", m, ", ", r, ") needs ", a - 1, " points, at most ", all.size(), " are known");
  const std::vector<double> pts(all.begin(), all.begin() + (a - 1));
  Matrices mat{m, r, a, std::vector<double>(m * a, 0), std::vector<double>(a * r, 0), std::vector<double>(a * a, 0)};
  // AT evaluates the product polynomial at the points (the last column: its leading coefficient,
  // the point at infinity); G evaluates the filter there, divided by the Lagrange denominators;
  // BT's rows are the Lagrange numerators (and the whole node polynomial for infinity).
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < a - 1; j++) mat.at[i * a + j] = std::pow(pts[j], static_cast<double>(i));
  mat.at[(m - 1) * a + (a - 1)] = 1;
  for (int64_t j = 0; j < a - 1; j++) {
    double denominator = 1;
    for (int64_t l = 0; l < a - 1; l++)
      if (l != j) denominator *= pts[j] - pts[l];
    for (int64_t k = 0; k < r; k++) mat.g[j * r + k] = std::pow(pts[j], static_cast<double>(k)) / denominator;
  }
  mat.g[(a - 1) * r + (r - 1)] = 1;
  for (int64_t j = 0; j < a; j++) {
    std::vector<double> roots;
    for (int64_t l = 0; l < a - 1; l++)
      if (l != j) roots.push_back(pts[l]);
    const std::vector<double> p = poly_from_roots(roots);
    for (size_t l = 0; l < p.size(); l++) mat.bt[j * a + static_cast<int64_t>(l)] = p[l];
  }
  return mat;
}

bool applies(const Tensor& xp, const Tensor& w, const Shape& stride, const Shape& dilation, int64_t groups) {
  if (env::get_int("WINO", 1) == 0) return false;
  if (w.ndim() != 4 || groups != 1 || xp.dtype() != dtypes::float32 || w.dtype() != dtypes::float32) return false;
  for (size_t i = 0; i < 2; i++)
    if (stride[i] != 1 || dilation[i] != 1 || w.shape()[2 + i] != kKernel) return false;
  const int64_t out_h = xp.shape()[2] - kKernel + 1, out_w = xp.shape()[3] - kKernel + 1;
  return w.shape()[0] >= kMinChannels && w.shape()[1] >= kMinChannels && out_h >= kMinOutput && out_w >= kMinOutput;
}

namespace {

// A convolution's sizes in tiles, and the transforms on its device.
struct Tiling {
  const Matrices& mat;
  int64_t n, out_h, out_w, ty, tx;  // ty x tx tiles; the last row and column may overhang
  std::string device;

  explicit Tiling(const Tensor& xp) : mat(cached_matrices()), n(xp.shape()[0]), device(xp.device()) {
    out_h = xp.shape()[2] - mat.r + 1, out_w = xp.shape()[3] - mat.r + 1;
    ty = (out_h + mat.m - 1) / mat.m, tx = (out_w + mat.m - 1) / mat.m;
  }
  // rows x cols (row-major) as a tensor, or its transpose: one buffer per device and matrix, so
  // conv's and weight_gradient's input tiles are one graph node (computed once per step)
  Tensor coefficients(const std::vector<double>& values, int64_t rows, int64_t cols, bool transposed = false) const {
    static std::mutex mu;
    static auto* made = new std::map<std::tuple<std::string, const void*, bool>, Tensor>();  // never destroyed:
    std::lock_guard lock(mu);                                     // buffers may outlive static teardown
    auto key = std::make_tuple(device, static_cast<const void*>(values.data()), transposed);
    if (auto it = made->find(key); it != made->end()) return it->second;
    std::vector<float> f(values.size());
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < cols; j++) f[transposed ? j * rows + i : i * cols + j] = static_cast<float>(values[i * cols + j]);
    Tensor c = Tensor::from_vector(std::move(f), transposed ? Shape{cols, rows} : Shape{rows, cols}).to(device).realize();
    return made->emplace(key, c).first->second;
  }
};

// BT d B for every input tile d, channels last, an image's tile positions apart: (n, xi, nu, ty, tx, c).
Tensor input_tiles(const Tensor& xp, const Tiling& t) {
  const int64_t m = t.mat.m, r = t.mat.r, a = t.mat.a, cin = xp.shape()[1];
  const Tensor bt = t.coefficients(t.mat.bt, a, a);
  // zero-padded so every tile is whole
  Tensor x = xp.pad({{0, 0}, {0, 0}, {0, t.ty * m + r - 1 - xp.shape()[2]}, {0, t.tx * m + r - 1 - xp.shape()[3]}});
  const int64_t hp = x.shape()[2];
  // along x: (n, c, hp, tx, 1, a) windows -> (n, hp, tx, l, c) -> mixed into (n, hp, tx, nu, c)
  Tensor row_windows = x.pool({1, a}, {1, m}, {1, 1}).reshape({t.n, cin, hp, t.tx, a}).permute({0, 2, 3, 4, 1});
  Tensor rows = mix_axis(row_windows, bt, 3).contiguous();
  // along y: (n, tx, nu, c, ty, k) windows -> (n, k, nu, ty, tx, c) -> mixed into (n, xi, nu, ty, tx, c)
  Tensor col_windows = rows.permute({0, 2, 3, 4, 1}).pool({a}, {m}, {1}).permute({0, 5, 2, 4, 1, 3});
  return mix_axis(col_windows, bt, 1).contiguous();
}

// G w GT for every (co, ci) pair: (xi nu, ci, co), co last (the forward matmul's vector axis).
Tensor weight_tiles(const Tensor& w, const Tiling& t) {
  const int64_t r = t.mat.r, a = t.mat.a;
  const Tensor g = t.coefficients(t.mat.g, a, r);
  return mix_axis(mix_axis(w, g, 3), g, 2).permute({2, 3, 1, 0}).reshape({a * a, w.shape()[1], w.shape()[0]}).contiguous();
}

// A dY AT for every output tile of the output gradient, channels last: (n, xi, nu, ty, tx, co), the
// overhang zero. Both gradients start from it: the same graph node, computed once.
Tensor output_tile_gradients(const Tensor& grad, const Tiling& t) {
  const int64_t m = t.mat.m, a = t.mat.a, cout = grad.shape()[1];
  const Tensor a_mat = t.coefficients(t.mat.at, m, a, true);
  Tensor dy = grad.permute({0, 2, 3, 1}).contiguous();
  dy = dy.pad({{0, 0}, {0, t.ty * m - t.out_h}, {0, t.tx * m - t.out_w}, {0, 0}})
           .reshape({t.n, t.ty, m, t.tx, m, cout})
           .permute({0, 2, 4, 1, 3, 5});
  return mix_axis(mix_axis(dy, a_mat, 2).contiguous(), a_mat, 1).contiguous();
}

}  // namespace

Tensor conv(const Tensor& xp, const Tensor& w) {
  const Tiling t(xp);
  const int64_t m = t.mat.m, a = t.mat.a, cin = xp.shape()[1], cout = w.shape()[0], tiles = t.ty * t.tx;
  const Tensor v = input_tiles(xp, t), u = weight_tiles(w, t);
  // Per tile position (xi, nu), a matmul over the input channels: (n, xi nu, ty tx, co).
  Tensor prod = (v.reshape({t.n, a * a, tiles, cin, 1}) * u.reshape({1, a * a, 1, cin, cout})).sum({3});
  prod = prod.reshape({t.n, a, a, t.ty, t.tx, cout}).contiguous();
  // Output tiles AT M A: along nu into (n, xi, j, ty, tx, co), then along xi into (n, ty, i, tx, j, co).
  const Tensor at = t.coefficients(t.mat.at, m, a);
  Tensor half = mix_axis(prod, at, 2).contiguous();
  Tensor out = mix_axis(half.permute({0, 3, 1, 4, 2, 5}), at, 2).reshape({t.n, t.ty * m, t.tx * m, cout});
  return out.shrink({{0, t.n}, {0, t.out_h}, {0, t.out_w}, {0, cout}}).contiguous().permute({0, 3, 1, 2});
}

// The adjoint of conv's path from xp: dV = U (A dY AT) per tile, summed over the output channels,
// then B dV BT per tile, the tiles' overlapping windows added up. No convolution of a zero-padded
// output gradient (whose tiles would be 58% zeros for the MNIST CNN's 20x20 outputs).
Tensor input_gradient(const Tensor& xp, const Tensor& w, const Tensor& grad) {
  const Tiling t(xp);
  const int64_t m = t.mat.m, a = t.mat.a, cin = xp.shape()[1], cout = w.shape()[0], tiles = t.ty * t.tx;
  static_assert(kKernel - 1 == kTile, "the overlap-add below takes a tile as two halves of m");
  const Tensor dm = output_tile_gradients(grad, t);
  // per tile position, a matmul over the output channels: (n, xi, nu, ty, tx, ci), ci the vector axis
  const Tensor ut = weight_tiles(w, t).permute({0, 2, 1}).contiguous();  // (xi nu, co, ci)
  Tensor dv = (dm.reshape({t.n, a * a, tiles, cout, 1}) * ut.reshape({1, a * a, 1, cout, cin})).sum({3});
  dv = dv.reshape({t.n, a, a, t.ty, t.tx, cin}).contiguous();
  // B dV BT: along nu, then xi, into (n, k, l, ty, tx, ci)
  const Tensor b = t.coefficients(t.mat.bt, a, a, true);
  const Tensor dd = mix_axis(mix_axis(dv, b, 2).contiguous(), b, 1).contiguous().reshape({t.n, 2, m, 2, m, t.ty, t.tx, cin});
  // tile (ty, tx) covers rows m ty + k and columns m tx + l: as halves h of m, tile ty + h's
  // rows in that tile's place
  std::optional<Tensor> sum;
  for (int64_t h = 0; h < 2; h++)
    for (int64_t hx = 0; hx < 2; hx++) {
      Tensor part = dd.shrink({{0, t.n}, {h, h + 1}, {0, m}, {hx, hx + 1}, {0, m}, {0, t.ty}, {0, t.tx}, {0, cin}})
                        .reshape({t.n, m, m, t.ty, t.tx, cin})
                        .permute({0, 3, 1, 4, 2, 5})
                        .pad({{0, 0}, {h, 1 - h}, {0, 0}, {hx, 1 - hx}, {0, 0}, {0, 0}})
                        .reshape({t.n, (t.ty + 1) * m, (t.tx + 1) * m, cin});
      sum = sum ? *sum + part : part;
    }
  return sum->shrink({{0, t.n}, {0, xp.shape()[2]}, {0, xp.shape()[3]}, {0, cin}}).contiguous().permute({0, 3, 1, 2});
}

// The adjoint of conv's path from w: a tile's output AT (U * V) A, so dU = (A dY AT) * V summed over
// tiles, and dW = GT dU G. V is conv's input_tiles, the same graph node: computed once per step.
Tensor weight_gradient(const Tensor& xp, const Tensor& grad) {
  const Tiling t(xp);
  const int64_t r = t.mat.r, a = t.mat.a, cin = xp.shape()[1], cout = grad.shape()[1], tiles = t.ty * t.tx;
  const Tensor v = input_tiles(xp, t), dm = output_tile_gradients(grad, t);
  // per tile position, a matmul over the tiles: (xi nu, co, ci), ci the vector axis. Summed in a
  // few chunks of images first (enough to share among the cores): each tile position reads only
  // its own slice, so big chunks cost no cache, and the automatic split (split_reduce.cpp, sized
  // for reductions whose every output reads every input) made 128 chunks, 33 MB of partial sums
  // written and read again.
  int64_t chunks = std::min(kImageChunks, t.n);
  while (t.n % chunks != 0) chunks--;
  Tensor du = (dm.reshape({chunks, t.n / chunks, a * a, tiles, cout, 1}) * v.reshape({chunks, t.n / chunks, a * a, tiles, 1, cin}))
                  .sum({1, 3})
                  .contiguous()
                  .sum({0});
  // GT dU G: (xi, nu, co, ci) -> (ky, kx, co, ci), stored in the sum's order (its partial sums are
  // read along ci then), read as (co, ci, ky, kx)
  const Tensor gt = t.coefficients(t.mat.g, a, r, true);
  du = du.reshape({a, a, cout, cin}).contiguous();
  return mix_axis(mix_axis(du, gt, 1), gt, 0).permute({2, 3, 0, 1});
}

}  // namespace kiln::winograd
