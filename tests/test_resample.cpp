// interpolate, max_unpool2d and the 1-D convolution layers against naive float64 loops written
// from PyTorch's documented formulas, with finite-difference gradients and errors for bad arguments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "error_message.h"
#include "gradcheck.h"
#include "kiln/nn/layers.h"
#include "kiln/tensor.h"
#include "reference.h"

namespace {

using kiln::Tensor;
using ref::NdArray;
namespace dtypes = kiln::dtypes;

// One axis of x resized to `out` with PyTorch's rules (upsample_linear1d / nearest / nearest-exact).
NdArray resize_axis(const NdArray& x, int axis, int64_t out, const std::string& mode, bool align_corners) {
  const int64_t in = x.shape[static_cast<size_t>(axis)];
  ref::Shape s = x.shape;
  s[static_cast<size_t>(axis)] = out;
  NdArray r(s);
  for (int64_t f = 0; f < r.size(); f++) {
    ref::Index at = ref::unravel(f, s);
    const double j = static_cast<double>(at[static_cast<size_t>(axis)]);
    auto read = [&](int64_t i) {
      ref::Index src = at;
      src[static_cast<size_t>(axis)] = i;
      return x.at(src);
    };
    if (mode == "linear") {
      double pos = align_corners ? (out > 1 ? j * static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0)
                                 : std::max(0.0, (j + 0.5) * static_cast<double>(in) / static_cast<double>(out) - 0.5);
      const int64_t low = std::min(static_cast<int64_t>(std::floor(pos)), in - 1), high = std::min(low + 1, in - 1);
      const double w = pos - static_cast<double>(low);
      r.data[static_cast<size_t>(f)] = read(low) * (1 - w) + read(high) * w;
    } else {
      const double scale = static_cast<double>(in) / static_cast<double>(out);
      const double pos = mode == "nearest" ? j * scale : (j + 0.5) * scale;
      r.data[static_cast<size_t>(f)] = read(std::min(static_cast<int64_t>(std::floor(pos)), in - 1));
    }
  }
  return r;
}

NdArray naive_interpolate(NdArray x, const ref::Shape& size, const std::string& mode, bool align_corners) {
  for (size_t k = 0; k < size.size(); k++)
    x = resize_axis(x, static_cast<int>(x.ndim() - static_cast<int64_t>(size.size() - k)), size[k], mode, align_corners);
  return x;
}

struct ResizeCase {
  ref::Shape in, size;
};

TEST(Interpolate, MatchesPyTorchRulesAndGradients) {
  const std::vector<ResizeCase> cases = {
      {{7}, {3}},          {{2, 5}, {9}},        {{1, 2, 3, 4}, {5, 7}}, {{1, 1, 6, 5}, {2, 3}},
      {{2, 3, 4}, {4, 1}}, {{1, 3}, {1, 1}},     {{2, 2, 3, 2, 3}, {4, 3, 5}},  // trilinear
      {{3, 4}, {3, 4}},    {{1, 1, 1}, {4}},
  };
  uint64_t seed = 1;
  for (const ResizeCase& c : cases)
    for (const char* mode : {"linear", "nearest", "nearest-exact"})
      for (bool align : {false, true}) {
        if (align && std::string(mode) != "linear") continue;
        SCOPED_TRACE(ref::shape_str(c.in) + " -> " + ref::shape_str(c.size) + " " + mode + (align ? " align" : ""));
        NdArray x = ref::random(c.in, seed++);
        EXPECT_TRUE(kt::matches(kt::f64(x).interpolate(c.size, mode, align), naive_interpolate(x, c.size, mode, align)));
        EXPECT_TRUE(kt::matches(kt::make(x, dtypes::float32).interpolate(c.size, mode, align),
                                naive_interpolate(x, c.size, mode, align)));
        EXPECT_TRUE(gc::check([&](const std::vector<Tensor>& v) { return v[0].interpolate(c.size, mode, align); }, {x}, gc::few_elements()));
      }
  // integers keep their dtype (linear blends in float, then truncates)
  NdArray xi({1, 4}, {0, 10, 20, 35});
  Tensor yi = kt::i32(xi).interpolate({7});
  EXPECT_EQ(yi.dtype(), dtypes::int32);
  EXPECT_TRUE(kt::matches(yi, ref::map(naive_interpolate(xi, {7}, "linear", false), [](double v) { return std::trunc(v); })));
}

TEST(Interpolate, BadArgumentsAreClearErrors) {
  Tensor x = Tensor::ones({2, 3});
  EXPECT_NE(kt::error_of([&] { x.interpolate({2, 2, 2}); }).find("expected 1 to 2 output sizes"), std::string::npos);
  EXPECT_NE(kt::error_of([&] { x.interpolate({}); }).find("expected 1 to 2 output sizes"), std::string::npos);
  EXPECT_NE(kt::error_of([&] { x.interpolate({4}, "cubic"); }).find("mode must be 'linear', 'nearest' or 'nearest-exact', got 'cubic'"),
            std::string::npos);
  EXPECT_NE(kt::error_of([&] { x.interpolate({4}, "nearest", true); }).find("align_corners is only for mode 'linear'"),
            std::string::npos);
  EXPECT_NE(kt::error_of([&] { x.interpolate({0}); }).find("sizes must be >= 1"), std::string::npos);
}

// Max pool (no padding) of (N, C, spatial...) in float64: each window's value and the flat index
// of its first maximum; then the unpool of those, written back at their indices.
NdArray naive_unpool_of_pool(const NdArray& x, int64_t k, int64_t s, const ref::Shape& out_spatial, NdArray* pooled) {
  const int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], w = x.shape[3];
  const int64_t oh = (h - k) / s + 1, ow = (w - k) / s + 1;
  *pooled = NdArray({n, c, oh, ow});
  NdArray out({n, c, out_spatial[0], out_spatial[1]});
  for (int64_t b = 0; b < n; b++)
    for (int64_t ch = 0; ch < c; ch++)
      for (int64_t i = 0; i < oh; i++)
        for (int64_t j = 0; j < ow; j++) {
          int64_t best = -1;
          double value = -INFINITY;
          for (int64_t di = 0; di < k; di++)
            for (int64_t dj = 0; dj < k; dj++)
              if (x.at({b, ch, i * s + di, j * s + dj}) > value)
                value = x.at({b, ch, i * s + di, j * s + dj}), best = (i * s + di) * w + j * s + dj;
          pooled->at({b, ch, i, j}) = value;
          out.data[static_cast<size_t>(((b * c + ch) * out_spatial[0] * out_spatial[1]) + best)] = value;
        }
  return out;
}

TEST(MaxUnpool2d, InvertsMaxPoolWithIndices) {
  struct UnpoolCase {
    ref::Shape in;
    int64_t k, s;
    ref::Shape output_size;  // empty: the default
    ref::Shape want_spatial;
  };
  const std::vector<UnpoolCase> cases = {
      {{1, 1, 4, 4}, 2, 2, {}, {4, 4}},
      {{2, 3, 5, 5}, 2, 2, {5, 5}, {5, 5}},      // odd: the default would be 4x4
      {{1, 2, 6, 7}, 3, 2, {}, {5, 7}},
      {{1, 1, 5, 6}, 3, 3, {1, 1, 6, 7}, {6, 7}},  // output_size with batch and channel, as PyTorch takes it
  };
  uint64_t seed = 30;
  for (const UnpoolCase& c : cases) {
    SCOPED_TRACE(ref::shape_str(c.in));
    NdArray x = ref::random(c.in, seed++), pooled;
    NdArray want = naive_unpool_of_pool(x, c.k, c.s, c.want_spatial, &pooled);
    auto [values, indices] = kt::f64(x).max_pool2d_with_indices({c.k, c.k}, {c.s, c.s});
    EXPECT_TRUE(kt::matches(values.max_unpool2d(indices, {c.k, c.k}, {c.s, c.s}, {}, {}, c.output_size), want));
    if (c.k > c.s) continue;  // overlapping windows may pick one input twice: a tie, no derivative
    EXPECT_TRUE(gc::check(
        [&](const std::vector<Tensor>& v) { return v[0].max_unpool2d(indices, {c.k, c.k}, {c.s, c.s}, {}, {}, c.output_size); },
        {pooled}, gc::few_elements()));
  }
  // one spatial axis: any number of them is allowed
  Tensor x1 = Tensor::from_vector<float>({3, 1, 4, 1, 5, 9}, {1, 1, 6});
  auto [v1, i1] = x1.max_pool2d_with_indices({2});
  EXPECT_TRUE(kt::matches(v1.max_unpool2d(i1, {2}), NdArray({1, 1, 6}, {3, 0, 4, 0, 0, 9})));
}

TEST(MaxUnpool2d, BadArgumentsAreClearErrors) {
  Tensor x = Tensor::ones({1, 1, 2, 2}), idx = Tensor::zeros({1, 1, 2, 2}, dtypes::int32);
  EXPECT_NE(kt::error_of([&] { x.max_unpool2d(idx, {2}); }).find("a kernel size per spatial axis"), std::string::npos);
  EXPECT_NE(kt::error_of([&] { x.max_unpool2d(idx.cast(dtypes::float32), {2, 2}); }).find("expected integer indices"),
            std::string::npos);
  EXPECT_NE(kt::error_of([&] { x.max_unpool2d(Tensor::zeros({1, 1, 2, 3}, dtypes::int32), {2, 2}); })
                .find("of the input's shape (1, 1, 2, 2)"),
            std::string::npos);
  EXPECT_NE(kt::error_of([&] { x.max_unpool2d(idx, {2, 2}, {}, {}, {}, {5}); }).find("fewer than 2 spatial sizes"),
            std::string::npos);
  EXPECT_NE(kt::error_of([&] { x.max_unpool2d(idx, {0, 2}); }).find("must be >= 1"), std::string::npos);
}

// out[b, o, l] = bias[o] + sum over c, t of x[b, c, l * stride + t * dilation - padding] * w[o, c, t]
NdArray naive_conv1d(const NdArray& x, const NdArray& w, const NdArray& bias, int64_t stride, int64_t padding,
                     int64_t dilation) {
  const int64_t n = x.shape[0], cin = x.shape[1], len = x.shape[2], cout = w.shape[0], k = w.shape[2];
  const int64_t out_len = (len + 2 * padding - dilation * (k - 1) - 1) / stride + 1;
  NdArray out({n, cout, out_len});
  for (int64_t b = 0; b < n; b++)
    for (int64_t o = 0; o < cout; o++)
      for (int64_t l = 0; l < out_len; l++) {
        double acc = bias.data[static_cast<size_t>(o)];
        for (int64_t c = 0; c < cin; c++)
          for (int64_t t = 0; t < k; t++) {
            const int64_t at = l * stride + t * dilation - padding;
            if (at >= 0 && at < len) acc += x.at({b, c, at}) * w.at({o, c, t});
          }
        out.at({b, o, l}) = acc;
      }
  return out;
}

// out[b, o, i * stride + t * dilation - padding] += x[b, c, i] * w[c, o, t] (+ bias)
NdArray naive_conv_transpose1d(const NdArray& x, const NdArray& w, const NdArray& bias, int64_t stride, int64_t padding,
                               int64_t output_padding, int64_t dilation) {
  const int64_t n = x.shape[0], cin = x.shape[1], len = x.shape[2], cout = w.shape[1], k = w.shape[2];
  const int64_t out_len = (len - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1;
  NdArray out({n, cout, out_len});
  for (int64_t b = 0; b < n; b++)
    for (int64_t o = 0; o < cout; o++)
      for (int64_t l = 0; l < out_len; l++) out.at({b, o, l}) = bias.data[static_cast<size_t>(o)];
  for (int64_t b = 0; b < n; b++)
    for (int64_t c = 0; c < cin; c++)
      for (int64_t i = 0; i < len; i++)
        for (int64_t o = 0; o < cout; o++)
          for (int64_t t = 0; t < k; t++) {
            const int64_t at = i * stride + t * dilation - padding;
            if (at >= 0 && at < out_len) out.at({b, o, at}) += x.at({b, c, i}) * w.at({c, o, t});
          }
  return out;
}

NdArray host(const Tensor& t) { return NdArray(t.shape(), kt::read(t)); }

TEST(Conv1dLayers, MatchNaiveConvolutions) {
  NdArray x = ref::random({2, 3, 11}, 70);
  kiln::nn::Conv1d conv(3, 4, 3, 2, 1, true, 2);
  EXPECT_EQ(conv.weight.shape(), (kiln::Shape{4, 3, 3}));
  EXPECT_TRUE(conv.weight.requires_grad());
  EXPECT_TRUE(kt::matches(conv(kt::make(x)), naive_conv1d(x, host(conv.weight), host(*conv.bias), 2, 1, 2)));
  // weights in +-1/sqrt(fan_in), fan_in = in_channels * kernel_size
  for (double v : kt::read(conv.weight)) EXPECT_LE(std::abs(v), 1 / std::sqrt(9.0));
  EXPECT_EQ(kiln::nn::get_state_dict(conv).size(), 2u);

  kiln::nn::ConvTranspose1d up(3, 2, 4, 3, 1, 1);
  EXPECT_EQ(up.weight.shape(), (kiln::Shape{3, 2, 4}));
  EXPECT_TRUE(kt::matches(up(kt::make(x)), naive_conv_transpose1d(x, host(up.weight), host(*up.bias), 3, 1, 1, 1)));

  kiln::nn::Conv1d grouped(4, 6, 1, 1, 0, false, 1, 2);
  EXPECT_EQ(grouped.weight.shape(), (kiln::Shape{6, 2, 1}));
  EXPECT_FALSE(grouped.bias.has_value());
}

TEST(Conv1dLayers, BadInputsAreClearErrors) {
  kiln::nn::Conv1d conv(3, 4, 3);
  EXPECT_NE(kt::error_of([&] { conv(Tensor::ones({1, 3, 5, 5})); }).find("Conv1d: expected an input of layout (N, C, L)"),
            std::string::npos);
  kiln::nn::ConvTranspose1d up(3, 4, 3);
  EXPECT_NE(kt::error_of([&] { up(Tensor::ones({3, 5})); }).find("ConvTranspose1d: expected an input of layout (N, C, L)"),
            std::string::npos);
  EXPECT_NE(kt::error_of([&] { kiln::nn::Conv1d(3, 4, 3, 1, 0, true, 1, 2); }).find("Conv1d: channels 3 -> 4 are not divisible by groups=2"),
            std::string::npos);
  EXPECT_NE(kt::error_of([&] { kiln::nn::Conv2d(3, 4, 3)(Tensor::ones({1, 3, 5})); }).find("Conv2d: expected an input of layout (N, C, H, W)"),
            std::string::npos);
}

}  // namespace
