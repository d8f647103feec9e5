// scatter_reduce, scatter(reduce=), masked_select and nonzero against naive float64 loops, with
// finite-difference gradients and clear errors for bad arguments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "error_message.h"
#include "gradcheck.h"
#include "kiln/tensor.h"
#include "reference.h"

namespace {

using kiln::Tensor;
using ref::NdArray;
namespace dtypes = kiln::dtypes;

// PyTorch's scatter_reduce: out[..., index[i], ...] (at axis) combines src[i] for every i of index.
NdArray naive_scatter_reduce(const NdArray& self, int axis, const NdArray& index, const NdArray& src,
                             const std::string& reduce, bool include_self) {
  NdArray out = self;
  std::vector<std::vector<double>> hits(static_cast<size_t>(self.size()));
  for (int64_t f = 0; f < index.size(); f++) {
    ref::Index at = ref::unravel(f, index.shape);
    ref::Index target = at;
    target[static_cast<size_t>(axis)] = static_cast<int64_t>(index.data[static_cast<size_t>(f)]);
    hits[static_cast<size_t>(ref::ravel(target, self.shape))].push_back(src.at(at));
  }
  for (int64_t f = 0; f < self.size(); f++) {
    std::vector<double> v = hits[static_cast<size_t>(f)];
    if (v.empty()) continue;
    if (include_self) v.push_back(self.data[static_cast<size_t>(f)]);
    double r = reduce == "prod" ? 1 : reduce == "amax" ? -INFINITY : reduce == "amin" ? INFINITY : 0;
    for (double x : v)
      r = reduce == "prod" ? r * x : reduce == "amax" ? std::max(r, x) : reduce == "amin" ? std::min(r, x) : r + x;
    out.data[static_cast<size_t>(f)] = reduce == "mean" ? r / static_cast<double>(v.size()) : r;
  }
  return out;
}

struct ScatterCase {
  ref::Shape self, index, src;
  int axis;
};

TEST(ScatterReduce, MatchesNaiveLoopsAndGradients) {
  const std::vector<ScatterCase> cases = {
      {{5}, {7}, {7}, 0},                  // repeated targets along one axis
      {{3, 4}, {5, 4}, {6, 5}, 0},         // src larger than index
      {{3, 5}, {2, 7}, {3, 7}, 1},         // index longer than the target axis
      {{2, 3, 4}, {2, 2, 3}, {2, 3, 3}, 1},
      {{2, 3, 4}, {1, 3, 6}, {2, 3, 6}, -1},
  };
  uint64_t seed = 10;
  for (const ScatterCase& c : cases) {
    const int a = c.axis < 0 ? c.axis + static_cast<int>(c.self.size()) : c.axis;
    NdArray self = ref::random(c.self, seed++, 0.5, 2), src = ref::random(c.src, seed++, 0.5, 2);
    NdArray index = ref::random_int(c.index, seed++, 0, c.self[static_cast<size_t>(a)] - 1);
    NdArray src_used = ref::shrink(src, [&] {
      std::vector<std::pair<int64_t, int64_t>> b;
      for (int64_t n : c.index) b.push_back({0, n});
      return b;
    }());
    for (const char* reduce : {"sum", "prod", "mean", "amax", "amin"})
      for (bool include_self : {true, false}) {
        SCOPED_TRACE(std::string(reduce) + (include_self ? " include_self" : "") + " " + ref::shape_str(c.self));
        Tensor got = kt::f64(self).scatter_reduce(c.axis, kt::i32(index), kt::f64(src), reduce, include_self);
        NdArray want = naive_scatter_reduce(self, a, index, src_used, reduce, include_self);
        EXPECT_TRUE(kt::matches(got, want));
        EXPECT_TRUE(gc::check(
            [&](const std::vector<Tensor>& v) { return v[0].scatter_reduce(c.axis, kt::i32(index), v[1], reduce, include_self); },
            {self, src}, gc::few_elements()));
      }
  }
}

TEST(ScatterReduce, IntegersAndScatterReduceArgument) {
  NdArray self({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}), index({2, 3}, {0, 0, 3, 1, 1, 1}), src({2, 3}, {9, -4, 7, 2, 4, 5});
  for (kiln::DType dt : {dtypes::int32, dtypes::int64, dtypes::uint8})
    for (const char* reduce : {"sum", "prod", "amax", "amin"}) {
      SCOPED_TRACE(dt.name() + " " + reduce);
      NdArray s = dt == dtypes::uint8 ? ref::map(src, [](double x) { return std::abs(x); }) : src;
      NdArray want = naive_scatter_reduce(self, 1, index, s, reduce, false);
      EXPECT_TRUE(kt::matches(kt::make(self, dt).scatter_reduce(1, kt::i32(index), kt::make(s, dt), reduce, false), want));
    }
  // integer means round down (PyTorch's floor division): (2 + 9 - 4) / 3 and (6 + 2 + 4 + 5) / 4
  Tensor int_mean = kt::i32(self).scatter_reduce(1, kt::i32(index), kt::i32(src), "mean");
  EXPECT_TRUE(kt::matches(int_mean, ref::map(naive_scatter_reduce(self, 1, index, src, "mean", true),
                                             [](double x) { return std::floor(x); })));
  // scatter(reduce="add" / "multiply") is scatter_reduce's sum / prod with self included
  Tensor x = kt::f64(self);
  EXPECT_TRUE(kt::matches(x.scatter(1, kt::i32(index), kt::f64(src), "add"),
                          naive_scatter_reduce(self, 1, index, src, "sum", true)));
  EXPECT_TRUE(kt::matches(x.scatter(1, kt::i32(index), kt::f64(src), "multiply"),
                          naive_scatter_reduce(self, 1, index, src, "prod", true)));
}

TEST(ScatterReduce, BadArgumentsAreClearErrors) {
  Tensor x = Tensor::zeros({3, 4}), idx = Tensor::zeros({2, 4}, dtypes::int32), src = Tensor::ones({2, 4});
  EXPECT_NE(kt::error_of([&] { x.scatter_reduce(0, idx, src, "max"); }).find("reduce must be 'sum', 'prod', 'mean', 'amax' or 'amin', got 'max'"),
            std::string::npos);
  EXPECT_NE(kt::error_of([&] { x.scatter(0, idx, src, "sum"); }).find("reduce must be 'add' or 'multiply', got 'sum'"),
            std::string::npos);
  EXPECT_NE(kt::error_of([&] { x.scatter_reduce(0, idx, src.cast(dtypes::int32), "sum"); }).find("src is int32 but the input is float32"),
            std::string::npos);
  EXPECT_NE(kt::error_of([&] { x.scatter_reduce(0, idx.cast(dtypes::float32), src, "sum"); }).find("index must be an integer tensor"),
            std::string::npos);
  EXPECT_NE(kt::error_of([&] { x.scatter_reduce(0, Tensor::zeros({2, 5}, dtypes::int32), src, "sum"); }).find("is larger than src"),
            std::string::npos);
  EXPECT_NE(kt::error_of([&] { x.scatter_reduce(2, idx, src, "sum"); }).find("scatter_reduce"), std::string::npos);
}

// The elements of x where mask (same shape) is nonzero, in row-major order.
std::vector<double> naive_select(const NdArray& x, const NdArray& mask) {
  std::vector<double> out;
  for (size_t i = 0; i < x.data.size(); i++)
    if (mask.data[i] != 0) out.push_back(x.data[i]);
  return out;
}

TEST(MaskedSelect, MatchesNaiveSelectionAndGradients) {
  uint64_t seed = 40;
  for (const ref::Shape& s : std::vector<ref::Shape>{{7}, {3, 5}, {2, 3, 4}, {1}, {4, 1}}) {
    NdArray x = ref::random(s, seed++), mask = ref::random_int(s, seed++, 0, 1);
    std::vector<double> want = naive_select(x, mask);
    const int64_t n = static_cast<int64_t>(want.size());
    Tensor m = kt::make(mask, dtypes::bool_);
    EXPECT_TRUE(kt::matches(kt::f64(x).masked_select(m), NdArray({n}, want))) << ref::shape_str(s);
    EXPECT_TRUE(gc::check([&](const std::vector<Tensor>& v) { return v[0].masked_select(m); }, {x}, gc::few_elements()));
    // with a size: padded with the fill value, or cut
    std::vector<double> padded = want;
    padded.resize(static_cast<size_t>(n + 3), -7);
    EXPECT_TRUE(kt::matches(kt::f64(x).masked_select(m, n + 3, -7), NdArray({n + 3}, padded)));
    if (n > 1) {
      std::vector<double> cut(want.begin(), want.begin() + 1);
      EXPECT_TRUE(kt::matches(kt::f64(x).masked_select(m, 1), NdArray({1}, cut)));
      EXPECT_TRUE(gc::check([&](const std::vector<Tensor>& v) { return v[0].masked_select(m, n + 2, 3); }, {x}, gc::few_elements()));
    }
  }
  // the mask broadcasts to the input; none selected gives an empty result
  NdArray x = ref::random({3, 4}, 50);
  NdArray row({4}, {1, 0, 0, 1});
  NdArray rows = ref::expand(row, {3, 4});
  EXPECT_TRUE(kt::matches(kt::f64(x).masked_select(kt::make(row, dtypes::bool_)),
                          NdArray({6}, naive_select(x, rows))));
  EXPECT_TRUE(kt::matches(kt::f64(x).masked_select(Tensor::zeros({3, 4}, dtypes::bool_)), NdArray({0})));
  EXPECT_TRUE(kt::matches(kt::i32(ref::random_int({3, 4}, 51, -9, 9)).masked_select(Tensor::zeros({3, 4}, dtypes::bool_), 2, 5),
                          NdArray({2}, {5, 5})));
}

TEST(MaskedSelect, BadMasksAreClearErrors) {
  Tensor x = Tensor::ones({3, 4});
  EXPECT_NE(kt::error_of([&] { x.masked_select(Tensor::ones({3, 4})); }).find("expected a bool mask, got float32"),
            std::string::npos);
  EXPECT_NE(kt::error_of([&] { x.masked_select(Tensor::ones({3, 5}, dtypes::bool_)); }).find("does not broadcast to the input (3, 4)"),
            std::string::npos);
  EXPECT_NE(kt::error_of([&] { x.masked_select(Tensor::ones({3, 4}, dtypes::bool_), -1); }).find("size must be >= 0"),
            std::string::npos);
}

TEST(Nonzero, MatchesNaiveCoordinates) {
  uint64_t seed = 60;
  for (const ref::Shape& s : std::vector<ref::Shape>{{9}, {3, 5}, {2, 3, 4}, {1, 1}}) {
    NdArray x = ref::map(ref::random_int(s, seed++, -2, 3), [](double v) { return v > 0 ? v : 0; });
    std::vector<double> coords;
    for (int64_t f = 0; f < x.size(); f++)
      if (x.data[static_cast<size_t>(f)] != 0)
        for (int64_t c : ref::unravel(f, s)) coords.push_back(static_cast<double>(c));
    const int64_t n = static_cast<int64_t>(coords.size()) / static_cast<int64_t>(s.size()), dims = static_cast<int64_t>(s.size());
    for (kiln::DType dt : {dtypes::float32, dtypes::int32, dtypes::bool_}) {
      Tensor got = kt::make(x, dt).nonzero();
      EXPECT_EQ(got.dtype(), dtypes::int32);
      EXPECT_TRUE(kt::matches(got, NdArray({n, dims}, coords))) << ref::shape_str(s) << " " << dt.name();
    }
    std::vector<double> padded = coords;
    padded.resize(static_cast<size_t>((n + 2) * dims), -1);
    EXPECT_TRUE(kt::matches(kt::f64(x).nonzero(n + 2, -1), NdArray({n + 2, dims}, padded)));
  }
  EXPECT_TRUE(kt::matches(Tensor::full({}, 3.0).nonzero(), NdArray({1, 0})));
  EXPECT_TRUE(kt::matches(Tensor::zeros({}).nonzero(), NdArray({0, 0})));
}

}  // namespace
