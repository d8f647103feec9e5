// Gathers (gather, index_select) as indexed loads: values against naive loops (float64: rtol 1e-10;
// float32 and integers exactly, as a gather copies), negative and out-of-range indices, gradients
// against finite differences (gradcheck.h), and the kernel's structure: it loops over the index,
// never over the source.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gradcheck.h"
#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/schedule_item.h"
#include "kiln/tensor.h"
#include "reference.h"

namespace {

using kiln::Ops;
using kiln::Tensor;
using kiln::UOp;
using ref::Index;
using ref::NdArray;
using ref::Shape;
using Ts = std::vector<Tensor>;
namespace dtypes = kiln::dtypes;

constexpr kt::Tol kExact{0, 0};

// The value a gather reads at position `i` of an axis of size n: negative indices count from the
// end when `wraps` (index_select), and anything else outside [0, n) reads 0.
bool resolve(double i, int64_t n, bool wraps, int64_t& at) {
  at = static_cast<int64_t>(i);
  if (wraps && at < 0 && at >= -n) at += n;
  return at >= 0 && at < n;
}

// out[..i..] = x[..index[..i..] at axis..], by loops.
NdArray gather_ref(const NdArray& x, int axis, const NdArray& index, bool wraps = false) {
  NdArray out(index.shape);
  for (int64_t f = 0; f < index.size(); f++) {
    Index i = ref::unravel(f, index.shape);
    int64_t at;
    if (!resolve(index.data[f], x.shape[axis], wraps, at)) continue;
    i[axis] = at;
    out.data[f] = x.at(i);
  }
  return out;
}

// x.index_select(axis, index) by loops.
NdArray index_select_ref(const NdArray& x, int axis, const NdArray& index) {
  Shape s = x.shape;
  s[axis] = index.size();
  NdArray out(s);
  for (int64_t f = 0; f < out.size(); f++) {
    Index i = ref::unravel(f, s);
    int64_t at;
    if (!resolve(index.data[i[axis]], x.shape[axis], true, at)) continue;
    i[axis] = at;
    out.data[f] = x.at(i);
  }
  return out;
}

// Whether u's value depends on a LOAD (an address that depends on one is a gathered address).
bool reads_memory(const UOp* u) {
  for (const UOp* x : u->toposort())
    if (x->op == Ops::LOAD) return true;
  return false;
}

// What a kernel's AST does: how many iterations its loops run, whether it reduces, and how many of
// its loads read at an address that is itself loaded.
struct KernelShape {
  int64_t iterations = 1;
  bool reduces = false;
  int gathered_loads = 0;
};
KernelShape kernel_shape(const kiln::ScheduleItem& item) {
  KernelShape k;
  for (const UOp* u : item.ast->toposort()) {
    if (u->op == Ops::RANGE) k.iterations *= static_cast<int64_t>(u->src[0]->const_value());
    if (u->op == Ops::REDUCE) k.reduces = true;
    if (u->op == Ops::LOAD && reads_memory(u->src[0]->src[1].get())) k.gathered_loads++;
  }
  return k;
}

std::string describe(const std::vector<kiln::ScheduleItem>& items) {
  std::string s;
  for (const auto& it : items) s += it.str() + "\n";
  return s;
}

TEST(Gather, IndexSelectLoopsOverTheIndexNotTheSource) {
  const int64_t rows = 4096, cols = 48, k = 24;
  NdArray x = kt::wrap(ref::random({rows, cols}, 1), dtypes::float32);
  NdArray idx = ref::random_int({k}, 2, 0, rows - 1);
  Tensor picked = kt::make(x).index_select(0, kt::i32(idx));
  auto items = picked.schedule();
  ASSERT_EQ(items.size(), 1u) << describe(items);
  KernelShape shape = kernel_shape(items[0]);
  EXPECT_EQ(shape.iterations, k * cols) << items[0].str();  // the masked sum looped rows * k * cols times
  EXPECT_FALSE(shape.reduces) << items[0].str();
  EXPECT_EQ(shape.gathered_loads, 1) << items[0].str();
  EXPECT_TRUE(kt::matches(picked, index_select_ref(x, 0, idx), kExact));
}

TEST(Gather, NegativeIndicesWrapAndOutOfRangeOnesReadZero) {
  // n = 5: -1 and -5 wrap; 5, 7, -6 and (int64) 2^33 + 2 read 0 (the last must not wrap into range as int32)
  NdArray idx({8}, {-1, -5, 5, 7, -6, 2, 0, 8589934594.0});
  for (kiln::DType source : {dtypes::float32, dtypes::int32, dtypes::uint8}) {
    NdArray x = kt::wrap(ref::random_int({5, 3}, 3, 0, 99), source);
    for (kiln::DType index : {dtypes::int32, dtypes::int64}) {
      NdArray i = index == dtypes::int64 ? idx : NdArray({7}, std::vector<double>(idx.data.begin(), idx.data.end() - 1));
      SCOPED_TRACE(source.name() + " source, " + index.name() + " index");
      Tensor rows = kt::make(x, source).index_select(0, kt::make(i, index));
      EXPECT_EQ(rows.dtype(), source);
      EXPECT_TRUE(kt::matches(rows, index_select_ref(x, 0, i), kExact));
      Tensor cols = kt::make(ref::transpose(x), source).index_select(1, kt::make(i, index));
      EXPECT_TRUE(kt::matches(cols, index_select_ref(ref::transpose(x), 1, i), kExact));
    }
  }
}

TEST(Gather, AlongEachAxisMatchesLoops) {
  struct Case {
    Shape x, index;
    int axis;
  };
  // indices in [-2, n + 1]: outside [0, n) gather reads 0; index smaller than x on the other axes;
  // rows of 40 so that the kernels upcast the gathered (non-contiguous) loads
  for (const Case& c : std::vector<Case>{{{3, 4, 5}, {6, 4, 5}, 0},
                                         {{3, 4, 5}, {2, 7, 3}, 1},
                                         {{3, 4, 5}, {3, 4, 9}, 2},
                                         {{6, 40}, {5, 40}, 0},
                                         {{6, 40}, {6, 37}, 1}}) {
    SCOPED_TRACE(ref::shape_str(c.x) + " axis " + std::to_string(c.axis) + " by " + ref::shape_str(c.index));
    NdArray index = ref::random_int(c.index, 4, -2, c.x[c.axis] + 1);
    NdArray x = ref::random(c.x, 5);
    Shape kept = c.index;
    kept[c.axis] = c.x[c.axis];
    std::vector<std::pair<int64_t, int64_t>> bounds;
    for (int64_t n : kept) bounds.push_back({0, n});
    NdArray want = gather_ref(ref::shrink(x, bounds), c.axis, index);
    EXPECT_TRUE(kt::matches(kt::f64(x).gather(c.axis, kt::i32(index)), want, kt::kF64));
    NdArray ints = ref::random_int(c.x, 6, -50, 50);
    EXPECT_TRUE(kt::matches(kt::i32(ints).gather(c.axis, kt::i32(index)), gather_ref(ref::shrink(ints, bounds), c.axis, index),
                            kExact));
  }
}

TEST(Gather, ComputedIndicesAndConsumersShareTheKernel) {
  const int64_t rows = 300, cols = 20, k = 16;
  NdArray x = kt::wrap(ref::random({rows, cols}, 7), dtypes::float32);
  // index i * 17 + 3, computed from arange in the gather's kernel
  Tensor index = Tensor::arange(0, k, 1, dtypes::int32) * 17 + 3;
  NdArray idx({k});
  for (int64_t i = 0; i < k; i++) idx.data[i] = static_cast<double>(i * 17 + 3);
  Tensor out = (kt::make(x).gather(0, index.reshape({k, 1}).expand({k, cols})) * 2 + 1).relu();
  auto items = out.schedule();
  ASSERT_EQ(items.size(), 1u) << describe(items);
  EXPECT_EQ(kernel_shape(items[0]).iterations, k * cols) << items[0].str();
  EXPECT_TRUE(kt::matches(out, ref::map(index_select_ref(x, 0, idx), [](double v) { return std::max(v * 2 + 1, 0.0); })));
  // a computed source is stored first, then gathered from
  Tensor twice = (kt::make(x) * 2).index_select(0, kt::i32(idx));
  items = twice.schedule();
  ASSERT_EQ(items.size(), 2u) << describe(items);
  EXPECT_FALSE(kernel_shape(items[1]).reduces) << items[1].str();
  EXPECT_TRUE(kt::matches(twice, ref::map(index_select_ref(x, 0, idx), [](double v) { return v * 2; })));
}

TEST(Gather, ConstantSourceIsGatedToo) {
  NdArray idx({3}, {1, 7, -1});
  NdArray want({3, 2}, {2.5, 2.5, 0, 0, 2.5, 2.5});
  EXPECT_TRUE(kt::matches(Tensor::full({5, 2}, 2.5).index_select(0, kt::i32(idx)), want, kExact));
}

TEST(Gather, GradientsAreScatterAdds) {
  NdArray x = ref::random({5, 4}, 8);
  Tensor rows = kt::i32(NdArray({6}, {-1, 0, 4, 0, 9, -7}));  // repeats add up; 9 and -7 collect nowhere
  EXPECT_TRUE(gc::check([rows](const Ts& v) { return v[0].index_select(0, rows); }, {x}));
  EXPECT_TRUE(gc::check([rows](const Ts& v) { return v[0].exp().index_select(1, rows); }, {x}));
  Tensor index = kt::i32(ref::random_int({7, 4}, 9, -1, 5));
  EXPECT_TRUE(gc::check([index](const Ts& v) { return v[0].gather(0, index); }, {x}));
}

TEST(Gather, RejectsBadIndices) {
  Tensor x = Tensor::zeros({3, 4});
  EXPECT_THROW(x.index_select(0, Tensor::zeros({2})), kiln::Error);                // float index
  EXPECT_THROW(x.gather(1, Tensor::zeros({3, 2}, dtypes::bool_)), kiln::Error);   // bool index
  EXPECT_THROW(x.index_select(0, Tensor::zeros({2, 2}, dtypes::int32)), kiln::Error);  // not 1-D
  try {
    x.gather(0, Tensor::zeros({3, 4}, dtypes::float32));
    FAIL() << "a float index was accepted";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("must be integers, got float32"), std::string::npos) << e.what();
  }
}

}  // namespace
