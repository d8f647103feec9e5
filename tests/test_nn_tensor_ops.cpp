// Network ops, part 3: joining and splitting (cat, stack, split, chunk, repeat), indexing with
// integer tensors (gather, scatter, index_select, masked_fill, one_hot), cumsum, tril/triu and
// linear, against naive float64 loops written here: forward values (float64: rtol 1e-10) and
// finite-difference gradients (gradcheck.h) for the differentiable ones.
#include <gtest/gtest.h>

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

using kt::f64;
using kt::i32;

// ============================================================================ cat, stack, split

// Concatenation along `axis` by index loops: out[..., i, ...] comes from the piece holding i.
NdArray cat_ref(const std::vector<NdArray>& xs, int axis) {
  Shape s = xs[0].shape;
  s[axis] = 0;
  for (const NdArray& x : xs) s[axis] += x.shape[axis];
  NdArray out(s);
  for (int64_t f = 0; f < out.size(); f++) {
    Index idx = ref::unravel(f, s);
    for (const NdArray& x : xs) {
      if (idx[axis] < x.shape[axis]) {
        out.data[f] = x.at(idx);
        break;
      }
      idx[axis] -= x.shape[axis];
    }
  }
  return out;
}

TEST(Combine, Cat) {
  NdArray a = ref::random({2, 3, 1}, 1), b = ref::random({2, 3, 4}, 2), c = ref::random({2, 3, 2}, 3);
  EXPECT_TRUE(kt::matches(Tensor::cat({f64(a), f64(b), f64(c)}, -1), cat_ref({a, b, c}, 2), kF64));
  NdArray d = ref::random({1, 3, 2}, 4);
  EXPECT_TRUE(kt::matches(Tensor::cat({f64(c), f64(d)}), cat_ref({c, d}, 0), kF64));
  EXPECT_TRUE(gc::check([](const Ts& v) { return Tensor::cat(v, 2).exp(); }, {a, b, c}));
  // mixed dtypes promote; mismatched shapes are an error
  EXPECT_EQ(Tensor::cat({f64(a), kt::make(a)}, 0).dtype(), dtypes::float64);
  EXPECT_THROW(Tensor::cat({f64(a), f64(d)}, 2), kiln::Error);
}

TEST(Combine, Stack) {
  NdArray a = ref::random({3, 2}, 5), b = ref::random({3, 2}, 6);
  for (int axis : {0, 1, 2, -1}) {
    int ax = axis < 0 ? axis + 3 : axis;
    Shape one = a.shape;
    one.insert(one.begin() + ax, 1);
    NdArray want = cat_ref({ref::reshape(a, one), ref::reshape(b, one)}, ax);
    EXPECT_TRUE(kt::matches(Tensor::stack({f64(a), f64(b)}, axis), want, kF64)) << "axis " << axis;
  }
  EXPECT_TRUE(gc::check([](const Ts& v) { return Tensor::stack(v, 1).square(); }, {a, b}));
  EXPECT_THROW(Tensor::stack({f64(a), f64(ref::random({2, 3}, 7))}), kiln::Error);
}

TEST(Combine, SplitAndChunk) {
  NdArray x = ref::random({3, 7}, 8);
  std::vector<Tensor> parts = f64(x).split({2, 0, 5}, 1);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_TRUE(kt::matches(parts[0], ref::shrink(x, {{0, 3}, {0, 2}}), kF64));
  EXPECT_EQ(parts[1].shape(), (Shape{3, 0}));
  EXPECT_TRUE(kt::matches(parts[2], ref::shrink(x, {{0, 3}, {2, 7}}), kF64));
  std::vector<Tensor> pieces = f64(x).split(3, -1);  // 3, 3, 1
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_TRUE(kt::matches(pieces[2], ref::shrink(x, {{0, 3}, {6, 7}}), kF64));
  std::vector<Tensor> chunks = f64(x).chunk(3, 0);  // rows 1, 1, 1
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_TRUE(kt::matches(chunks[1], ref::shrink(x, {{1, 2}, {0, 7}}), kF64));
  EXPECT_EQ(f64(x).chunk(3, 1).size(), 3u);  // 3, 3, 1 as torch.chunk
  EXPECT_EQ(f64(x).chunk(4, 1).size(), 4u);  // 2, 2, 2, 1
  EXPECT_THROW(f64(x).split({2, 2}, 1), kiln::Error);
  // gradients of pieces used differently
  EXPECT_TRUE(gc::check(
      [](const Ts& v) {
        std::vector<Tensor> p = v[0].split({2, 5}, 1);
        return p[0].sum({1}) * 2.0 + p[1].exp().sum({1});
      },
      {x}));
}

TEST(Combine, Repeat) {
  NdArray x = ref::random({2, 3}, 9);
  NdArray want({2, 4, 6});  // torch.Tensor.repeat(2, 2, 2): new leading axis, tiles
  for (int64_t f = 0; f < want.size(); f++) {
    Index i = ref::unravel(f, want.shape);
    want.data[f] = x.at({i[1] % 2, i[2] % 3});
  }
  EXPECT_TRUE(kt::matches(f64(x).repeat({2, 2, 2}), want, kF64));
  EXPECT_TRUE(gc::check([](const Ts& v) { return v[0].repeat({2, 1, 3}); }, {x}));
  EXPECT_THROW(f64(x).repeat({2}), kiln::Error);
}

// ============================================================================ indexing

TEST(Indexing, OneHot) {
  NdArray idx({2, 3}, {0, 4, 2, 1, 1, 3});
  NdArray want({2, 3, 5});
  for (int64_t f = 0; f < idx.size(); f++) want.data[f * 5 + static_cast<int64_t>(idx.data[f])] = 1;
  Tensor oh = i32(idx).one_hot(5);
  EXPECT_EQ(oh.dtype(), dtypes::int32);
  EXPECT_TRUE(kt::matches(oh, want));
  EXPECT_TRUE(kt::matches(kt::make(idx, dtypes::int64).one_hot(5), want));
  EXPECT_THROW(f64(idx).one_hot(5), kiln::Error);
}

// out[i][j] = x[index[i][j]][j] (axis 0) or x[i][index[i][j]] (axis 1)
TEST(Indexing, Gather) {
  NdArray x = ref::random({4, 5}, 10);
  NdArray idx0 = ref::random_int({3, 5}, 11, 0, 3), idx1 = ref::random_int({4, 2}, 12, 0, 4);
  NdArray idx_small = ref::random_int({2, 3}, 13, 0, 4);  // smaller than x along the other axis too
  NdArray want0(idx0.shape), want1(idx1.shape), want_small(idx_small.shape);
  for (int64_t f = 0; f < idx0.size(); f++) {
    Index i = ref::unravel(f, idx0.shape);
    want0.data[f] = x.at({static_cast<int64_t>(idx0.data[f]), i[1]});
  }
  for (int64_t f = 0; f < idx1.size(); f++) {
    Index i = ref::unravel(f, idx1.shape);
    want1.data[f] = x.at({i[0], static_cast<int64_t>(idx1.data[f])});
  }
  for (int64_t f = 0; f < idx_small.size(); f++) {
    Index i = ref::unravel(f, idx_small.shape);
    want_small.data[f] = x.at({i[0], static_cast<int64_t>(idx_small.data[f])});
  }
  EXPECT_TRUE(kt::matches(f64(x).gather(0, i32(idx0)), want0, kF64));
  EXPECT_TRUE(kt::matches(f64(x).gather(-1, i32(idx1)), want1, kF64));
  EXPECT_TRUE(kt::matches(f64(x).gather(1, i32(idx_small)), want_small, kF64));
  Tensor t0 = i32(idx0), t1 = i32(idx1);
  EXPECT_TRUE(gc::check([t0](const Ts& v) { return v[0].gather(0, t0); }, {x}));  // repeated indices add up
  EXPECT_TRUE(gc::check([t1](const Ts& v) { return v[0].gather(1, t1); }, {x}));
}

TEST(Indexing, IndexSelect) {
  NdArray x = ref::random({3, 4, 2}, 14);
  NdArray idx({5}, {3, 0, 0, 2, 3});
  NdArray want({3, 5, 2});
  for (int64_t f = 0; f < want.size(); f++) {
    Index i = ref::unravel(f, want.shape);
    want.data[f] = x.at({i[0], static_cast<int64_t>(idx.data[i[1]]), i[2]});
  }
  Tensor it = i32(idx);
  EXPECT_TRUE(kt::matches(f64(x).index_select(1, it), want, kF64));
  EXPECT_TRUE(gc::check([it](const Ts& v) { return v[0].index_select(1, it); }, {x}));
  NdArray rows({2}, {2, 0});
  EXPECT_TRUE(kt::matches(f64(x).index_select(0, i32(rows)),
                          cat_ref({ref::shrink(x, {{2, 3}, {0, 4}, {0, 2}}), ref::shrink(x, {{0, 1}, {0, 4}, {0, 2}})}, 0), kF64));
  NdArray ints = ref::random_int({4}, 15, -9, 9);  // integers keep their dtype
  Tensor picked = i32(ints).index_select(0, i32(rows));
  EXPECT_EQ(picked.dtype(), dtypes::int32);
  EXPECT_TRUE(kt::matches(picked, NdArray({2}, {ints.data[2], ints.data[0]})));
}

// torch.Tensor.scatter: out = copy of x; out[index[i][j]][j] = src[i][j] (axis 0), the later index
// winning on duplicates; index may be smaller than src and x on every axis.
NdArray scatter_ref(const NdArray& x, int axis, const NdArray& index, const NdArray& src) {
  NdArray out = x;
  for (int64_t f = 0; f < index.size(); f++) {
    Index i = ref::unravel(f, index.shape), target = i;
    target[axis] = static_cast<int64_t>(index.data[f]);
    out.at(target) = src.at(i);
  }
  return out;
}

TEST(Indexing, Scatter) {
  NdArray x = ref::random({4, 5}, 16), src = ref::random({3, 5}, 17);
  NdArray idx0({2, 5}, {0, 3, 2, 1, 0, 3, 3, 0, 1, 0});                // full width, duplicates in columns 1 and 4
  NdArray idx1({3, 2}, {4, 0, 2, 2, 1, 3});                            // narrower than x along axis 0 and 1
  NdArray idx_narrow({2, 3}, {0, 1, 3, 2, 3, 0});                      // fewer columns than x, axis 0
  EXPECT_TRUE(kt::matches(f64(x).scatter(0, i32(idx0), f64(src)), scatter_ref(x, 0, idx0, src), kF64));
  EXPECT_TRUE(kt::matches(f64(x).scatter(1, i32(idx1), f64(src)), scatter_ref(x, 1, idx1, src), kF64));
  EXPECT_TRUE(kt::matches(f64(x).scatter(0, i32(idx_narrow), f64(src)), scatter_ref(x, 0, idx_narrow, src), kF64));
  Tensor t1 = i32(idx1), tn = i32(idx_narrow);
  EXPECT_TRUE(gc::check([t1](const Ts& v) { return v[0].scatter(1, t1, v[1]); }, {x, src}));
  EXPECT_TRUE(gc::check([tn](const Ts& v) { return v[0].scatter(0, tn, v[1]); }, {x, src}));
}

TEST(Indexing, MaskedFill) {
  NdArray x = ref::random({3, 4}, 18), m = ref::random_int({1, 4}, 19, 0, 1);  // broadcast mask
  NdArray want = ref::zip(x, m, [](double v, double k) { return k != 0 ? -2.5 : v; });
  Tensor mask = kt::make(m, dtypes::bool_);
  EXPECT_TRUE(kt::matches(f64(x).masked_fill(mask, -2.5), want, kF64));
  EXPECT_TRUE(gc::check([mask](const Ts& v) { return v[0].masked_fill(mask, -2.5); }, {x}));
}

// ============================================================================ cumsum, tril/triu, linear

TEST(Cumulative, Cumsum) {
  NdArray x = ref::random({3, 5, 2}, 20);
  for (int axis : {0, 1, 2, -2}) {
    int ax = axis < 0 ? axis + 3 : axis;
    NdArray want = x;
    for (int64_t f = 0; f < x.size(); f++) {
      Index i = ref::unravel(f, x.shape);
      if (i[ax] == 0) continue;
      Index prev = i;
      prev[ax]--;
      want.data[f] = want.at(prev) + x.data[f];  // row-major order: prev is already done
    }
    EXPECT_TRUE(kt::matches(f64(x).cumsum(axis), want, kF64)) << "axis " << axis;
    EXPECT_TRUE(gc::check([axis](const Ts& v) { return v[0].cumsum(axis); }, {x}));
  }
  NdArray ints = ref::random_int({6}, 21, -5, 5), want = ints;
  for (int64_t i = 1; i < 6; i++) want.data[i] += want.data[i - 1];
  EXPECT_TRUE(kt::matches(i32(ints).cumsum(), want));
}

TEST(Triangles, TrilAndTriu) {
  NdArray x = ref::random({2, 3, 4}, 22);
  for (int64_t diag : {-1, 0, 1, 3}) {
    NdArray lo = x, up = x;
    for (int64_t f = 0; f < x.size(); f++) {
      Index i = ref::unravel(f, x.shape);
      if (i[2] - i[1] > diag) lo.data[f] = 0;
      if (i[2] - i[1] < diag) up.data[f] = 0;
    }
    EXPECT_TRUE(kt::matches(f64(x).tril(diag), lo, kF64)) << "diagonal " << diag;
    EXPECT_TRUE(kt::matches(f64(x).triu(diag), up, kF64)) << "diagonal " << diag;
  }
  EXPECT_TRUE(gc::check([](const Ts& v) { return v[0].tril(1) + v[0].triu(); }, {x}));
  EXPECT_THROW(f64(ref::random({3}, 23)).tril(), kiln::Error);
}

TEST(Linear, MatchesMatmulPlusBias) {
  NdArray x = ref::random({2, 3, 4}, 24), w = ref::random({5, 4}, 25), b = ref::random({5}, 26);
  NdArray want = ref::zip(ref::matmul(x, ref::transpose(w)), b, [](double y, double c) { return y + c; });
  EXPECT_TRUE(kt::matches(f64(x).linear(f64(w), f64(b)), want, kF64));
  EXPECT_TRUE(kt::matches(f64(x).linear(f64(w)), ref::matmul(x, ref::transpose(w)), kF64));
  EXPECT_TRUE(gc::check([](const Ts& v) { return v[0].linear(v[1], v[2]); }, {x, w, b}));
}

}  // namespace
