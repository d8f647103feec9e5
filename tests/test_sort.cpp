// sort, argsort and topk against std::stable_sort over float64 copies (NaN ranked above +inf, as
// PyTorch's stable sort), their gradients against central differences, the sampling ops built on
// them, and the rearranging views (roll, repeat_interleave, diag, diagonal, meshgrid, unfold,
// rearrange) against naive index loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
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

// Stable sort of every lane along `axis`: {values, indices}.
std::pair<NdArray, NdArray> reference_sort(const NdArray& x, int axis, bool descending) {
  const int a = ref::norm_axis(axis, x.ndim());
  NdArray values(x.shape), indices(x.shape);
  const int64_t n = x.shape[a];
  for (int64_t flat = 0; flat < x.size(); flat++) {
    ref::Index start = ref::unravel(flat, x.shape);
    if (start[a] != 0) continue;
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    auto at = [&](int64_t i) {
      ref::Index idx = start;
      idx[a] = i;
      return x.at(idx);
    };
    // NaN above every number: last ascending, first descending
    auto before = [&](int64_t i, int64_t j) {
      double u = at(i), v = at(j);
      if (std::isnan(u) || std::isnan(v))
        return descending ? std::isnan(u) && !std::isnan(v) : !std::isnan(u) && std::isnan(v);
      return descending ? u > v : u < v;
    };
    std::stable_sort(order.begin(), order.end(), before);
    for (int64_t r = 0; r < n; r++) {
      ref::Index idx = start;
      idx[a] = r;
      values.at(idx) = at(order[r]);
      indices.at(idx) = static_cast<double>(order[r]);
    }
  }
  return {values, indices};
}

// Values and indices read back match the reference exactly (NaN where the reference has NaN).
::testing::AssertionResult sorts_like_reference(const Tensor& x, const NdArray& xs, int dim, bool descending) {
  auto [values, indices] = x.sort(dim, descending);
  auto [want_values, want_indices] = reference_sort(xs, dim, descending);
  if (indices.dtype() != dtypes::int32)
    return ::testing::AssertionFailure() << "indices are " << indices.dtype().name();
  if (auto r = kt::matches(indices, want_indices); !r) return r << " (indices)";
  std::vector<double> got = kt::read(values);
  for (size_t i = 0; i < got.size(); i++) {
    double w = want_values.data[i];
    if (std::isnan(w) ? !std::isnan(got[i]) : got[i] != w)
      return ::testing::AssertionFailure() << "value " << i << ": got " << got[i] << ", expected " << w;
  }
  return ::testing::AssertionSuccess();
}

TEST(Sort, MatchesStableSortOverSizesDimsAndDirections) {
  uint64_t seed = 1;
  for (ref::Shape shape : std::vector<ref::Shape>{{1}, {3}, {5}, {8}, {4, 7}, {3, 5, 2}, {2, 1000}}) {
    // values from a small grid so that ties are common
    NdArray xs = ref::random_grid(shape, seed++, -3, 3, 0.5);
    Tensor x = kt::make(xs, dtypes::float32);
    for (int dim = -1; dim < static_cast<int>(shape.size()); dim++)
      for (bool descending : {false, true})
        EXPECT_TRUE(sorts_like_reference(x, xs, dim, descending))
            << ref::shape_str(shape) << " dim " << dim << (descending ? " descending" : " ascending");
  }
}

TEST(Sort, NaNAndInfinitiesRankAsPyTorch) {
  const double nan = std::nan(""), inf = INFINITY;
  NdArray xs({9}, {2, nan, -inf, 1, inf, nan, 2, -0.5, inf});
  for (kiln::DType dt : {dtypes::float32, dtypes::float64, dtypes::float16})
    for (bool descending : {false, true})
      EXPECT_TRUE(sorts_like_reference(kt::make(xs, dt), xs, 0, descending)) << dt.name() << descending;
}

TEST(Sort, IntegerAndBoolDtypesIncludingTheirExtremes) {
  NdArray small({7}, {3, -128, 127, 0, 127, -1, 3});
  EXPECT_TRUE(sorts_like_reference(kt::make(small, dtypes::int8), small, 0, false));
  EXPECT_TRUE(sorts_like_reference(kt::make(small, dtypes::int8), small, 0, true));
  // the padding must sort after the dtype's own extreme values
  Tensor big = Tensor::from_vector<int64_t>({INT64_MAX, 5, INT64_MIN, INT64_MAX, -7}, {5});
  auto [v, i] = big.sort();
  EXPECT_EQ(v.to_vector<int64_t>(), (std::vector<int64_t>{INT64_MIN, -7, 5, INT64_MAX, INT64_MAX}));
  EXPECT_EQ(i.to_vector<int32_t>(), (std::vector<int32_t>{2, 4, 1, 0, 3}));
  Tensor u = Tensor::from_vector<uint32_t>({0, UINT32_MAX, 7, 0, UINT32_MAX}, {5});
  EXPECT_EQ(u.argsort(0, true).to_vector<int32_t>(), (std::vector<int32_t>{1, 4, 2, 0, 3}));
  Tensor b = Tensor::from_vector<bool>({true, false, true, false, false}, {5});
  auto [bv, bi] = b.sort();
  EXPECT_EQ(bv.dtype(), dtypes::bool_);
  EXPECT_EQ(bv.to_vector<bool>(), (std::vector<bool>{false, false, false, true, true}));
  EXPECT_EQ(bi.to_vector<int32_t>(), (std::vector<int32_t>{1, 3, 4, 0, 2}));
}

TEST(Sort, TopkIsTheSortedPrefix) {
  NdArray xs = ref::random_grid({3, 6}, 7, -2, 2, 0.5);
  Tensor x = kt::make(xs, dtypes::float32);
  for (bool largest : {true, false})
    for (int64_t k : {0, 1, 4, 6}) {
      auto [v, i] = x.topk(k, 1, largest);
      auto [wv, wi] = reference_sort(xs, 1, largest);
      EXPECT_TRUE(kt::matches(v, ref::shrink(wv, {{0, 3}, {0, k}}))) << k << largest;
      EXPECT_TRUE(kt::matches(i, ref::shrink(wi, {{0, 3}, {0, k}}))) << k << largest;
    }
  auto [v0, i0] = x.topk(2, 0, false);
  EXPECT_TRUE(kt::matches(i0, ref::shrink(reference_sort(xs, 0, false).second, {{0, 2}, {0, 6}})));
}

TEST(Sort, GradientsAgainstFiniteDifferences) {
  // distinct values, so that a small step keeps the order
  NdArray xs = ref::random({4, 5}, 3);
  for (int dim : {0, 1})
    for (bool descending : {false, true})
      EXPECT_TRUE(gc::check([&](const std::vector<Tensor>& v) { return v[0].sort(dim, descending).first; }, {xs}))
          << dim << descending;
  EXPECT_TRUE(gc::check([](const std::vector<Tensor>& v) { return v[0].topk(2, -1).first * 3.0; }, {xs}));
  EXPECT_TRUE(gc::check([](const std::vector<Tensor>& v) { return v[0].sort(0).first.exp(); }, {ref::random({7}, 5)}));
}

TEST(Sort, BadDimsAndKAreClearErrors) {
  Tensor x = Tensor::ones({2, 3});
  EXPECT_NE(kt::error_of([&] { x.sort(2); }).find("sort"), std::string::npos);
  EXPECT_NE(kt::error_of([&] { x.topk(4); }).find("topk: k must be in [0, 3]"), std::string::npos);
  EXPECT_NE(kt::error_of([&] { x.topk(-1); }).find("got -1"), std::string::npos);
  EXPECT_NE(kt::error_of([&] { x.argsort(-3); }).find("sort: "), std::string::npos);
  EXPECT_NE(kt::error_of([&] { Tensor::ones({2, 2, 2}).multinomial(); }).find("1-D or 2-D"), std::string::npos);
  EXPECT_NE(kt::error_of([&] { x.multinomial(4); }).find("must not exceed the 3"), std::string::npos);
}

TEST(Sampling, RandpermIsAPermutation) {
  Tensor::manual_seed(3);
  for (int64_t n : {1, 5, 100}) {
    std::vector<int32_t> p = Tensor::randperm(n).to_vector<int32_t>();
    std::sort(p.begin(), p.end());
    std::vector<int32_t> want(static_cast<size_t>(n));
    std::iota(want.begin(), want.end(), 0);
    EXPECT_EQ(p, want) << n;
  }
  std::vector<int32_t> a = Tensor::randperm(50).to_vector<int32_t>(), b = Tensor::randperm(50).to_vector<int32_t>();
  EXPECT_NE(a, b);  // later draws differ (identical by chance: 1 in 50!)
}

TEST(Sampling, MultinomialFollowsTheWeights) {
  Tensor::manual_seed(5);
  // 4000 draws: each category's share within 0.03 of its weight (over 4 standard deviations)
  const std::vector<float> w = {1, 0, 3, 4};
  std::vector<int32_t> draws = Tensor::from_vector<float>(w, {4}).multinomial(4000, true).to_vector<int32_t>();
  std::vector<double> share(4, 0);
  for (int32_t d : draws) share.at(static_cast<size_t>(d)) += 1.0 / 4000;
  for (size_t c = 0; c < 4; c++) EXPECT_NEAR(share[c], w[c] / 8, 0.03) << c;
  // without replacement: distinct indices, never a zero-weight category
  Tensor rows = Tensor::from_vector<float>({1, 2, 0, 4, 5, 0, 0, 1, 1, 1}, {2, 5});
  std::vector<int32_t> picked = rows.multinomial(3).to_vector<int32_t>();
  ASSERT_EQ(picked.size(), 6u);
  for (size_t r = 0; r < 2; r++) {
    std::set<int32_t> row(picked.begin() + 3 * r, picked.begin() + 3 * r + 3);
    EXPECT_EQ(row.size(), 3u);
    EXPECT_EQ(row.count(r == 0 ? 2 : 0), 0u);
  }
}

// ---- rearranging views

NdArray naive_roll(const NdArray& x, const std::vector<int64_t>& shifts, const std::vector<int>& dims) {
  NdArray out(x.shape);
  for (int64_t flat = 0; flat < x.size(); flat++) {
    ref::Index idx = ref::unravel(flat, x.shape);
    ref::Index to = idx;
    for (size_t i = 0; i < dims.size(); i++) {
      int a = ref::norm_axis(dims[i], x.ndim());
      to[a] = ((idx[a] + shifts[i]) % x.shape[a] + x.shape[a]) % x.shape[a];
    }
    out.at(to) = x.at(idx);
  }
  return out;
}

TEST(Rearrange, RollRepeatInterleaveAndUnfold) {
  NdArray xs = ref::random({3, 4, 5}, 11);
  Tensor x = kt::make(xs, dtypes::float64);
  EXPECT_TRUE(kt::matches(x.roll({2}, {1}), naive_roll(xs, {2}, {1})));
  EXPECT_TRUE(kt::matches(x.roll({-7, 13}, {0, -1}), naive_roll(xs, {-7, 13}, {0, -1})));
  EXPECT_TRUE(kt::matches(x.roll({3}), ref::reshape(naive_roll(ref::reshape(xs, {60}), {3}, {0}), {3, 4, 5})));
  auto rolled = [](const std::vector<Tensor>& v) { return v[0].roll({1, -2}, {0, 2}); };
  EXPECT_TRUE(gc::check(rolled, {ref::random({2, 3, 4}, 2)}));

  NdArray rep({3, 8, 5});
  for (int64_t f = 0; f < rep.size(); f++) {
    ref::Index i = ref::unravel(f, rep.shape);
    rep.data[f] = xs.at({i[0], i[1] / 2, i[2]});
  }
  EXPECT_TRUE(kt::matches(x.repeat_interleave(2, 1), rep));
  NdArray flat_rep({180});
  for (int64_t f = 0; f < 180; f++) flat_rep.data[f] = xs.data[f / 3];
  EXPECT_TRUE(kt::matches(x.repeat_interleave(3), flat_rep));

  // windows of 2 every 2 along dim 2 (5 -> 2 windows), the window last
  NdArray win({3, 4, 2, 2});
  for (int64_t f = 0; f < win.size(); f++) {
    ref::Index i = ref::unravel(f, win.shape);
    win.data[f] = xs.at({i[0], i[1], i[2] * 2 + i[3]});
  }
  EXPECT_TRUE(kt::matches(x.unfold(2, 2, 2), win));
  NdArray win0({2, 4, 5, 2});  // windows of 2 every 1 along dim 0
  for (int64_t f = 0; f < win0.size(); f++) {
    ref::Index i = ref::unravel(f, win0.shape);
    win0.data[f] = xs.at({i[0] + i[3], i[1], i[2]});
  }
  EXPECT_TRUE(kt::matches(x.unfold(0, 2, 1), win0));
  EXPECT_TRUE(gc::check([](const std::vector<Tensor>& v) { return v[0].unfold(1, 3, 2); }, {ref::random({2, 7}, 4)}));
}

TEST(Rearrange, DiagDiagonalAndMeshgrid) {
  NdArray vs = ref::random({4}, 1);
  NdArray d({4, 4});
  for (int64_t i = 0; i < 4; i++) d.at({i, i}) = vs.data[i];
  EXPECT_TRUE(kt::matches(kt::make(vs, dtypes::float64).diag(), d));

  NdArray xs = ref::random({3, 4, 5}, 9);
  Tensor x = kt::make(xs, dtypes::float64);
  struct Case {
    int64_t offset;
    int d1, d2;
  };
  for (Case c : std::vector<Case>{{0, 0, 1}, {1, 0, 1}, {-2, 0, 1}, {2, 2, 0}, {0, -1, 1}, {9, 0, 1}}) {
    const int a = ref::norm_axis(c.d1, 3), b = ref::norm_axis(c.d2, 3), other = 3 - a - b;
    const int64_t r0 = std::max<int64_t>(0, -c.offset), c0 = std::max<int64_t>(0, c.offset);
    const int64_t n = std::max<int64_t>(0, std::min(xs.shape[a] - r0, xs.shape[b] - c0));
    NdArray want({xs.shape[other], n});
    for (int64_t o = 0; o < xs.shape[other]; o++)
      for (int64_t k = 0; k < n; k++) {
        ref::Index idx(3);
        idx[other] = o, idx[a] = r0 + k, idx[b] = c0 + k;
        want.at({o, k}) = xs.at(idx);
      }
    EXPECT_TRUE(kt::matches(x.diagonal(c.offset, c.d1, c.d2), want)) << c.offset << " " << c.d1 << " " << c.d2;
  }
  EXPECT_NE(kt::error_of([&] { x.diagonal(0, 1, -2); }).find("dim1 and dim2 must differ"), std::string::npos);

  Tensor a = Tensor::from_vector<float>({1, 2, 3}, {3}), b = Tensor::from_vector<float>({4, 5}, {2});
  std::vector<Tensor> ij = Tensor::meshgrid({a, b}), xy = Tensor::meshgrid({a, b}, "xy");
  EXPECT_TRUE(kt::matches(ij[0], NdArray({3, 2}, {1, 1, 2, 2, 3, 3})));
  EXPECT_TRUE(kt::matches(ij[1], NdArray({3, 2}, {4, 5, 4, 5, 4, 5})));
  EXPECT_TRUE(kt::matches(xy[0], NdArray({2, 3}, {1, 2, 3, 1, 2, 3})));
  EXPECT_TRUE(kt::matches(xy[1], NdArray({2, 3}, {4, 4, 4, 5, 5, 5})));
  EXPECT_NE(kt::error_of([&] { Tensor::meshgrid({a, b}, "yx"); }).find("'ij' or 'xy'"), std::string::npos);
}

TEST(Rearrange, EinopsFormulas) {
  NdArray xs = ref::random({2, 6, 5}, 21);
  Tensor x = kt::make(xs, dtypes::float64);
  // "b (h w) c -> b c h w" with h=2: out[b][c][h][w] = x[b][h*3+w][c]
  NdArray want({2, 5, 2, 3});
  for (int64_t f = 0; f < want.size(); f++) {
    ref::Index i = ref::unravel(f, want.shape);
    want.data[f] = xs.at({i[0], i[2] * 3 + i[3], i[1]});
  }
  EXPECT_TRUE(kt::matches(x.rearrange("b (h w) c -> b c h w", {{"h", 2}}), want));
  EXPECT_TRUE(kt::matches(x.rearrange("b s c -> (b s c)"), ref::reshape(xs, {60})));
  EXPECT_TRUE(kt::matches(x.rearrange("... c -> c ..."), ref::permute(xs, {2, 0, 1})));
  EXPECT_TRUE(kt::matches(x.rearrange("b ... -> b 1 (...)"), ref::reshape(xs, {2, 1, 30})));
  EXPECT_EQ(x.rearrange("b s c -> b s 1 c 1").shape(), (kiln::Shape{2, 6, 1, 5, 1}));
  EXPECT_NE(kt::error_of([&] { x.rearrange("b s c"); }).find("exactly one '->'"), std::string::npos);
  EXPECT_NE(kt::error_of([&] { x.rearrange("b s c -> b s"); }).find("each axis must appear once"), std::string::npos);
  EXPECT_NE(kt::error_of([&] { x.rearrange("b s -> s b"); }).find("names 2 dims"), std::string::npos);
  EXPECT_NE(kt::error_of([&] { x.rearrange("b (s c -> b s c"); }).find("unbalanced"), std::string::npos);
  auto unused = [&] { x.rearrange("b s c -> b s c", {{"z", 2}}); };
  EXPECT_NE(kt::error_of(unused).find("'z' is not used"), std::string::npos);
  EXPECT_NE(kt::error_of([&] { x.rearrange("b (h w) c -> b h w c", {{"h", 4}}); }).find("reshape"), std::string::npos);
}

}  // namespace
