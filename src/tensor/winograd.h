#pragma once
// Winograd convolution F(4x4, 5x5): a stride-1 5x5 convolution in ~1/6 of the multiplies, for the
// convolutions that qualify (see winograd::applies). conv2d picks it; WINO=0 turns it off.
#include <string>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::winograd {

// Whether conv_core(xp, w, stride, dilation, groups) runs in the Winograd form: a float32, 2-D,
// ungrouped 5x5 convolution, stride and dilation 1, with enough channels on both sides to fill
// vectors and an output at least two tiles wide; WINO unset or nonzero.
bool applies(const Tensor& xp, const Tensor& w, const Shape& stride, const Shape& dilation, int64_t groups);

// The convolution of an already padded input xp (N, C, H, W) with w (O, C, 5, 5), as (N, O, H-4,
// W-4): a view of a channels-last buffer. Its first pass reads xp along C, so xp is best a view of
// a channels-last buffer too (padding as a view of one costs nothing: its reads are gated).
Tensor conv(const Tensor& xp, const Tensor& w);
// The gradients of conv(xp, w) with respect to xp (a view of a channels-last buffer) and to w, for
// the output gradient grad (N, O, H-4, W-4).
Tensor input_gradient(const Tensor& xp, const Tensor& w, const Tensor& grad);
Tensor weight_gradient(const Tensor& xp, const Tensor& grad);

// Toom-Cook matrices of F(m, r) (a = m + r - 1 points: 0, 1, -1, 2, -2, 1/2, -1/2, ... and
// infinity), row-major: y = AT [(G g) * (BT d)] is the correlation y[i] = sum_k d[i + k] g[k]
// of a tile d (a values) with a filter g (r values), for outputs i < m.
struct Matrices {
  int64_t m, r, a;
  std::vector<double> at;  // m x a
  std::vector<double> g;   // a x r
  std::vector<double> bt;  // a x a
};
Matrices toom_cook(int64_t m, int64_t r);

}  // namespace kiln::winograd
