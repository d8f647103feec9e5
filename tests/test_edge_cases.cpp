// Edge cases a new user hits: narrow-integer wraparound inside fused kernels, accuracy of large
// sums, signed minimums, NaN, rounding near 2^23, 64-bit integer scalars, infinite logsumexp and
// shared tensors read from several threads. Each is checked against plain C++ computing the same
// thing (in the dtype's own arithmetic, or in double).
#include <gtest/gtest.h>

#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

#include "kiln/tensor.h"

namespace {

using kiln::Tensor;
namespace dtypes = kiln::dtypes;

template <class T>
Tensor vec(std::vector<T> v) {
  int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<T>(std::move(v), {n});
}

// ---- 8- and 16-bit integers wrap inside a kernel, not only when stored

TEST(NarrowIntegers, WrapInsideFusedKernels) {
  std::vector<uint8_t> a{200, 3, 255, 0}, b{100, 5, 255, 1};
  std::vector<int32_t> want;
  for (size_t i = 0; i < a.size(); i++) want.push_back(static_cast<uint8_t>(a[i] + b[i]));
  // the sum is only ever in a register: the cast to int32 is fused into the same kernel
  EXPECT_EQ((vec(a) + vec(b)).cast(dtypes::int32).to_vector<int32_t>(), want);

  std::vector<int8_t> c{100, -100, 127, -128};
  int32_t squares = 0;
  for (int8_t v : c) squares += static_cast<int8_t>(v * v);
  EXPECT_EQ((vec(c) * vec(c)).sum().cast(dtypes::int32).item<int32_t>(), squares);

  std::vector<int16_t> d{300, -300, 32767};
  std::vector<int32_t> want16;
  for (int16_t v : d) want16.push_back(static_cast<int16_t>(v * v));
  EXPECT_EQ((vec(d) * vec(d)).cast(dtypes::int32).to_vector<int32_t>(), want16);

  EXPECT_EQ((-vec<uint8_t>({3, 0, 255})).cast(dtypes::int32).to_vector<int32_t>(),
            (std::vector<int32_t>{static_cast<uint8_t>(-3), 0, static_cast<uint8_t>(-255)}));
  EXPECT_EQ((-vec<uint16_t>({3})).cast(dtypes::int32).item<int32_t>(), static_cast<uint16_t>(-3));
  // a comparison of the wrapped value, in the same kernel
  EXPECT_EQ((vec<uint8_t>({200}) + vec<uint8_t>({100})).lt(100).to_vector<bool>(), std::vector<bool>{true});
}

// ---- whole-tensor sums keep float32 accuracy however long the tensor is

TEST(LargeSums, MeanOfTwentyMillionOnes) {
  EXPECT_FLOAT_EQ(Tensor::ones({20000000}).mean().item<float>(), 1.0f);
  EXPECT_FLOAT_EQ(Tensor::ones({20000000}).sum().item<float>(), 2e7f);
}

TEST(LargeSums, TwoToTheTwentyFourRandomValues) {
  Tensor::manual_seed(7);
  Tensor x = Tensor::uniform({1 << 24}, 0.1, 1.0);
  std::vector<float> v = x.to_vector<float>();
  double want = 0;
  for (float f : v) want += f;
  // float32 pairwise/blocked summation: relative error ~1e-6; one running float32 total is ~1e-2 off
  EXPECT_NEAR(x.sum().item<float>(), want, want * 1e-5);
  EXPECT_NEAR(x.mean().item<float>(), want / v.size(), want / v.size() * 1e-5);
}

// ---- a reshape of a contiguous copy reads back

TEST(Readback, ContiguousThenReshape) {
  std::vector<float> v{1, 2, 3, 4, 5, 6};
  Tensor t = Tensor::from_vector<float>(v, {6}).contiguous().reshape({2, 3});
  EXPECT_EQ(t.to_vector<float>(), v);
  EXPECT_EQ(t.shape(), (kiln::Shape{2, 3}));
  EXPECT_EQ(t.transpose().contiguous().to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

// ---- min/argmin of signed integers holding the type's minimum (-x overflows there)

TEST(SignedMinimum, MinAndArgmin) {
  EXPECT_EQ(vec<int32_t>({0, INT32_MIN, 5}).min().item<int32_t>(), INT32_MIN);
  EXPECT_EQ(vec<int8_t>({3, -128, 5}).argmin(0).item<int32_t>(), 1);
  EXPECT_EQ(vec<int8_t>({3, -128, 5}).min().item<int8_t>(), -128);
  EXPECT_EQ(vec<int64_t>({INT64_MIN, 0, INT64_MAX}).min().item<int64_t>(), INT64_MIN);
  EXPECT_EQ(vec<int16_t>({7, INT16_MIN, INT16_MIN}).argmin(0).item<int32_t>(), 1);  // the first of ties
  EXPECT_EQ(vec<uint8_t>({7, 0, 255}).min().item<uint8_t>(), 0);
  EXPECT_EQ(vec<uint64_t>({UINT64_MAX, 9}).min().item<uint64_t>(), 9u);
  EXPECT_EQ(vec<bool>({true, false}).min().item<bool>(), false);
}

// ---- NaN propagates as in PyTorch; comparisons with NaN are false (IEEE)

TEST(NaN, PropagatesWhereverItStands) {
  const float nan = std::nanf("");
  for (const std::vector<float>& v : {std::vector<float>{nan, 1, 2}, {1, nan, 2}, {1, 2, nan}}) {
    EXPECT_TRUE(std::isnan(vec(v).max().item<float>()));
    EXPECT_TRUE(std::isnan(vec(v).min().item<float>()));
    int32_t at = static_cast<int32_t>(std::find_if(v.begin(), v.end(), [](float f) { return std::isnan(f); }) - v.begin());
    EXPECT_EQ(vec(v).argmax(0).item<int32_t>(), at);
    EXPECT_EQ(vec(v).argmin(0).item<int32_t>(), at);
  }
  std::vector<float> r = vec<float>({nan, -1, 2}).relu().to_vector<float>();
  EXPECT_TRUE(std::isnan(r[0]));
  EXPECT_EQ(r[1], 0.0f);
  EXPECT_EQ(r[2], 2.0f);
  EXPECT_TRUE(std::isnan(vec<float>({nan}).clip(0, 1).item<float>()));
  EXPECT_TRUE(std::isnan(vec<float>({nan}).maximum(0.0f).item<float>()));
  EXPECT_TRUE(std::isnan(vec<float>({nan}).minimum(0.0f).item<float>()));
}

TEST(NaN, ComparisonsAreFalse) {
  const float nan = std::nanf("");
  Tensor a = vec<float>({nan, nan, 1, 1, 2}), b = vec<float>({nan, 1, nan, 1, 1});
  std::vector<float> x{nan, nan, 1, 1, 2}, y{nan, 1, nan, 1, 1};
  std::vector<bool> le, ge, lt, gt;
  for (size_t i = 0; i < x.size(); i++) {
    le.push_back(x[i] <= y[i]);
    ge.push_back(x[i] >= y[i]);
    lt.push_back(x[i] < y[i]);
    gt.push_back(x[i] > y[i]);
  }
  EXPECT_EQ(a.le(b).to_vector<bool>(), le);
  EXPECT_EQ(a.ge(b).to_vector<bool>(), ge);
  EXPECT_EQ(a.lt(b).to_vector<bool>(), lt);
  EXPECT_EQ(a.gt(b).to_vector<bool>(), gt);
}

TEST(NaN, ClassificationMatchesStd) {
  const float inf = INFINITY, nan = std::nanf("");
  std::vector<float> v{nan, inf, -inf, 0.0f, -1.5f, 3e38f, 1e-40f};
  std::vector<bool> isnan, isinf, ispos, isneg, isfinite;
  for (float f : v) {
    isnan.push_back(std::isnan(f));
    isinf.push_back(std::isinf(f));
    ispos.push_back(std::isinf(f) && f > 0);
    isneg.push_back(std::isinf(f) && f < 0);
    isfinite.push_back(std::isfinite(f));
  }
  EXPECT_EQ(vec(v).isnan().to_vector<bool>(), isnan);
  EXPECT_EQ(vec(v).isinf().to_vector<bool>(), isinf);
  EXPECT_EQ(vec(v).isinf(true, false).to_vector<bool>(), ispos);
  EXPECT_EQ(vec(v).isinf(false, true).to_vector<bool>(), isneg);
  EXPECT_EQ(vec(v).isfinite().to_vector<bool>(), isfinite);
  EXPECT_EQ(vec<int32_t>({1, 2}).isfinite().to_vector<bool>(), (std::vector<bool>{true, true}));
}

TEST(AnyAll, MatchLoopsOverAxes) {
  std::vector<int32_t> v{0, 0, 0, 1, 0, 2, 3, 4, 5, 0, 0, 0};  // (3, 4)
  Tensor t = Tensor::from_vector<int32_t>(v, {3, 4});
  std::vector<bool> any_rows, all_rows, any_cols, all_cols;
  for (int r = 0; r < 3; r++) {
    bool a = false, b = true;
    for (int c = 0; c < 4; c++) a |= v[r * 4 + c] != 0, b &= v[r * 4 + c] != 0;
    any_rows.push_back(a);
    all_rows.push_back(b);
  }
  for (int c = 0; c < 4; c++) {
    bool a = false, b = true;
    for (int r = 0; r < 3; r++) a |= v[r * 4 + c] != 0, b &= v[r * 4 + c] != 0;
    any_cols.push_back(a);
    all_cols.push_back(b);
  }
  EXPECT_EQ(t.any({1}).to_vector<bool>(), any_rows);
  EXPECT_EQ(t.all({1}).to_vector<bool>(), all_rows);
  EXPECT_EQ(t.any({0}).to_vector<bool>(), any_cols);
  EXPECT_EQ(t.all({0}).to_vector<bool>(), all_cols);
  EXPECT_EQ(t.any().item<bool>(), true);
  EXPECT_EQ(t.all().item<bool>(), false);
  EXPECT_EQ(t.any({1}, true).shape(), (kiln::Shape{3, 1}));
  EXPECT_EQ(vec<float>({std::nanf("")}).any().item<bool>(), true);  // NaN is nonzero
}

// ---- round is half-to-even everywhere, including where x + 0.5 is not exact

TEST(Round, MatchesNearbyintAcrossMagnitudes) {
  std::vector<float> v{8388609.f, 8388611.f, 4194304.5f, 4194305.5f, -4194304.5f, 0.49999997f, -0.49999997f,
                       2.5f,      3.5f,      -2.5f,      1e30f,      -0.3f,       16777215.f,  0.5f};
  for (int k = 0; k < 256; k++) v.push_back(static_cast<float>((1 << 22) + 0.5 * k));  // float32 steps there: 0.5
  for (int k = 0; k < 256; k++) v.push_back(static_cast<float>(-(1 << 21) - 0.25 * k));
  std::vector<float> want;
  for (float f : v) want.push_back(std::nearbyint(f));  // the default rounding mode is half-to-even
  EXPECT_EQ(vec(v).round().to_vector<float>(), want);
  std::vector<float> special = vec<float>({INFINITY, -INFINITY, std::nanf("")}).round().to_vector<float>();
  EXPECT_EQ(special[0], INFINITY);
  EXPECT_EQ(special[1], -INFINITY);
  EXPECT_TRUE(std::isnan(special[2]));
}

// ---- 64-bit integer scalars stay exact (a double would round them above 2^53)

TEST(Int64Scalars, StayExact) {
  const int64_t big = (int64_t{1} << 53) + 1;
  EXPECT_EQ((vec<int64_t>({0, 1}) + big).to_vector<int64_t>(), (std::vector<int64_t>{big, big + 1}));
  EXPECT_EQ((big - vec<int64_t>({0})).item<int64_t>(), big);
  EXPECT_EQ(Tensor::full({2}, big, dtypes::int64).to_vector<int64_t>(), (std::vector<int64_t>{big, big}));
  EXPECT_EQ(vec<int64_t>({big}).eq(big).item<bool>(), true);
  EXPECT_EQ(vec<int64_t>({big - 1}).eq(big).item<bool>(), false);
  const uint64_t top = UINT64_MAX - 2;
  EXPECT_EQ(Tensor::full({1}, top, dtypes::uint64).item<uint64_t>(), top);
  EXPECT_EQ((vec<uint64_t>({1}) + top).item<uint64_t>(), top + 1);
  // an integer scalar on a float tensor is converted once, by value
  EXPECT_FLOAT_EQ(Tensor::full({1}, top, dtypes::float32).item<float>(), static_cast<float>(top));
}

// ---- logsumexp with infinities follows PyTorch

TEST(Logsumexp, Infinities) {
  const float inf = INFINITY;
  EXPECT_EQ(vec<float>({-inf, -inf}).logsumexp(0).item<float>(), -inf);
  EXPECT_EQ(vec<float>({inf, 0}).logsumexp(0).item<float>(), inf);
  EXPECT_EQ(vec<float>({inf, inf}).logsumexp(0).item<float>(), inf);
  EXPECT_EQ(vec<float>({inf, -inf}).logsumexp(0).item<float>(), inf);
  EXPECT_TRUE(std::isnan(vec<float>({std::nanf(""), 1}).logsumexp(0).item<float>()));
  // finite rows keep the max shift: exp(1000) alone would overflow
  double want = 1000 + std::log(1 + std::exp(-1.0));
  EXPECT_NEAR(vec<float>({1000, 999}).logsumexp(0).item<float>(), want, 1e-3);
  std::vector<float> rows =
      Tensor::from_vector<float>({-inf, -inf, 1, 2}, {2, 2}).logsumexp(1).to_vector<float>();
  EXPECT_EQ(rows[0], -inf);
  EXPECT_NEAR(rows[1], 2 + std::log(1 + std::exp(-1.0)), 1e-6);
}

// ---- bitwise ops (min of integers is built on bitwise_not)

TEST(Bitwise, MatchesCxxOperators) {
  std::vector<int16_t> a{0x0f0f, -1, 12345, INT16_MIN}, b{0x00ff, 0x1234, -77, 1};
  std::vector<int16_t> band, bor, bxor, bnot;
  for (size_t i = 0; i < a.size(); i++) {
    band.push_back(static_cast<int16_t>(a[i] & b[i]));
    bor.push_back(static_cast<int16_t>(a[i] | b[i]));
    bxor.push_back(static_cast<int16_t>(a[i] ^ b[i]));
    bnot.push_back(static_cast<int16_t>(~a[i]));
  }
  EXPECT_EQ(vec(a).bitwise_and(vec(b)).to_vector<int16_t>(), band);
  EXPECT_EQ(vec(a).bitwise_or(vec(b)).to_vector<int16_t>(), bor);
  EXPECT_EQ(vec(a).bitwise_xor(vec(b)).to_vector<int16_t>(), bxor);
  EXPECT_EQ(vec(a).bitwise_not().to_vector<int16_t>(), bnot);
  EXPECT_EQ(vec<uint64_t>({0, 5}).bitwise_not().to_vector<uint64_t>(), (std::vector<uint64_t>{~uint64_t{0}, ~uint64_t{5}}));
  EXPECT_EQ(vec<bool>({true, false}).bitwise_not().to_vector<bool>(), (std::vector<bool>{false, true}));
  EXPECT_THROW(vec<float>({1}).bitwise_and(vec<float>({1})), kiln::Error);
}

// ---- one lazy tensor read from several threads at once

TEST(Threads, SharedLazyTensorReadConcurrently) {
  constexpr int kThreads = 4, kTries = 40;
  std::atomic<int> wrong{0};
  for (int attempt = 0; attempt < kTries; attempt++) {
    // the offset is data, not a constant, so every attempt runs the same (cached) kernels
    Tensor x = Tensor::arange(0, 1000, 1, dtypes::float32), offset = vec<float>({static_cast<float>(attempt)});
    Tensor shared = (x * 2.0f + offset).sum();  // lazy: nothing has run
    const float want = 999000.0f + 1000.0f * attempt;
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; i++)
      threads.emplace_back([&, i] {
        try {
          // half the threads read it, half build on it first
          float got = i % 2 ? shared.item<float>() : (shared + 1.0f).item<float>() - 1.0f;
          if (got != want) wrong++;
        } catch (const std::exception&) {
          wrong++;
        }
      });
    for (std::thread& t : threads) t.join();
  }
  EXPECT_EQ(wrong.load(), 0);
}

TEST(Threads, SeparateTensorsInSeparateThreads) {
  (Tensor::ones({64}) * vec<float>({1.0f})).sum().realize();  // compiled once, before the threads
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; i++)
    threads.emplace_back([&, i] {
      for (int k = 0; k < 20; k++) {
        Tensor t = (Tensor::ones({64}) * vec<float>({static_cast<float>(i + k)})).sum();
        if (t.item<float>() != 64.0f * (i + k)) wrong++;
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
