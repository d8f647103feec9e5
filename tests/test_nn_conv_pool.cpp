// Network ops, part 1: convolution (1-D, 2-D, 3-D; stride, padding, dilation, groups), transposed
// convolution (stride, padding, output_padding, dilation, groups) and max/avg pooling (kernel,
// stride, padding, dilation, ceil_mode, count_include_pad), each one size for all spatial axes or
// one per axis (asymmetric padding too), against naive float64 loops
// written here from the definitions PyTorch documents, forward (float64 tolerance, rtol 1e-10) and
// backward (finite differences, see gradcheck.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/opt.h"
#include "gradcheck.h"
#include "kiln/device.h"
#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/tensor.h"
#include "reference.h"
#include "support/env.h"
#include "tensor/winograd.h"

namespace {

using kiln::Tensor;
using ref::Index;
using ref::NdArray;
using ref::Shape;
using Ts = std::vector<Tensor>;
namespace dtypes = kiln::dtypes;

using kt::kF64;
// Scheduling a conv or pool graph takes milliseconds: check 6 elements per input one by one and
// the rest along random directions (gradcheck.h).
const gc::Options kSampled{.max_elements = 6};

using kt::f64;

// Iterates over every multi-index of `shape` (row-major).
template <class F>
void for_each_index(const Shape& shape, F fn) {
  for (int64_t f = 0; f < ref::numel(shape); f++) fn(ref::unravel(f, shape));
}

Shape tail(const Shape& s, size_t from) { return Shape(s.begin() + static_cast<int64_t>(from), s.end()); }

// ============================================================================ naive references

using Pairs = std::vector<std::pair<int64_t, int64_t>>;

// One size for every spatial axis, or (when the per-axis vectors are set) one per axis, which the
// tests pass to the per-axis overloads.
struct Conv {
  int stride = 1, padding = 0, dilation = 1, groups = 1, output_padding = 0;
  Shape strides{}, dilations{}, output_paddings{};
  Pairs pads{};
  bool per_axis() const { return !strides.empty(); }
  int64_t s(size_t i) const { return per_axis() ? strides[i] : stride; }
  int64_t d(size_t i) const { return per_axis() ? dilations[i] : dilation; }
  int64_t op(size_t i) const { return per_axis() ? output_paddings[i] : output_padding; }
  std::pair<int64_t, int64_t> pad(size_t i) const { return per_axis() ? pads[i] : std::pair<int64_t, int64_t>{padding, padding}; }
};

// out[n, o, p...] = b[o] + sum_{c, k...} x[n, g*cin + c, p*s - pad + k*d] w[o, c, k...], g = o / (cout/groups)
NdArray conv_ref(const NdArray& x, const NdArray& w, const std::optional<NdArray>& b, const Conv& c) {
  const size_t nk = x.shape.size() - 2;
  const int64_t cout = w.shape[0], cin = w.shape[1], cout_g = cout / c.groups;
  Shape in = tail(x.shape, 2), k = tail(w.shape, 2), out_shape{x.shape[0], cout};
  for (size_t i = 0; i < nk; i++)
    out_shape.push_back((in[i] + c.pad(i).first + c.pad(i).second - c.d(i) * (k[i] - 1) - 1) / c.s(i) + 1);
  NdArray out(out_shape);
  for_each_index(out_shape, [&](const Index& o) {
    const int64_t g = o[1] / cout_g;
    double acc = b ? b->data[o[1]] : 0;
    for (int64_t ci = 0; ci < cin; ci++)
      for_each_index(k, [&](const Index& kk) {
        Index xi{o[0], g * cin + ci}, wi{o[1], ci};
        for (size_t i = 0; i < nk; i++) {
          int64_t pos = o[2 + i] * c.s(i) - c.pad(i).first + kk[i] * c.d(i);
          if (pos < 0 || pos >= in[i]) return;
          xi.push_back(pos);
          wi.push_back(kk[i]);
        }
        acc += x.at(xi) * w.at(wi);
      });
    out.at(o) = acc;
  });
  return out;
}

// The adjoint of conv: each input element scatters x[n, ci, i...] w[ci, o, k...] to
// out[n, g*cout_g + o, i*s - pad + k*d]; w is (cin, cout/groups, k...).
NdArray conv_transpose_ref(const NdArray& x, const NdArray& w, const std::optional<NdArray>& b, const Conv& c) {
  const size_t nk = x.shape.size() - 2;
  const int64_t cin = w.shape[0], cout_g = w.shape[1], cin_g = cin / c.groups;
  Shape in = tail(x.shape, 2), k = tail(w.shape, 2), out_shape{x.shape[0], cout_g * c.groups};
  for (size_t i = 0; i < nk; i++)
    out_shape.push_back((in[i] - 1) * c.s(i) - c.pad(i).first - c.pad(i).second + c.d(i) * (k[i] - 1) + c.op(i) + 1);
  NdArray out(out_shape);
  for_each_index(x.shape, [&](const Index& xi) {
    const int64_t g = xi[1] / cin_g;
    for (int64_t oc = 0; oc < cout_g; oc++)
      for_each_index(k, [&](const Index& kk) {
        Index oi{xi[0], g * cout_g + oc}, wi{xi[1], oc};
        for (size_t i = 0; i < nk; i++) {
          int64_t pos = xi[2 + i] * c.s(i) - c.pad(i).first + kk[i] * c.d(i);
          if (pos < 0 || pos >= out_shape[2 + i]) return;
          oi.push_back(pos);
          wi.push_back(kk[i]);
        }
        out.at(oi) += x.at(xi) * w.at(wi);
      });
  });
  if (b)
    for_each_index(out_shape, [&](const Index& o) { out.at(o) += b->data[o[1]]; });
  return out;
}

struct Pool {
  int kernel = 2;
  std::optional<int> stride;
  int padding = 0, dilation = 1;
  bool ceil_mode = false, count_include_pad = true;
  Shape kernels{}, strides{}, dilations{};  // per spatial axis when kernels is set (strides empty: the kernel)
  Pairs pads{};
  bool per_axis() const { return !kernels.empty(); }
  size_t dims() const { return per_axis() ? kernels.size() : 2; }
  int64_t k(size_t i) const { return per_axis() ? kernels[i] : kernel; }
  int64_t s(size_t i) const { return per_axis() ? (strides.empty() ? kernels[i] : strides[i]) : stride.value_or(kernel); }
  int64_t d(size_t i) const { return per_axis() ? dilations[i] : dilation; }
  std::pair<int64_t, int64_t> pad(size_t i) const { return per_axis() ? pads[i] : std::pair<int64_t, int64_t>{padding, padding}; }
};

// PyTorch's output size: the last window must start inside the input or the front padding.
int64_t pool_out(int64_t in, const Pool& p, size_t i) {
  auto [before, after] = p.pad(i);
  int64_t num = in + before + after - p.d(i) * (p.k(i) - 1) - 1;
  int64_t o = (p.ceil_mode ? (num + p.s(i) - 1) / p.s(i) : num / p.s(i)) + 1;
  if (p.ceil_mode && (o - 1) * p.s(i) >= in + before) o--;
  return o;
}

Shape pool_out_shape(const NdArray& x, const Pool& p) {
  const size_t lead = x.shape.size() - p.dims();
  Shape out(x.shape.begin(), x.shape.begin() + static_cast<int64_t>(lead));
  for (size_t i = 0; i < p.dims(); i++) out.push_back(pool_out(x.shape[lead + i], p, i));
  return out;
}

// max over the window positions inside the input (padding never wins)
NdArray max_pool_ref(const NdArray& x, const Pool& p) {
  const size_t lead = x.shape.size() - p.dims();
  Shape in = tail(x.shape, lead), window;
  for (size_t i = 0; i < p.dims(); i++) window.push_back(p.k(i));
  NdArray out(pool_out_shape(x, p));
  for_each_index(out.shape, [&](const Index& o) {
    double best = -std::numeric_limits<double>::infinity();
    for_each_index(window, [&](const Index& kk) {
      Index xi(o.begin(), o.begin() + static_cast<int64_t>(lead));
      for (size_t i = 0; i < p.dims(); i++) {
        int64_t pos = o[lead + i] * p.s(i) - p.pad(i).first + kk[i] * p.d(i);
        if (pos < 0 || pos >= in[i]) return;
        xi.push_back(pos);
      }
      best = std::max(best, x.at(xi));
    });
    out.at(o) = best;
  });
  return out;
}

// PyTorch's avg_pool2d (no dilation): the divisor counts the padding (not the ceil-mode overhang
// past it) with count_include_pad, else only the input elements.
NdArray avg_pool_ref(const NdArray& x, const Pool& p) {
  const size_t lead = x.shape.size() - p.dims();
  Shape in = tail(x.shape, lead);
  NdArray out(pool_out_shape(x, p));
  for_each_index(out.shape, [&](const Index& o) {
    Shape lo, extent;  // the window clipped to the input, and its element count with padding
    double padded_count = 1;
    for (size_t i = 0; i < p.dims(); i++) {
      int64_t b = o[lead + i] * p.s(i) - p.pad(i).first, e = std::min(b + p.k(i), in[i] + p.pad(i).second);
      padded_count *= static_cast<double>(e - b);
      b = std::max<int64_t>(b, 0), e = std::min(e, in[i]);
      lo.push_back(b), extent.push_back(e - b);
    }
    double sum = 0;
    for_each_index(extent, [&](const Index& kk) {
      Index xi(o.begin(), o.begin() + static_cast<int64_t>(lead));
      for (size_t i = 0; i < p.dims(); i++) xi.push_back(lo[i] + kk[i]);
      sum += x.at(xi);
    });
    out.at(o) = sum / (p.count_include_pad ? padded_count : static_cast<double>(ref::numel(extent)));
  });
  return out;
}

// ============================================================================ convolution

struct ConvCase {
  std::string name;
  Shape x, w;
  bool bias;
  Conv c;
};
void PrintTo(const ConvCase& c, std::ostream* os) { *os << c.name; }
std::string conv_name(const ::testing::TestParamInfo<ConvCase>& i) { return i.param.name; }

const std::vector<ConvCase> kConvCases = {
    {"basic", {1, 2, 5, 5}, {3, 2, 3, 3}, true, {}},
    {"batch2_rect", {2, 1, 5, 6}, {2, 1, 2, 3}, false, {}},
    {"stride2_pad1", {1, 2, 7, 5}, {2, 2, 3, 3}, true, {.stride = 2, .padding = 1}},
    {"dilation2_pad2", {1, 1, 7, 7}, {2, 1, 3, 3}, false, {.padding = 2, .dilation = 2}},
    {"stride3_dilation2", {1, 2, 9, 8}, {2, 2, 2, 2}, true, {.stride = 3, .dilation = 2}},
    {"groups2", {1, 4, 5, 5}, {4, 2, 3, 3}, true, {.stride = 2, .padding = 1, .groups = 2}},
    {"depthwise", {1, 3, 5, 4}, {3, 1, 3, 3}, false, {.padding = 1, .groups = 3}},
    {"groups_more_out", {1, 2, 4, 4}, {4, 1, 2, 2}, false, {.groups = 2}},
    {"kernel1x1", {2, 3, 3, 3}, {2, 3, 1, 1}, true, {}},
    {"pad_beyond_kernel", {1, 1, 3, 3}, {1, 1, 2, 2}, false, {.padding = 2}},
    {"conv1d", {2, 3, 7}, {2, 3, 3}, true, {.stride = 2, .padding = 1}},
    {"conv1d_dilated_groups", {1, 4, 9}, {2, 2, 3}, false, {.dilation = 3, .groups = 2}},
    {"conv3d", {1, 2, 4, 3, 5}, {2, 2, 2, 2, 3}, true, {.padding = 1}},
    {"conv3d_stride2", {1, 1, 5, 5, 5}, {1, 1, 3, 3, 3}, false, {.stride = 2}},
    // per axis: sizes differ between the axes, padding is asymmetric or crops
    {"axes_stride_dilation", {1, 2, 9, 8}, {2, 2, 3, 2}, true, {.strides = {2, 1}, .dilations = {1, 3}, .pads = {{1, 1}, {0, 0}}}},
    {"axes_asymmetric_pad", {2, 1, 5, 6}, {2, 1, 3, 3}, false, {.strides = {1, 2}, .dilations = {1, 1}, .pads = {{2, 0}, {1, 3}}}},
    {"axes_crop_groups", {1, 4, 7, 6}, {4, 2, 2, 3}, true,
     {.groups = 2, .strides = {3, 1}, .dilations = {2, 1}, .pads = {{-1, 0}, {1, -1}}}},
    {"axes_conv1d", {1, 2, 9}, {3, 2, 3}, false, {.strides = {2}, .dilations = {2}, .pads = {{0, 3}}}},
    {"axes_conv3d", {1, 1, 5, 4, 6}, {2, 1, 2, 3, 1}, true,
     {.strides = {1, 2, 3}, .dilations = {2, 1, 1}, .pads = {{0, 1}, {1, 1}, {2, 0}}}},
    // 16 or more input channels: the weight gradient is a matmul over channels-last copies
    {"wide", {2, 16, 5, 6}, {3, 16, 3, 3}, true, {}},
    {"wide_stride2_pad1", {2, 17, 7, 6}, {5, 17, 3, 2}, false, {.stride = 2, .padding = 1}},
    {"wide_axes_dilation", {1, 16, 9, 8}, {2, 16, 3, 2}, true, {.strides = {2, 1}, .dilations = {1, 3}, .pads = {{1, 0}, {0, 2}}}},
    {"wide_conv1d", {3, 20, 9}, {4, 20, 3}, true, {.stride = 2, .dilation = 2}},
    {"wide_conv3d", {1, 16, 3, 4, 3}, {2, 16, 2, 2, 2}, false, {.padding = 1}},
    // 16 or more output channels and output rows under 8: a matmul over channels-last copies
    {"many_out_narrow", {2, 3, 6, 5}, {16, 3, 3, 3}, true, {}},
    {"many_out_axes", {1, 16, 9, 7}, {18, 16, 3, 2}, false, {.strides = {2, 1}, .dilations = {1, 2}, .pads = {{1, 0}, {0, 1}}}},
    {"many_out_conv1d", {2, 4, 6}, {16, 4, 3}, true, {.stride = 2}},
    {"many_out_conv3d", {1, 2, 3, 4, 5}, {16, 2, 2, 2, 2}, false, {.padding = 1}},
};

// The op under test: the per-axis overload when the case has per-axis sizes, else the one-size one.
Tensor conv(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b, const Conv& c) {
  if (c.per_axis()) return x.conv2d(w, b, c.strides, c.pads, c.dilations, c.groups);
  return x.conv2d(w, b, c.stride, c.padding, c.dilation, c.groups);
}
Tensor conv_transpose(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b, const Conv& c) {
  if (c.per_axis()) return x.conv_transpose2d(w, b, c.strides, c.pads, c.dilations, c.groups, c.output_paddings);
  return x.conv_transpose2d(w, b, c.stride, c.padding, c.dilation, c.groups, c.output_padding);
}

class ConvTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvTest, ForwardMatchesNaiveLoops) {
  const ConvCase& p = GetParam();
  NdArray x = ref::random(p.x, 1), w = ref::random(p.w, 2);
  std::optional<NdArray> b;
  std::optional<Tensor> bt;
  if (p.bias) b = ref::random({p.w[0]}, 3), bt = f64(*b);
  EXPECT_TRUE(kt::matches(conv(f64(x), f64(w), bt, p.c), conv_ref(x, w, b, p.c), kF64));
  // float32 agrees too, within float32's tolerance
  std::optional<Tensor> bt32;
  if (b) bt32 = kt::make(*b);
  EXPECT_TRUE(kt::matches(conv(kt::make(x), kt::make(w), bt32, p.c), conv_ref(x, w, b, p.c)));
}

TEST_P(ConvTest, GradientsMatchFiniteDifferences) {
  const ConvCase& p = GetParam();
  Conv c = p.c;
  std::vector<NdArray> in{ref::random(p.x, 4), ref::random(p.w, 5)};
  if (p.bias) in.push_back(ref::random({p.w[0]}, 6));
  EXPECT_TRUE(gc::check(
      [c](const Ts& v) {
        std::optional<Tensor> b = v.size() > 2 ? std::optional<Tensor>(v[2]) : std::nullopt;
        return conv(v[0], v[1], b, c);
      },
      in, kSampled));
}

INSTANTIATE_TEST_SUITE_P(Conv, ConvTest, ::testing::ValuesIn(kConvCases), conv_name);

// Whether this machine's CPU has AVX-512's 32 vector registers: deep convs run in the NCHW layout
// then, and as a matmul over channels-last copies with 16 (schedule/conv_layout.cpp).
bool wide_vector_registers() { return kiln::runtime::get_device("CPU").vector_registers() >= 32; }
// A 32-channel 5x5 conv sums 800 float32 products of size ~0.3: rounding in any order stays
// within ~1e-5 of float64; a few outputs near zero need the absolute part.
constexpr kt::Tol kDeepConv{1e-4, 5e-5};

TEST(Conv, RegisterTileTakesTwoOutputRowsWhenARowIsSeveralVectors) {
  // 24-wide output rows are 16 + 8 lanes: the tile is 4 channels x 2 rows x 24 pixels (codegen/heuristics/)
  // (a direct convolution: this one would otherwise run in the Winograd form)
  kiln::env::ScopedEnv direct("WINO", "0");
  NdArray x = ref::random({2, 32, 28, 28}, 7), w = ref::random({32, 32, 5, 5}, 8);
  Tensor xt = kt::make(x).realize(), wt = kt::make(w).realize();
  Tensor out = xt.conv2d(wt);
  std::vector<kiln::ScheduleItem> items = out.schedule();
  if (!wide_vector_registers()) {
    // copies of input and weight, the conv, the NCHW copy of its result
    EXPECT_EQ(items.size(), 4u);
    EXPECT_TRUE(kt::matches(out, conv_ref(x, w, std::nullopt, {}), kDeepConv));
    return;
  }
  ASSERT_EQ(items.size(), 1u);
  kiln::codegen::Program p = kiln::codegen::to_program(items[0].ast, {.renderer = &kiln::renderer::c_renderer(), .max_threads = 2, .vector_bytes = 64, .vector_registers = 32});
  std::vector<std::string> upcasts;
  for (const kiln::codegen::Opt& o : p.opts)
    if (o.op == kiln::codegen::OptOp::UPCAST) upcasts.push_back(o.str());
  EXPECT_EQ(upcasts.size(), 3u) << kiln::codegen::opts_to_string(p.opts);
  EXPECT_NE(std::find(upcasts.begin(), upcasts.end(), "UPCAST(axis=2, amt=2)"), upcasts.end())
      << kiln::codegen::opts_to_string(p.opts);
  EXPECT_TRUE(kt::matches(out, conv_ref(x, w, std::nullopt, {}), kDeepConv));
}

TEST(Conv, NarrowRowsWithManyChannelsRunOnChannelsLastCopies) {
  // 6-wide output rows, 32 output channels: copies of input and weight, the conv (pooling.cpp),
  // and here the NCHW copy of its channels-last result that realizing it alone makes
  NdArray x = ref::random({2, 16, 8, 8}, 9), w = ref::random({32, 16, 3, 3}, 10);
  Tensor xt = kt::make(x).realize(), wt = kt::make(w).realize();
  Tensor out = xt.conv2d(wt);
  EXPECT_EQ(out.schedule().size(), 4u);
  EXPECT_TRUE(kt::matches(out, conv_ref(x, w, std::nullopt, {})));
  // 16-wide rows fill an AVX-512 vector: one kernel in the NCHW layout, where the registers hold its tile
  Tensor x18 = kt::make(ref::random({2, 16, 18, 18}, 11)).realize();
  EXPECT_EQ(x18.conv2d(wt).schedule().size(), wide_vector_registers() ? 1u : 4u);
}

TEST(Conv, PaddedInputOfTheChannelsLastFormIsCopiedChannelsLastThenPadded) {
  // 6-wide rows run channels-last on every machine: the input is copied channels-last (a tiled
  // transpose), then padded by a copy that moves whole channel vectors, not by one transposing copy
  // under a border gate (pooling.cpp); the weight copy, the conv and its NCHW copy follow
  NdArray x = ref::random({2, 16, 6, 6}, 12), w = ref::random({32, 16, 3, 3}, 13);
  Tensor xt = kt::make(x).realize(), wt = kt::make(w).realize();
  Tensor out = xt.conv2d(wt, std::nullopt, 1, 1);
  EXPECT_EQ(out.schedule().size(), 5u);
  EXPECT_TRUE(kt::matches(out, conv_ref(x, w, std::nullopt, {.padding = 1})));
  // a padding that crops one side and pads the other keeps the shape, not the values
  Tensor shifted = xt.conv2d(wt, std::nullopt, {1, 1}, {{2, -2}, {-1, 1}});
  EXPECT_TRUE(kt::matches(shifted, conv_ref(x, w, std::nullopt, {.strides = {1, 1}, .dilations = {1, 1},
                                                                  .output_paddings = {0, 0}, .pads = {{2, -2}, {-1, 1}}})));
}

const std::vector<ConvCase> kConvTransposeCases = {
    {"basic", {1, 2, 3, 3}, {2, 3, 3, 3}, true, {}},
    {"stride2", {1, 2, 3, 4}, {2, 2, 3, 3}, false, {.stride = 2}},
    {"stride2_pad1_outpad1", {1, 2, 3, 4}, {2, 2, 3, 3}, true, {.stride = 2, .padding = 1, .output_padding = 1}},
    {"stride3_outpad2", {1, 1, 2, 3}, {1, 2, 2, 2}, false, {.stride = 3, .output_padding = 2}},
    {"groups2", {1, 4, 3, 3}, {4, 1, 2, 2}, true, {.stride = 2, .groups = 2}},
    {"groups2_wide", {2, 2, 2, 3}, {2, 3, 3, 2}, false, {.padding = 1, .groups = 2}},
    {"dilation2", {1, 1, 3, 3}, {1, 2, 3, 3}, false, {.stride = 2, .padding = 1, .dilation = 2}},
    {"transpose1d", {1, 2, 5}, {2, 3, 3}, true, {.stride = 3, .padding = 1}},
    {"axes_stride_pad", {1, 2, 3, 4}, {2, 3, 3, 2}, true,
     {.strides = {2, 3}, .dilations = {1, 2}, .output_paddings = {1, 0}, .pads = {{1, 0}, {0, 1}}}},
    {"axes_groups", {1, 4, 3, 3}, {4, 1, 2, 3}, false,
     {.groups = 2, .strides = {1, 2}, .dilations = {2, 1}, .output_paddings = {0, 1}, .pads = {{0, 0}, {1, 1}}}},
};

class ConvTransposeTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvTransposeTest, ForwardMatchesNaiveLoops) {
  const ConvCase& p = GetParam();
  NdArray x = ref::random(p.x, 7), w = ref::random(p.w, 8);
  std::optional<NdArray> b;
  std::optional<Tensor> bt;
  if (p.bias) b = ref::random({p.w[1] * p.c.groups}, 9), bt = f64(*b);
  EXPECT_TRUE(kt::matches(conv_transpose(f64(x), f64(w), bt, p.c), conv_transpose_ref(x, w, b, p.c), kF64));
}

TEST_P(ConvTransposeTest, GradientsMatchFiniteDifferences) {
  const ConvCase& p = GetParam();
  Conv c = p.c;
  std::vector<NdArray> in{ref::random(p.x, 10), ref::random(p.w, 11)};
  if (p.bias) in.push_back(ref::random({p.w[1] * c.groups}, 12));
  EXPECT_TRUE(gc::check(
      [c](const Ts& v) {
        std::optional<Tensor> b = v.size() > 2 ? std::optional<Tensor>(v[2]) : std::nullopt;
        return conv_transpose(v[0], v[1], b, c);
      },
      in, kSampled));
}

INSTANTIATE_TEST_SUITE_P(ConvTranspose, ConvTransposeTest, ::testing::ValuesIn(kConvTransposeCases), conv_name);

TEST(Conv, ShapeErrorsAreClear) {
  Tensor x = Tensor::zeros({1, 3, 5, 5});
  EXPECT_THROW(x.conv2d(Tensor::zeros({2, 2, 3, 3})), kiln::Error);            // channels
  EXPECT_THROW(x.conv2d(Tensor::zeros({2, 3, 3})), kiln::Error);               // rank
  EXPECT_THROW(x.conv2d(Tensor::zeros({2, 3, 3, 3}), Tensor::zeros({3})), kiln::Error);  // bias
  EXPECT_THROW(x.conv2d(Tensor::zeros({2, 3, 7, 7})), kiln::Error);            // kernel larger than input
}

// ============================================================================ pooling

struct PoolCase {
  std::string name;
  Shape x;
  Pool p;
};
void PrintTo(const PoolCase& c, std::ostream* os) { *os << c.name; }
std::string pool_name(const ::testing::TestParamInfo<PoolCase>& i) { return i.param.name; }

const std::vector<PoolCase> kMaxPoolCases = {
    {"k2", {1, 2, 6, 6}, {}},
    {"k2_odd_input", {2, 1, 7, 5}, {}},
    {"k3_s2", {1, 2, 7, 6}, {.kernel = 3, .stride = 2}},
    {"k3_s2_p1", {1, 1, 7, 6}, {.kernel = 3, .stride = 2, .padding = 1}},
    {"k3_s1_p1_d2", {1, 1, 7, 6}, {.kernel = 3, .stride = 1, .padding = 1, .dilation = 2}},
    {"k2_s1", {1, 1, 5, 4}, {.kernel = 2, .stride = 1}},
    {"k3_s2_ceil", {1, 1, 8, 6}, {.kernel = 3, .stride = 2, .ceil_mode = true}},
    {"k2_ceil_odd", {1, 2, 5, 7}, {.kernel = 2, .ceil_mode = true}},
    {"k3_s2_p1_ceil", {1, 1, 6, 7}, {.kernel = 3, .stride = 2, .padding = 1, .ceil_mode = true}},
    {"k2_s3_ceil_d2", {1, 1, 8, 7}, {.kernel = 2, .stride = 3, .dilation = 2, .ceil_mode = true}},
    {"axes_k3x2", {1, 2, 7, 6}, {.kernels = {3, 2}, .dilations = {1, 1}, .pads = {{0, 0}, {0, 0}}}},
    {"axes_s_d_asym_pad", {1, 1, 8, 7},
     {.kernels = {3, 2}, .strides = {1, 2}, .dilations = {2, 1}, .pads = {{1, 2}, {0, 1}}}},
    {"axes_ceil", {2, 1, 8, 9}, {.ceil_mode = true, .kernels = {2, 3}, .strides = {3, 2}, .dilations = {1, 2}, .pads = {{1, 0}, {1, 1}}}},
    {"axes_1d", {1, 2, 9}, {.kernels = {3}, .strides = {2}, .dilations = {1}, .pads = {{1, 1}}}},
    {"axes_3d", {1, 1, 4, 5, 6}, {.kernels = {2, 3, 2}, .strides = {2, 1, 3}, .dilations = {1, 1, 2}, .pads = {{0, 0}, {1, 1}, {0, 1}}}},
};

const std::vector<PoolCase> kAvgPoolCases = {
    {"k2", {1, 2, 6, 6}, {}},
    {"k2_odd_input", {2, 1, 7, 5}, {}},
    {"k3_s2", {1, 2, 7, 6}, {.kernel = 3, .stride = 2}},
    {"k2_s1", {1, 1, 5, 4}, {.kernel = 2, .stride = 1}},
    {"k3_s2_p1_include", {1, 1, 7, 6}, {.kernel = 3, .stride = 2, .padding = 1}},
    {"k3_s2_p1_exclude", {1, 1, 7, 6}, {.kernel = 3, .stride = 2, .padding = 1, .count_include_pad = false}},
    {"k3_s2_ceil", {1, 1, 8, 6}, {.kernel = 3, .stride = 2, .ceil_mode = true}},
    {"k2_ceil_odd", {1, 2, 5, 7}, {.kernel = 2, .ceil_mode = true}},
    {"k3_s2_p1_ceil_include", {1, 1, 6, 7}, {.kernel = 3, .stride = 2, .padding = 1, .ceil_mode = true}},
    {"k3_s2_p1_ceil_exclude",
     {1, 1, 6, 7},
     {.kernel = 3, .stride = 2, .padding = 1, .ceil_mode = true, .count_include_pad = false}},
    {"axes_k3x2", {1, 2, 7, 6}, {.kernels = {3, 2}, .dilations = {1, 1}, .pads = {{0, 0}, {0, 0}}}},
    {"axes_asym_pad_include", {1, 1, 7, 8}, {.kernels = {3, 2}, .strides = {2, 1}, .dilations = {1, 1}, .pads = {{1, 0}, {0, 1}}}},
    {"axes_asym_pad_exclude", {1, 1, 7, 8},
     {.count_include_pad = false, .kernels = {3, 2}, .strides = {2, 1}, .dilations = {1, 1}, .pads = {{1, 0}, {0, 1}}}},
    {"axes_ceil_include", {1, 1, 7, 8}, {.ceil_mode = true, .kernels = {2, 3}, .strides = {2, 2}, .dilations = {1, 1}, .pads = {{1, 1}, {0, 0}}}},
    {"axes_3d", {1, 2, 4, 5, 3}, {.kernels = {2, 3, 1}, .strides = {2, 1, 1}, .dilations = {1, 1, 1}, .pads = {{0, 0}, {1, 1}, {0, 0}}}},
};

Tensor max_pool(const Tensor& x, const Pool& p) {
  if (p.per_axis()) return x.max_pool2d(p.kernels, p.strides, p.pads, p.dilations, p.ceil_mode);
  return x.max_pool2d(p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode);
}
Tensor avg_pool(const Tensor& x, const Pool& p) {
  if (p.per_axis()) return x.avg_pool2d(p.kernels, p.strides, p.pads, p.dilations, p.ceil_mode, p.count_include_pad);
  return x.avg_pool2d(p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode, p.count_include_pad);
}

class MaxPoolTest : public ::testing::TestWithParam<PoolCase> {};
class AvgPoolTest : public ::testing::TestWithParam<PoolCase> {};

TEST_P(MaxPoolTest, ForwardAndGradient) {
  const PoolCase& c = GetParam();
  NdArray x = ref::random(c.x, 13);
  EXPECT_TRUE(kt::matches(max_pool(f64(x), c.p), max_pool_ref(x, c.p), kF64));
  Pool p = c.p;
  EXPECT_TRUE(gc::check([p](const Ts& v) { return max_pool(v[0], p); }, {x}, kSampled));
}

TEST_P(AvgPoolTest, ForwardAndGradient) {
  const PoolCase& c = GetParam();
  NdArray x = ref::random(c.x, 14);
  EXPECT_TRUE(kt::matches(avg_pool(f64(x), c.p), avg_pool_ref(x, c.p), kF64));
  Pool p = c.p;
  EXPECT_TRUE(gc::check([p](const Ts& v) { return avg_pool(v[0], p); }, {x}, kSampled));
}

// Indices of the maxima against a naive loop over each window: ties (values rounded to a few
// levels) pick the first maximum in row-major window order, a NaN the window's last NaN; padding
// is never chosen and indices count in the unpadded input.
TEST(Pool, MaxPoolIndicesMatchNaiveLoops) {
  const int64_t H = 7, W = 6, k = 3, s = 2, p = 1, oh = (H + 2 * p - k) / s + 1, ow = (W + 2 * p - k) / s + 1;
  std::vector<float> x(H * W);
  for (int64_t i = 0; i < H * W; i++) x[i] = static_cast<float>((i * 7) % 4);  // many ties
  x[2 * W + 3] = x[3 * W + 3] = NAN;
  auto [values, indices] = Tensor::from_vector(x, {1, 1, H, W}).max_pool2d_with_indices({k, k}, {s, s}, {{p, p}, {p, p}});
  const std::vector<int32_t> got = indices.to_vector<int32_t>();
  const std::vector<float> got_values = values.to_vector<float>();
  for (int64_t oy = 0; oy < oh; oy++)
    for (int64_t ox = 0; ox < ow; ox++) {
      int64_t best = -1;
      for (int64_t ky = 0; ky < k; ky++)
        for (int64_t kx = 0; kx < k; kx++) {
          const int64_t y = oy * s - p + ky, xx = ox * s - p + kx;
          if (y < 0 || y >= H || xx < 0 || xx >= W) continue;
          const int64_t i = y * W + xx;
          const bool nan_best = best >= 0 && std::isnan(x[best]);
          if (best < 0 || std::isnan(x[i]) || (!nan_best && x[i] > x[best])) best = i;
        }
      EXPECT_EQ(got[oy * ow + ox], best) << "window " << oy << "," << ox;
      if (std::isnan(x[best])) EXPECT_TRUE(std::isnan(got_values[oy * ow + ox]));
      else EXPECT_EQ(got_values[oy * ow + ox], x[best]);
    }
}

TEST(Pool, PerAxisArgumentErrorsAreClear) {
  Tensor x = Tensor::zeros({1, 1, 6, 6});
  EXPECT_THROW(x.max_pool2d(Shape{2, 2}, Shape{1, 1, 1}), kiln::Error);                     // one stride too many
  EXPECT_THROW(x.avg_pool2d(Shape{2, 2}, {}, Pairs{{1, 1}}), kiln::Error);                  // padding for one axis
  EXPECT_THROW(x.max_pool2d(Shape{}), kiln::Error);                                         // no kernel
  EXPECT_THROW(x.max_pool2d(Shape{2, 2, 2, 2, 2}), kiln::Error);                            // more axes than the input
  EXPECT_THROW(x.conv2d(Tensor::zeros({1, 1, 3, 3}), {}, Shape{1}), kiln::Error);           // stride for one axis
  EXPECT_THROW(x.conv_transpose2d(Tensor::zeros({1, 1, 3, 3}), {}, Shape{1, 1}, Pairs{{0, 0}, {0, 0}}, Shape{1, 1}, 1,
                                  Shape{0}),
               kiln::Error);  // output_padding for one axis
}

INSTANTIATE_TEST_SUITE_P(MaxPool2d, MaxPoolTest, ::testing::ValuesIn(kMaxPoolCases), pool_name);
INSTANTIATE_TEST_SUITE_P(AvgPool2d, AvgPoolTest, ::testing::ValuesIn(kAvgPoolCases), pool_name);

TEST(MaxPool2d, IntegerInputsPadWithTheirMinimum) {
  NdArray x = ref::random_int({1, 1, 5, 5}, 15, -100, -1);  // all negative: zero padding would win
  Pool p{.kernel = 3, .stride = 2, .padding = 1};
  EXPECT_TRUE(kt::matches(kt::make(x, dtypes::int32).max_pool2d(3, 2, 1), max_pool_ref(x, p)));
}

// ============================================================================ Winograd F(4x4, 5x5)

namespace winograd = kiln::winograd;

// For a Winograd conv the float32 rounding grows with the tile's magnitude, not each output's: the
// transforms add and subtract values up to ~30x an input (1/2-points scale by up to 2^6), so the
// error against float64 is relative to the largest output (here ~1e-6 of it; 2e-5 allowed).
kt::Tol winograd_tol(const NdArray& want) {
  double largest = 0;
  for (double v : want.data) largest = std::max(largest, std::fabs(v));
  return {0, 2e-5 * largest};
}

TEST(MaxPool2d, PoolsChannelsLastConvolutionOutputsInTheirLayout) {
  // a channels-last conv's output (6-wide rows of 32 channels), ReLU'd: pooled channels-last, a
  // max over (N, h, w, C) viewed as NCHW; an NCHW input keeps the NCHW max (no view). Values and gradients
  // against naive float64 loops and finite differences.
  NdArray x = ref::random({2, 16, 8, 8}, 21), w = ref::random({32, 16, 3, 3}, 22);
  auto conv_relu_pool = [](const Ts& v) { return v[0].conv2d(v[1]).relu().max_pool2d(2); };
  const Tensor pooled = conv_relu_pool({f64(x), f64(w)});
  ASSERT_EQ(pooled.uop()->op, kiln::Ops::PERMUTE);
  EXPECT_EQ(Tensor(pooled.uop()->src[0]).shape(), (kiln::Shape{2, 3, 3, 32}));
  EXPECT_NE(f64(x).max_pool2d(2).uop()->op, kiln::Ops::PERMUTE);
  NdArray relu = conv_ref(x, w, std::nullopt, {});
  for (double& v : relu.data) v = std::max(v, 0.0);
  EXPECT_TRUE(kt::matches(pooled, max_pool_ref(relu, {}), kF64));
  EXPECT_TRUE(gc::check(conv_relu_pool, {x, w}, kSampled));
}

TEST(Winograd, ToomCookMatricesComputeTheCorrelation) {
  for (auto [m, r] : std::vector<std::pair<int64_t, int64_t>>{{2, 3}, {4, 3}, {6, 3}, {2, 5}, {4, 5}, {4, 7}}) {
    const winograd::Matrices mat = winograd::toom_cook(m, r);
    const int64_t a = m + r - 1;
    NdArray d = ref::random({a}, static_cast<uint64_t>(10 * m + r)), g = ref::random({r}, static_cast<uint64_t>(m + 10 * r));
    std::vector<double> product(static_cast<size_t>(a));
    for (int64_t j = 0; j < a; j++) {
      double gj = 0, dj = 0;
      for (int64_t k = 0; k < r; k++) gj += mat.g[j * r + k] * g.data[k];
      for (int64_t l = 0; l < a; l++) dj += mat.bt[j * a + l] * d.data[l];
      product[j] = gj * dj;
    }
    for (int64_t i = 0; i < m; i++) {
      double got = 0, want = 0;
      for (int64_t j = 0; j < a; j++) got += mat.at[i * a + j] * product[j];
      for (int64_t k = 0; k < r; k++) want += d.data[i + k] * g.data[k];
      EXPECT_NEAR(got, want, 1e-9) << "F(" << m << ", " << r << ") output " << i;
    }
  }
  EXPECT_THROW(winograd::toom_cook(8, 7), kiln::Error);  // 13 points: more than the known ones
}

TEST(Winograd, OnlyStrideOneFiveByFiveConvolutionsOfEnoughChannelsQualify) {
  const Shape one{1, 1}, two{2, 2};
  auto applies = [](const Shape& x, const Shape& w, const Shape& stride, const Shape& dilation, int64_t groups = 1,
                    kiln::DType dt = dtypes::float32) {
    return winograd::applies(Tensor::zeros(x, dt), Tensor::zeros(w, dt), stride, dilation, groups);
  };
  EXPECT_TRUE(applies({2, 16, 12, 12}, {16, 16, 5, 5}, one, one));
  EXPECT_FALSE(applies({2, 16, 12, 12}, {16, 16, 3, 3}, one, one));                   // 3x3
  EXPECT_FALSE(applies({2, 16, 12, 12}, {16, 16, 5, 5}, two, one));                   // stride
  EXPECT_FALSE(applies({2, 16, 12, 12}, {16, 16, 5, 5}, one, two));                   // dilation
  EXPECT_FALSE(applies({2, 32, 12, 12}, {16, 16, 5, 5}, one, one, 2));                // groups
  EXPECT_FALSE(applies({2, 8, 12, 12}, {16, 8, 5, 5}, one, one));                     // few input channels
  EXPECT_FALSE(applies({2, 16, 12, 12}, {8, 16, 5, 5}, one, one));                    // few output channels
  EXPECT_FALSE(applies({2, 16, 11, 12}, {16, 16, 5, 5}, one, one));                   // a 7-row output
  EXPECT_FALSE(applies({2, 16, 12, 12}, {16, 16, 5, 5}, one, one, 1, dtypes::float64));  // float64 stays exact
  kiln::env::ScopedEnv off("WINO", "0");
  EXPECT_FALSE(applies({2, 16, 12, 12}, {16, 16, 5, 5}, one, one));
}

struct WinogradCase {
  std::string name;
  Shape x, w;
  int padding;
};
void PrintTo(const WinogradCase& c, std::ostream* os) { *os << c.name; }

class WinogradTest : public ::testing::TestWithParam<WinogradCase> {};

// Outputs that are whole tiles and ones whose last tile overhangs, square and not, padded and not.
const std::vector<WinogradCase> kWinogradCases = {
    {"whole_tiles", {2, 16, 12, 12}, {16, 16, 5, 5}, 0},
    {"overhanging_tiles", {3, 16, 13, 15}, {24, 16, 5, 5}, 0},
    {"padded", {2, 17, 9, 10}, {16, 17, 5, 5}, 2},
    {"batch_summed_in_chunks", {32, 16, 8, 8}, {16, 16, 5, 5}, 2},  // the weight gradient's image chunks
};

TEST_P(WinogradTest, ForwardMatchesNaiveLoops) {
  const WinogradCase& p = GetParam();
  NdArray x = ref::random(p.x, 21), w = ref::random(p.w, 22), b = ref::random({p.w[0]}, 23);
  Tensor out = kt::make(x).conv2d(kt::make(w), kt::make(b), 1, p.padding);
  NdArray want = conv_ref(x, w, b, {.padding = p.padding});
  EXPECT_TRUE(kt::matches(out, want, winograd_tol(want)));
}

TEST_P(WinogradTest, GradientsMatchNaiveLoops) {
  // d/dx and d/dw of sum(conv(x, w) * s): the input gradient is itself a Winograd convolution (of
  // s, padded by 4, with the flipped weight)
  const WinogradCase& p = GetParam();
  NdArray x = ref::random(p.x, 24), w = ref::random(p.w, 25);
  NdArray xp = ref::pad(x, {{0, 0}, {0, 0}, {p.padding, p.padding}, {p.padding, p.padding}});
  NdArray s = ref::random(conv_ref(x, w, std::nullopt, {.padding = p.padding}).shape, 26);
  const int64_t cin = w.shape[1], k = w.shape[2];
  NdArray dxp(xp.shape), dw(w.shape);
  for_each_index(s.shape, [&](const Index& o) {
    for (int64_t ci = 0; ci < cin; ci++)
      for (int64_t ky = 0; ky < k; ky++)
        for (int64_t kx = 0; kx < k; kx++) {
          const Index xi{o[0], ci, o[2] + ky, o[3] + kx}, wi{o[1], ci, ky, kx};
          dw.at(wi) += s.at(o) * xp.at(xi);
          dxp.at(xi) += s.at(o) * w.at(wi);
        }
  });
  NdArray dx = ref::shrink(dxp, {{0, x.shape[0]}, {0, cin}, {p.padding, p.padding + x.shape[2]}, {p.padding, p.padding + x.shape[3]}});
  Tensor xt = kt::make(x).requires_grad_(), wt = kt::make(w).requires_grad_();
  (xt.conv2d(wt, std::nullopt, 1, p.padding) * kt::make(s)).sum().backward();
  EXPECT_TRUE(kt::matches(*xt.grad(), dx, winograd_tol(dx)));
  // dW = GT (sum of tile products) G: Winograd's error, scaled by the largest gradient, as dx's
  EXPECT_TRUE(kt::matches(*wt.grad(), dw, winograd_tol(dw)));
}

INSTANTIATE_TEST_SUITE_P(Conv, WinogradTest, ::testing::ValuesIn(kWinogradCases),
                         [](const auto& i) { return i.param.name; });

}  // namespace
