// Tensor::pad with a mode (constant with a value, reflect, replicate, circular; negative amounts
// crop) against naive float64 loops that read each output element's source index from the
// definitions PyTorch documents; gradients by finite differences (gradcheck.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "gradcheck.h"
#include "kiln/error.h"
#include "kiln/tensor.h"
#include "reference.h"

namespace {

using kiln::PadMode;
using kiln::Tensor;
using ref::Index;
using ref::NdArray;
using ref::Shape;
using Pairs = std::vector<std::pair<int64_t, int64_t>>;
using Ts = std::vector<Tensor>;
using kt::f64;
using kt::kF64;

// Where output position `i` of an axis of size n padded by `before` reads from, or -1 (the fill).
int64_t source(int64_t i, int64_t n, int64_t before, PadMode mode) {
  int64_t j = i - before;
  if (j >= 0 && j < n) return j;
  switch (mode) {
    case PadMode::constant: return -1;
    case PadMode::reflect: return j < 0 ? -j : 2 * (n - 1) - j;
    case PadMode::replicate: return j < 0 ? 0 : n - 1;
    case PadMode::circular: return (j % n + n) % n;
  }
  return -1;
}

// Negative amounts crop: for circular padding first (PyTorch's order: the border wraps around what
// is left), for the other modes after padding.
NdArray pad_ref(const NdArray& x, const Pairs& pads, PadMode mode, double value) {
  Shape out_shape;
  for (size_t a = 0; a < pads.size(); a++) out_shape.push_back(x.shape[a] + pads[a].first + pads[a].second);
  NdArray out(out_shape);
  for (int64_t f = 0; f < out.size(); f++) {
    Index o = ref::unravel(f, out_shape), src;
    bool fill = false;
    for (size_t a = 0; a < pads.size(); a++) {
      const bool crop_first = mode == PadMode::circular;
      const int64_t crop_before = crop_first ? std::max<int64_t>(-pads[a].first, 0) : 0;
      const int64_t kept = x.shape[a] - crop_before - (crop_first ? std::max<int64_t>(-pads[a].second, 0) : 0);
      int64_t s = source(o[a], kept, pads[a].first + crop_before, mode);
      fill |= s < 0;
      src.push_back(s < 0 ? s : s + crop_before);
    }
    out.data[f] = fill ? value : x.at(src);
  }
  return out;
}

struct PadCase {
  std::string name;
  Shape x;
  Pairs pads;
  PadMode mode;
  double value = 0;
};

class PadModeTest : public ::testing::TestWithParam<PadCase> {};

TEST_P(PadModeTest, MatchesNaiveLoopsWithGradient) {
  const PadCase c = GetParam();
  NdArray x = ref::random(c.x, 31);
  EXPECT_TRUE(kt::matches(f64(x).pad(c.pads, c.mode, c.value), pad_ref(x, c.pads, c.mode, c.value), kF64));
  EXPECT_TRUE(gc::check([c](const Ts& v) { return v[0].pad(c.pads, c.mode, c.value); }, {x}));
}

const std::vector<PadCase> kPadCases = {
    {"constant_value", {2, 3}, {{1, 2}, {0, 1}}, PadMode::constant, -1.5},
    {"constant_crop", {3, 4}, {{-1, 2}, {1, -2}}, PadMode::constant, 2.0},
    {"reflect", {2, 5}, {{0, 0}, {3, 4}}, PadMode::reflect},
    {"reflect_2d", {4, 3}, {{3, 1}, {2, 2}}, PadMode::reflect},
    {"replicate", {3, 2, 3}, {{1, 0}, {2, 3}, {0, 4}}, PadMode::replicate},
    {"circular", {3, 4}, {{3, 2}, {4, 1}}, PadMode::circular},
    {"reflect_crop", {2, 6}, {{0, 0}, {-2, 3}}, PadMode::reflect},
    {"replicate_crop", {5, 3}, {{2, -3}, {1, 1}}, PadMode::replicate},
    {"circular_crop", {3, 5}, {{-1, 2}, {1, -2}}, PadMode::circular},
    {"reflect_pads_then_crops", {2, 5}, {{0, 0}, {3, -3}}, PadMode::reflect},
};

INSTANTIATE_TEST_SUITE_P(Pad, PadModeTest, ::testing::ValuesIn(kPadCases),
                         [](const ::testing::TestParamInfo<PadCase>& i) { return i.param.name; });

TEST(PadModes, ConstantFillKeepsTheDtype) {
  NdArray x = ref::random_int({2, 3}, 32, -5, 5);
  Tensor padded = kt::make(x, kiln::dtypes::int32).pad({{1, 0}, {0, 2}}, PadMode::constant, -7);
  EXPECT_EQ(padded.dtype(), kiln::dtypes::int32);
  EXPECT_TRUE(kt::matches(padded, pad_ref(x, {{1, 0}, {0, 2}}, PadMode::constant, -7)));
}

TEST(PadModes, ErrorsAreClear) {
  Tensor x = Tensor::zeros({2, 3});
  EXPECT_THROW(x.pad({{0, 0}, {3, 0}}, PadMode::reflect), kiln::Error);      // reflect needs less than the size
  EXPECT_THROW(x.pad({{0, 0}, {0, 4}}, PadMode::circular), kiln::Error);     // wraps more than once
  EXPECT_THROW(x.pad({{0, 0}, {1, 1}}, PadMode::replicate, 2.0), kiln::Error);  // a value only for constant
  EXPECT_THROW(x.pad({{1, 1}}, PadMode::constant), kiln::Error);             // one pair per axis
  EXPECT_THROW(x.pad({{0, 0}, {-2, -2}}, PadMode::constant), kiln::Error);   // crops more than the axis
}

}  // namespace
