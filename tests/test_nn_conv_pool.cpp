// Network ops, part 1: convolution (1-D, 2-D, 3-D; stride, padding, dilation, groups), transposed
// convolution (stride, padding, output_padding, dilation, groups) and 2-D max/avg pooling (kernel,
// stride, padding, dilation, ceil_mode, count_include_pad), each against naive float64 loops
// written here from the definitions PyTorch documents, forward (float64 tolerance, rtol 1e-10) and
// backward (finite differences, see gradcheck.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "gradcheck.h"
#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/tensor.h"
#include "reference.h"

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

struct Conv {
  int stride = 1, padding = 0, dilation = 1, groups = 1, output_padding = 0;
};

// out[n, o, p...] = b[o] + sum_{c, k...} x[n, g*cin + c, p*s - pad + k*d] w[o, c, k...], g = o / (cout/groups)
NdArray conv_ref(const NdArray& x, const NdArray& w, const std::optional<NdArray>& b, const Conv& c) {
  const size_t nk = x.shape.size() - 2;
  const int64_t cout = w.shape[0], cin = w.shape[1], cout_g = cout / c.groups;
  Shape in = tail(x.shape, 2), k = tail(w.shape, 2), out_shape{x.shape[0], cout};
  for (size_t i = 0; i < nk; i++)
    out_shape.push_back((in[i] + 2 * c.padding - c.dilation * (k[i] - 1) - 1) / c.stride + 1);
  NdArray out(out_shape);
  for_each_index(out_shape, [&](const Index& o) {
    const int64_t g = o[1] / cout_g;
    double acc = b ? b->data[o[1]] : 0;
    for (int64_t ci = 0; ci < cin; ci++)
      for_each_index(k, [&](const Index& kk) {
        Index xi{o[0], g * cin + ci}, wi{o[1], ci};
        for (size_t i = 0; i < nk; i++) {
          int64_t pos = o[2 + i] * c.stride - c.padding + kk[i] * c.dilation;
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
    out_shape.push_back((in[i] - 1) * c.stride - 2 * c.padding + c.dilation * (k[i] - 1) + c.output_padding + 1);
  NdArray out(out_shape);
  for_each_index(x.shape, [&](const Index& xi) {
    const int64_t g = xi[1] / cin_g;
    for (int64_t oc = 0; oc < cout_g; oc++)
      for_each_index(k, [&](const Index& kk) {
        Index oi{xi[0], g * cout_g + oc}, wi{xi[1], oc};
        for (size_t i = 0; i < nk; i++) {
          int64_t pos = xi[2 + i] * c.stride - c.padding + kk[i] * c.dilation;
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
  int s() const { return stride.value_or(kernel); }
};

// PyTorch's output size: the last window must start inside the input or the left padding.
int64_t pool_out(int64_t in, const Pool& p) {
  int64_t num = in + 2 * p.padding - p.dilation * (p.kernel - 1) - 1;
  int64_t o = (p.ceil_mode ? (num + p.s() - 1) / p.s() : num / p.s()) + 1;
  if (p.ceil_mode && (o - 1) * p.s() >= in + p.padding) o--;
  return o;
}

// max over the window positions inside the input (padding never wins)
NdArray max_pool_ref(const NdArray& x, const Pool& p) {
  const int64_t h = x.shape[2], w = x.shape[3];
  NdArray out({x.shape[0], x.shape[1], pool_out(h, p), pool_out(w, p)});
  for_each_index(out.shape, [&](const Index& o) {
    double best = -std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < p.kernel; i++)
      for (int64_t j = 0; j < p.kernel; j++) {
        int64_t y = o[2] * p.s() - p.padding + i * p.dilation, z = o[3] * p.s() - p.padding + j * p.dilation;
        if (y >= 0 && y < h && z >= 0 && z < w) best = std::max(best, x.at({o[0], o[1], y, z}));
      }
    out.at(o) = best;
  });
  return out;
}

// PyTorch's avg_pool2d (no dilation): the divisor counts the padding (not the ceil-mode overhang
// past it) with count_include_pad, else only the input elements.
NdArray avg_pool_ref(const NdArray& x, const Pool& p) {
  const int64_t h = x.shape[2], w = x.shape[3];
  NdArray out({x.shape[0], x.shape[1], pool_out(h, p), pool_out(w, p)});
  for_each_index(out.shape, [&](const Index& o) {
    int64_t y0 = o[2] * p.s() - p.padding, z0 = o[3] * p.s() - p.padding;
    int64_t y1 = std::min<int64_t>(y0 + p.kernel, h + p.padding), z1 = std::min<int64_t>(z0 + p.kernel, w + p.padding);
    double padded_count = static_cast<double>((y1 - y0) * (z1 - z0));
    y0 = std::max<int64_t>(y0, 0), z0 = std::max<int64_t>(z0, 0), y1 = std::min(y1, h), z1 = std::min(z1, w);
    double sum = 0;
    for (int64_t y = y0; y < y1; y++)
      for (int64_t z = z0; z < z1; z++) sum += x.at({o[0], o[1], y, z});
    out.at(o) = sum / (p.count_include_pad ? padded_count : static_cast<double>((y1 - y0) * (z1 - z0)));
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
};

class ConvTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvTest, ForwardMatchesNaiveLoops) {
  const ConvCase& p = GetParam();
  NdArray x = ref::random(p.x, 1), w = ref::random(p.w, 2);
  std::optional<NdArray> b;
  std::optional<Tensor> bt;
  if (p.bias) b = ref::random({p.w[0]}, 3), bt = f64(*b);
  Tensor out = f64(x).conv2d(f64(w), bt, p.c.stride, p.c.padding, p.c.dilation, p.c.groups);
  EXPECT_TRUE(kt::matches(out, conv_ref(x, w, b, p.c), kF64));
  // float32 agrees too, within float32's tolerance
  std::optional<Tensor> bt32;
  if (b) bt32 = kt::make(*b);
  EXPECT_TRUE(kt::matches(kt::make(x).conv2d(kt::make(w), bt32, p.c.stride, p.c.padding, p.c.dilation, p.c.groups),
                          conv_ref(x, w, b, p.c)));
}

TEST_P(ConvTest, GradientsMatchFiniteDifferences) {
  const ConvCase& p = GetParam();
  Conv c = p.c;
  std::vector<NdArray> in{ref::random(p.x, 4), ref::random(p.w, 5)};
  if (p.bias) in.push_back(ref::random({p.w[0]}, 6));
  EXPECT_TRUE(gc::check(
      [c](const Ts& v) {
        std::optional<Tensor> b = v.size() > 2 ? std::optional<Tensor>(v[2]) : std::nullopt;
        return v[0].conv2d(v[1], b, c.stride, c.padding, c.dilation, c.groups);
      },
      in, kSampled));
}

INSTANTIATE_TEST_SUITE_P(Conv, ConvTest, ::testing::ValuesIn(kConvCases), conv_name);

const std::vector<ConvCase> kConvTransposeCases = {
    {"basic", {1, 2, 3, 3}, {2, 3, 3, 3}, true, {}},
    {"stride2", {1, 2, 3, 4}, {2, 2, 3, 3}, false, {.stride = 2}},
    {"stride2_pad1_outpad1", {1, 2, 3, 4}, {2, 2, 3, 3}, true, {.stride = 2, .padding = 1, .output_padding = 1}},
    {"stride3_outpad2", {1, 1, 2, 3}, {1, 2, 2, 2}, false, {.stride = 3, .output_padding = 2}},
    {"groups2", {1, 4, 3, 3}, {4, 1, 2, 2}, true, {.stride = 2, .groups = 2}},
    {"groups2_wide", {2, 2, 2, 3}, {2, 3, 3, 2}, false, {.padding = 1, .groups = 2}},
    {"dilation2", {1, 1, 3, 3}, {1, 2, 3, 3}, false, {.stride = 2, .padding = 1, .dilation = 2}},
    {"transpose1d", {1, 2, 5}, {2, 3, 3}, true, {.stride = 3, .padding = 1}},
};

class ConvTransposeTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvTransposeTest, ForwardMatchesNaiveLoops) {
  const ConvCase& p = GetParam();
  NdArray x = ref::random(p.x, 7), w = ref::random(p.w, 8);
  std::optional<NdArray> b;
  std::optional<Tensor> bt;
  if (p.bias) b = ref::random({p.w[1] * p.c.groups}, 9), bt = f64(*b);
  const Conv& c = p.c;
  Tensor out = f64(x).conv_transpose2d(f64(w), bt, c.stride, c.padding, c.dilation, c.groups, c.output_padding);
  EXPECT_TRUE(kt::matches(out, conv_transpose_ref(x, w, b, c), kF64));
}

TEST_P(ConvTransposeTest, GradientsMatchFiniteDifferences) {
  const ConvCase& p = GetParam();
  Conv c = p.c;
  std::vector<NdArray> in{ref::random(p.x, 10), ref::random(p.w, 11)};
  if (p.bias) in.push_back(ref::random({p.w[1] * c.groups}, 12));
  EXPECT_TRUE(gc::check(
      [c](const Ts& v) {
        std::optional<Tensor> b = v.size() > 2 ? std::optional<Tensor>(v[2]) : std::nullopt;
        return v[0].conv_transpose2d(v[1], b, c.stride, c.padding, c.dilation, c.groups, c.output_padding);
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
};

Tensor max_pool(const Tensor& x, const Pool& p) { return x.max_pool2d(p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode); }
Tensor avg_pool(const Tensor& x, const Pool& p) {
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

INSTANTIATE_TEST_SUITE_P(MaxPool2d, MaxPoolTest, ::testing::ValuesIn(kMaxPoolCases), pool_name);
INSTANTIATE_TEST_SUITE_P(AvgPool2d, AvgPoolTest, ::testing::ValuesIn(kAvgPoolCases), pool_name);

TEST(MaxPool2d, IntegerInputsPadWithTheirMinimum) {
  NdArray x = ref::random_int({1, 1, 5, 5}, 15, -100, -1);  // all negative: zero padding would win
  Pool p{.kernel = 3, .stride = 2, .padding = 1};
  EXPECT_TRUE(kt::matches(kt::make(x, dtypes::int32).max_pool2d(3, 2, 1), max_pool_ref(x, p)));
}

}  // namespace
