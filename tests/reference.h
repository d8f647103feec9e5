#pragma once
// Shared helpers of kiln's operator tests.
//
// Part 1 (namespace ref) is a tiny reference implementation that is independent of kiln: an
// n-dimensional array of doubles (row-major) and naive index loops for broadcasting, elementwise
// maps, reductions, movement ops, matmul and softmax, plus a seeded LCG for test data and
// `expect_close` to compare results. It uses only the standard library and GoogleTest.
//
// Part 2 (namespace kt) bridges the reference to kiln: building a kiln::Tensor of any dtype from an
// NdArray and reading any tensor back as doubles, plus per-dtype tolerances.
//
// Tolerances (|got - want| <= atol + rtol * |want|):
//   float32  rtol 1e-4, atol 1e-5   (the default of expect_close)
//   float64  rtol 1e-10, atol 1e-12
//   float16  rtol 1e-3, atol 1e-3   (10-bit mantissa: half an ulp is ~4.9e-4 relative)
//   bfloat16 rtol 1e-2, atol 1e-2   (7-bit mantissa: half an ulp is ~3.9e-3 relative)
//   fp8      rtol = atol = half an ulp relative: 2^-4 for e4m3 (3-bit mantissa), 2^-3 for e5m2 (2 bits)
//   integers and bool: exact (rtol 0, atol 0); integer results wrap like the C++ type.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/tensor.h"

namespace ref {

using Shape = std::vector<int64_t>;
using Index = std::vector<int64_t>;

inline int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

inline std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < s.size(); i++) os << (i ? ", " : "") << s[i];
  os << (s.size() == 1 ? ",)" : ")");
  return os.str();
}

inline Shape strides_of(const Shape& s) {
  Shape st(s.size(), 1);
  for (int64_t i = static_cast<int64_t>(s.size()) - 2; i >= 0; i--) st[i] = st[i + 1] * s[i + 1];
  return st;
}

// Flat row-major position <-> multi-index.
inline Index unravel(int64_t flat, const Shape& s) {
  Index idx(s.size(), 0);
  for (int64_t i = static_cast<int64_t>(s.size()) - 1; i >= 0; i--) {
    idx[i] = flat % s[i];
    flat /= s[i];
  }
  return idx;
}

inline int64_t ravel(const Index& idx, const Shape& s) {
  int64_t flat = 0;
  for (size_t i = 0; i < s.size(); i++) flat = flat * s[i] + idx[i];
  return flat;
}

inline std::string index_str(const Index& idx) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < idx.size(); i++) os << (i ? ", " : "") << idx[i];
  os << "]";
  return os.str();
}

struct NdArray {
  Shape shape;
  std::vector<double> data;

  NdArray() = default;
  explicit NdArray(Shape s, double fill = 0) : shape(std::move(s)), data(numel(shape), fill) {}
  NdArray(Shape s, std::vector<double> d) : shape(std::move(s)), data(std::move(d)) {
    if (static_cast<int64_t>(data.size()) != numel(shape))
      throw std::invalid_argument("NdArray: " + std::to_string(data.size()) + " values for shape " + shape_str(shape));
  }

  int64_t size() const { return static_cast<int64_t>(data.size()); }
  int64_t ndim() const { return static_cast<int64_t>(shape.size()); }
  double& at(const Index& idx) { return data[ravel(idx, shape)]; }
  double at(const Index& idx) const { return data[ravel(idx, shape)]; }
};

inline int norm_axis(int axis, int64_t ndim) {
  int a = axis < 0 ? axis + static_cast<int>(ndim) : axis;
  if (a < 0 || a >= ndim) throw std::out_of_range("ref: axis " + std::to_string(axis) + " out of range");
  return a;
}

// ---- broadcasting (NumPy rules: align at the right, size-1 dims stretch)
inline Shape broadcast_shape(const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; i++) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw std::invalid_argument("ref: cannot broadcast " + shape_str(a) + " with " + shape_str(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

inline Shape broadcast_shape(const Shape& a, const Shape& b, const Shape& c) {
  return broadcast_shape(broadcast_shape(a, b), c);
}

// NumPy broadcast_to: new leading dims may be added; size-1 dims stretch.
inline NdArray expand(const NdArray& a, const Shape& to) {
  if (broadcast_shape(a.shape, to) != to)
    throw std::invalid_argument("ref: cannot expand " + shape_str(a.shape) + " to " + shape_str(to));
  NdArray out(to);
  size_t lead = to.size() - a.shape.size();
  Index src(a.shape.size());
  for (int64_t f = 0; f < out.size(); f++) {
    Index idx = unravel(f, to);
    for (size_t i = 0; i < a.shape.size(); i++) src[i] = a.shape[i] == 1 ? 0 : idx[i + lead];
    out.data[f] = a.at(src);
  }
  return out;
}

// ---- elementwise
template <class F>
NdArray map(const NdArray& a, F f) {
  NdArray out(a.shape);
  for (int64_t i = 0; i < a.size(); i++) out.data[i] = f(a.data[i]);
  return out;
}

template <class F>
NdArray zip(const NdArray& a, const NdArray& b, F f) {
  Shape s = broadcast_shape(a.shape, b.shape);
  NdArray ea = expand(a, s), eb = expand(b, s), out(s);
  for (int64_t i = 0; i < out.size(); i++) out.data[i] = f(ea.data[i], eb.data[i]);
  return out;
}

template <class F>
NdArray zip3(const NdArray& a, const NdArray& b, const NdArray& c, F f) {
  Shape s = broadcast_shape(a.shape, b.shape, c.shape);
  NdArray ea = expand(a, s), eb = expand(b, s), ec = expand(c, s), out(s);
  for (int64_t i = 0; i < out.size(); i++) out.data[i] = f(ea.data[i], eb.data[i], ec.data[i]);
  return out;
}

inline NdArray where(const NdArray& cond, const NdArray& t, const NdArray& f) {
  return zip3(cond, t, f, [](double c, double x, double y) { return c != 0 ? x : y; });
}

// ---- reductions: `axes` may be negative; empty = all axes.
inline std::vector<bool> reduced_mask(const Shape& s, const std::vector<int>& axes) {
  std::vector<bool> mask(s.size(), axes.empty());
  for (int a : axes) mask[norm_axis(a, static_cast<int64_t>(s.size()))] = true;
  return mask;
}

inline Shape reduced_shape(const Shape& s, const std::vector<int>& axes, bool keepdim) {
  std::vector<bool> mask = reduced_mask(s, axes);
  Shape out;
  for (size_t i = 0; i < s.size(); i++) {
    if (!mask[i])
      out.push_back(s[i]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

template <class F>
NdArray reduce(const NdArray& a, const std::vector<int>& axes, bool keepdim, double init, F f) {
  std::vector<bool> mask = reduced_mask(a.shape, axes);
  Shape kept = reduced_shape(a.shape, axes, true);
  NdArray acc(kept, init);
  Index dst(a.shape.size());
  for (int64_t i = 0; i < a.size(); i++) {
    Index idx = unravel(i, a.shape);
    for (size_t d = 0; d < idx.size(); d++) dst[d] = mask[d] ? 0 : idx[d];
    double& slot = acc.at(dst);
    slot = f(slot, a.data[i]);
  }
  acc.shape = reduced_shape(a.shape, axes, keepdim);
  return acc;
}

inline NdArray sum(const NdArray& a, const std::vector<int>& axes = {}, bool keepdim = false) {
  return reduce(a, axes, keepdim, 0.0, [](double x, double y) { return x + y; });
}
inline NdArray prod(const NdArray& a, const std::vector<int>& axes = {}, bool keepdim = false) {
  return reduce(a, axes, keepdim, 1.0, [](double x, double y) { return x * y; });
}
inline NdArray max(const NdArray& a, const std::vector<int>& axes = {}, bool keepdim = false) {
  return reduce(a, axes, keepdim, -std::numeric_limits<double>::infinity(),
                [](double x, double y) { return std::max(x, y); });
}
inline NdArray min(const NdArray& a, const std::vector<int>& axes = {}, bool keepdim = false) {
  return reduce(a, axes, keepdim, std::numeric_limits<double>::infinity(),
                [](double x, double y) { return std::min(x, y); });
}
inline NdArray mean(const NdArray& a, const std::vector<int>& axes = {}, bool keepdim = false) {
  NdArray s = sum(a, axes, keepdim);
  double count = static_cast<double>(a.size()) / std::max<double>(1, static_cast<double>(s.size()));
  if (a.size() == 0) count = 0;
  for (double& v : s.data) v /= count;
  return s;
}

// Index of the first maximum along `axis` (NumPy's tie rule).
inline NdArray argmax(const NdArray& a, int axis, bool keepdim = false) {
  int ax = norm_axis(axis, a.ndim());
  Shape kept = a.shape;
  kept[ax] = 1;
  NdArray best(kept, -std::numeric_limits<double>::infinity()), arg(kept, 0);
  for (int64_t i = 0; i < a.size(); i++) {
    Index idx = unravel(i, a.shape);
    int64_t pos = idx[ax];
    idx[ax] = 0;
    double& b = best.at(idx);
    if (a.data[i] > b) {
      b = a.data[i];
      arg.at(idx) = static_cast<double>(pos);
    }
  }
  arg.shape = reduced_shape(a.shape, {ax}, keepdim);
  return arg;
}

inline NdArray argmin(const NdArray& a, int axis, bool keepdim = false) {
  return argmax(map(a, [](double v) { return -v; }), axis, keepdim);
}

// ---- movement, each by naive index loops over the output
inline NdArray reshape(const NdArray& a, Shape s) {
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == -1)
      infer = static_cast<int64_t>(i);
    else
      known *= s[i];
  }
  if (infer >= 0) s[infer] = known == 0 ? 0 : a.size() / known;
  return NdArray(s, a.data);
}

inline NdArray permute(const NdArray& a, const std::vector<int>& order) {
  Shape s(order.size());
  for (size_t i = 0; i < order.size(); i++) s[i] = a.shape[norm_axis(order[i], a.ndim())];
  NdArray out(s);
  Index src(a.shape.size());
  for (int64_t f = 0; f < out.size(); f++) {
    Index idx = unravel(f, s);
    for (size_t i = 0; i < order.size(); i++) src[norm_axis(order[i], a.ndim())] = idx[i];
    out.data[f] = a.at(src);
  }
  return out;
}

inline NdArray transpose(const NdArray& a, int x = 0, int y = 1) {
  std::vector<int> order(a.shape.size());
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[norm_axis(x, a.ndim())], order[norm_axis(y, a.ndim())]);
  return permute(a, order);
}

inline NdArray pad(const NdArray& a, const std::vector<std::pair<int64_t, int64_t>>& p, double fill = 0) {
  Shape s = a.shape;
  for (size_t i = 0; i < s.size(); i++) s[i] += p[i].first + p[i].second;
  NdArray out(s, fill);
  for (int64_t f = 0; f < a.size(); f++) {
    Index idx = unravel(f, a.shape);
    for (size_t i = 0; i < idx.size(); i++) idx[i] += p[i].first;
    out.at(idx) = a.data[f];
  }
  return out;
}

inline NdArray shrink(const NdArray& a, const std::vector<std::pair<int64_t, int64_t>>& b) {
  Shape s(a.shape.size());
  for (size_t i = 0; i < s.size(); i++) s[i] = b[i].second - b[i].first;
  NdArray out(s);
  for (int64_t f = 0; f < out.size(); f++) {
    Index idx = unravel(f, s);
    for (size_t i = 0; i < idx.size(); i++) idx[i] += b[i].first;
    out.data[f] = a.at(idx);
  }
  return out;
}

inline NdArray flip(const NdArray& a, const std::vector<int>& axes) {
  std::vector<bool> mask(a.shape.size(), false);
  for (int ax : axes) mask[norm_axis(ax, a.ndim())] = true;
  NdArray out(a.shape);
  for (int64_t f = 0; f < out.size(); f++) {
    Index idx = unravel(f, a.shape);
    for (size_t i = 0; i < idx.size(); i++)
      if (mask[i]) idx[i] = a.shape[i] - 1 - idx[i];
    out.data[f] = a.at(idx);
  }
  return out;
}

// ---- matmul with NumPy semantics: 1-D operands gain (and lose) a dim; batch dims broadcast.
inline NdArray matmul(const NdArray& a0, const NdArray& b0) {
  NdArray a = a0, b = b0;
  bool a_vec = a.ndim() == 1, b_vec = b.ndim() == 1;
  if (a_vec) a.shape.insert(a.shape.begin(), 1);
  if (b_vec) b.shape.push_back(1);
  int64_t n = a.shape[a.ndim() - 2], k = a.shape[a.ndim() - 1];
  int64_t k2 = b.shape[b.ndim() - 2], m = b.shape[b.ndim() - 1];
  if (k != k2) throw std::invalid_argument("ref: matmul inner dims differ");
  Shape ab(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
  Shape batch = broadcast_shape(ab, bb);
  Shape as = batch, bs = batch;
  as.insert(as.end(), {n, k});
  bs.insert(bs.end(), {k, m});
  NdArray ea = expand(a, as), eb = expand(b, bs);
  Shape os = batch;
  os.insert(os.end(), {n, m});
  NdArray out(os);
  int64_t nb = numel(batch);
  for (int64_t t = 0; t < nb; t++)
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < m; j++) {
        double acc = 0;
        for (int64_t q = 0; q < k; q++) acc += ea.data[(t * n + i) * k + q] * eb.data[(t * k + q) * m + j];
        out.data[(t * n + i) * m + j] = acc;
      }
  if (a_vec) out.shape.erase(out.shape.end() - 2);
  if (b_vec) out.shape.erase(out.shape.end() - 1);
  return out;
}

// ---- softmax family along one axis, in double
inline NdArray log_softmax(const NdArray& a, int axis) {
  int ax = norm_axis(axis, a.ndim());
  NdArray mx = expand(max(a, {ax}, true), a.shape);
  NdArray shifted = zip(a, mx, [](double x, double m) { return x - m; });
  NdArray lse = expand(
      map(sum(map(shifted, [](double v) { return std::exp(v); }), {ax}, true), [](double v) { return std::log(v); }),
      a.shape);
  return zip(shifted, lse, [](double x, double l) { return x - l; });
}

inline NdArray softmax(const NdArray& a, int axis) {
  return map(log_softmax(a, axis), [](double v) { return std::exp(v); });
}

inline NdArray logsumexp(const NdArray& a, int axis, bool keepdim = false) {
  int ax = norm_axis(axis, a.ndim());
  NdArray mx = max(a, {ax}, true);
  NdArray shifted = zip(a, expand(mx, a.shape), [](double x, double m) { return x - m; });
  NdArray s = sum(map(shifted, [](double v) { return std::exp(v); }), {ax}, true);
  NdArray out = zip(s, mx, [](double v, double m) { return std::log(v) + m; });
  out.shape = reduced_shape(a.shape, {ax}, keepdim);
  return out;
}

// ---- deterministic test data: a 64-bit LCG (Knuth's MMIX constants), top bits used.
struct Lcg {
  uint64_t state;
  explicit Lcg(uint64_t seed) : state(seed * 2862933555777941757ULL + 3037000493ULL) {}
  uint64_t next() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 11;  // 53 random bits
  }
  double uniform() { return static_cast<double>(next()) / 9007199254740992.0; }  // [0, 1)
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  int64_t integer(int64_t lo, int64_t hi) {  // [lo, hi]
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
};

// Uniform values in [lo, hi) (negative when lo < 0).
inline NdArray random(const Shape& s, uint64_t seed, double lo = -1, double hi = 1) {
  Lcg rng(seed);
  NdArray out(s);
  for (double& v : out.data) v = rng.uniform(lo, hi);
  return out;
}

// Integers in [lo, hi].
inline NdArray random_int(const Shape& s, uint64_t seed, int64_t lo, int64_t hi) {
  Lcg rng(seed);
  NdArray out(s);
  for (double& v : out.data) v = static_cast<double>(rng.integer(lo, hi));
  return out;
}

// Multiples of `step` in [lo, hi]: exactly representable in float16/bfloat16 for step 1/4, |v| <= 8.
inline NdArray random_grid(const Shape& s, uint64_t seed, double lo, double hi, double step) {
  Lcg rng(seed);
  NdArray out(s);
  int64_t a = static_cast<int64_t>(std::ceil(lo / step)), b = static_cast<int64_t>(std::floor(hi / step));
  for (double& v : out.data) v = static_cast<double>(rng.integer(a, b)) * step;
  return out;
}

// ---- comparison
inline bool close_enough(double got, double want, double rtol, double atol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  if (std::isnan(got) || std::isinf(got)) return false;
  return std::fabs(got - want) <= atol + rtol * std::fabs(want);
}

// Compares flat values against `want` (row-major). Reports the sizes on a size mismatch, else the
// first mismatching index (flat and multi-dim), both values and the number of mismatches.
// Use as EXPECT_TRUE(ref::expect_close(got, want)) so failures point at the caller.
template <class T>
::testing::AssertionResult expect_close(const std::vector<T>& got, const NdArray& want, double rtol = 1e-4,
                                        double atol = 1e-5) {
  if (static_cast<int64_t>(got.size()) != want.size())
    return ::testing::AssertionFailure() << "size mismatch: got " << got.size() << " values, expected " << want.size()
                                         << " (shape " << shape_str(want.shape) << ")";
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < want.size(); i++) {
    double g = static_cast<double>(got[i]);
    if (!close_enough(g, want.data[i], rtol, atol)) {
      if (first < 0) first = i;
      bad++;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  std::ostringstream os;
  os.precision(10);
  os << bad << " of " << want.size() << " values differ (rtol " << rtol << ", atol " << atol << "); first at flat "
     << first << " index " << index_str(unravel(first, want.shape)) << " of shape " << shape_str(want.shape) << ": got "
     << static_cast<double>(got[first]) << ", expected " << want.data[first];
  return ::testing::AssertionFailure() << os.str();
}

template <class T>
::testing::AssertionResult expect_close(const std::vector<T>& got, const std::vector<double>& want, double rtol = 1e-4,
                                        double atol = 1e-5) {
  return expect_close(got, NdArray(Shape{static_cast<int64_t>(want.size())}, want), rtol, atol);
}

}  // namespace ref

// =====================================================================================================
// Part 2: bridging the reference and kiln.
namespace kiln {
// Readable DType values in GoogleTest failure messages.
inline void PrintTo(const DType& d, std::ostream* os) { *os << d.name(); }
}  // namespace kiln

namespace kt {

// Random values that `dt` holds exactly: 0/1 for bool, [unsigned_lo, 100] for unsigned types,
// [-100, 100] for signed ones, multiples of 1/4 in [-8, 8] for floats.
inline ref::NdArray random_for(kiln::DType dt, const ref::Shape& s, uint64_t seed, int64_t unsigned_lo = 0) {
  if (dt.is_bool()) return ref::random_int(s, seed, 0, 1);
  if (dt.is_unsigned()) return ref::random_int(s, seed, unsigned_lo, 100);
  if (dt.is_int()) return ref::random_int(s, seed, -100, 100);
  if (dt.is_fp8()) return ref::random_grid(s, seed, -2, 2, 0.25);  // exact with a 2-bit mantissa
  return ref::random_grid(s, seed, -8, 8, 0.25);
}

using kiln::DType;
using kiln::Tensor;
using ref::NdArray;

struct Tol {
  double rtol, atol;
};

inline Tol tol_for(DType dt) {
  switch (dt.scalar) {
    case kiln::ScalarType::Float16:
      return {1e-3, 1e-3};
    case kiln::ScalarType::BFloat16:
      return {1e-2, 1e-2};
    case kiln::ScalarType::Float32:
      return {1e-4, 1e-5};
    case kiln::ScalarType::Float64:
      return {1e-10, 1e-12};
    case kiln::ScalarType::Fp8E4M3:
    case kiln::ScalarType::Fp8E4M3FNUZ:
      return {0x1p-4, 0x1p-4};
    case kiln::ScalarType::Fp8E5M2:
    case kiln::ScalarType::Fp8E5M2FNUZ:
      return {0x1p-3, 0x1p-3};
    default:
      return {0, 0};
  }
}

// A double converted like a C++ static_cast to the dtype's element type (integers wrap modulo 2^n,
// floats to integers truncate toward zero). Float16/bfloat16 are left unrounded (tolerances cover them).
inline double wrap(double v, DType dt) {
  auto via = [&](auto zero) {  // through int64: modular conversion, defined for negatives too
    using T = decltype(zero);
    return static_cast<double>(static_cast<T>(static_cast<int64_t>(v)));
  };
  switch (dt.scalar) {
    case kiln::ScalarType::Bool:
      return v != 0 ? 1 : 0;
    case kiln::ScalarType::Int8:
      return via(int8_t{});
    case kiln::ScalarType::Int16:
      return via(int16_t{});
    case kiln::ScalarType::Int32:
      return via(int32_t{});
    case kiln::ScalarType::Int64:
      return via(int64_t{});
    case kiln::ScalarType::UInt8:
      return via(uint8_t{});
    case kiln::ScalarType::UInt16:
      return via(uint16_t{});
    case kiln::ScalarType::UInt32:
      return via(uint32_t{});
    case kiln::ScalarType::UInt64:
      return via(uint64_t{});
    case kiln::ScalarType::Float32:
      return static_cast<double>(static_cast<float>(v));
    default:
      return v;
  }
}

inline NdArray wrap(const NdArray& a, DType dt) {
  return ref::map(a, [dt](double v) { return wrap(v, dt); });
}

template <class T>
std::vector<T> converted(const std::vector<double>& v) {
  std::vector<T> out;
  out.reserve(v.size());
  for (double x : v) {
    if constexpr (std::is_same_v<T, bool>)
      out.push_back(x != 0);
    else if constexpr (std::is_integral_v<T>)
      out.push_back(static_cast<T>(static_cast<int64_t>(x)));
    else
      out.push_back(static_cast<T>(x));
  }
  return out;
}

// A kiln tensor holding `a` (converted to `dt`). float16/bfloat16/fp8s have no C++ element type: they
// are created as float32 and cast.
inline Tensor make(const NdArray& a, DType dt = kiln::dtypes::float32) {
  const auto& d = a.data;
  switch (dt.scalar) {
    case kiln::ScalarType::Bool:
      return Tensor::from_vector<bool>(converted<bool>(d), a.shape);
    case kiln::ScalarType::Int8:
      return Tensor::from_vector<int8_t>(converted<int8_t>(d), a.shape);
    case kiln::ScalarType::Int16:
      return Tensor::from_vector<int16_t>(converted<int16_t>(d), a.shape);
    case kiln::ScalarType::Int32:
      return Tensor::from_vector<int32_t>(converted<int32_t>(d), a.shape);
    case kiln::ScalarType::Int64:
      return Tensor::from_vector<int64_t>(converted<int64_t>(d), a.shape);
    case kiln::ScalarType::UInt8:
      return Tensor::from_vector<uint8_t>(converted<uint8_t>(d), a.shape);
    case kiln::ScalarType::UInt16:
      return Tensor::from_vector<uint16_t>(converted<uint16_t>(d), a.shape);
    case kiln::ScalarType::UInt32:
      return Tensor::from_vector<uint32_t>(converted<uint32_t>(d), a.shape);
    case kiln::ScalarType::UInt64:
      return Tensor::from_vector<uint64_t>(converted<uint64_t>(d), a.shape);
    case kiln::ScalarType::Float16:
    case kiln::ScalarType::BFloat16:
    case kiln::ScalarType::Fp8E4M3:
    case kiln::ScalarType::Fp8E5M2:
    case kiln::ScalarType::Fp8E4M3FNUZ:
    case kiln::ScalarType::Fp8E5M2FNUZ:
      return Tensor::from_vector<float>(converted<float>(d), a.shape).cast(dt);
    case kiln::ScalarType::Float32:
      return Tensor::from_vector<float>(converted<float>(d), a.shape);
    case kiln::ScalarType::Float64:
      return Tensor::from_vector<double>(converted<double>(d), a.shape);
    default:
      throw std::invalid_argument("kt::make: unsupported dtype " + dt.name());
  }
}

// float64 inputs for reference comparisons, and the tolerance of float64 results (composite ops
// round a few times).
inline Tensor f64(const NdArray& a) { return make(a, kiln::dtypes::float64); }
inline Tensor i32(const NdArray& a) { return make(a, kiln::dtypes::int32); }
inline constexpr Tol kF64{1e-10, 1e-12};

template <class T>
std::vector<double> as_doubles(const std::vector<T>& v) {
  std::vector<double> out;
  out.reserve(v.size());
  for (auto x : v) out.push_back(static_cast<double>(x));
  return out;
}

// Reads any tensor back as doubles, through to_vector<T> with T the tensor's exact element type
// (float16/bfloat16/fp8s are cast to float32 first).
inline std::vector<double> read(const Tensor& t) {
  switch (t.dtype().scalar) {
    case kiln::ScalarType::Bool:
      return as_doubles(t.to_vector<bool>());
    case kiln::ScalarType::Int8:
      return as_doubles(t.to_vector<int8_t>());
    case kiln::ScalarType::Int16:
      return as_doubles(t.to_vector<int16_t>());
    case kiln::ScalarType::Int32:
      return as_doubles(t.to_vector<int32_t>());
    case kiln::ScalarType::Int64:
      return as_doubles(t.to_vector<int64_t>());
    case kiln::ScalarType::UInt8:
      return as_doubles(t.to_vector<uint8_t>());
    case kiln::ScalarType::UInt16:
      return as_doubles(t.to_vector<uint16_t>());
    case kiln::ScalarType::UInt32:
      return as_doubles(t.to_vector<uint32_t>());
    case kiln::ScalarType::UInt64:
      return as_doubles(t.to_vector<uint64_t>());
    case kiln::ScalarType::Float16:
    case kiln::ScalarType::BFloat16:
    case kiln::ScalarType::Fp8E4M3:
    case kiln::ScalarType::Fp8E5M2:
    case kiln::ScalarType::Fp8E4M3FNUZ:
    case kiln::ScalarType::Fp8E5M2FNUZ:
      return as_doubles(t.cast(kiln::dtypes::float32).to_vector<float>());
    case kiln::ScalarType::Float32:
      return as_doubles(t.to_vector<float>());
    case kiln::ScalarType::Float64:
      return as_doubles(t.to_vector<double>());
    default:
      throw std::invalid_argument("kt::read: unsupported dtype " + t.dtype().name());
  }
}

// Shape and values of `t` against `want`, with the tolerance of t's dtype unless one is given.
inline ::testing::AssertionResult matches(const Tensor& t, const NdArray& want, std::optional<Tol> tol = {}) {
  if (t.shape() != want.shape)
    return ::testing::AssertionFailure() << "shape mismatch: got " << ref::shape_str(t.shape()) << ", expected "
                                         << ref::shape_str(want.shape);
  Tol tl = tol ? *tol : tol_for(t.dtype());
  std::vector<double> got;
  try {
    got = read(t);
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "readback threw: " << e.what();
  }
  return ref::expect_close(got, want, tl.rtol, tl.atol);
}

inline std::string dtype_param_name(const ::testing::TestParamInfo<DType>& info) { return info.param.name(); }

// The numeric dtypes (every dtype but bool).
inline std::vector<DType> numeric_dtypes() {
  std::vector<DType> out;
  for (DType d : kiln::dtypes::all())
    if (!d.is_bool()) out.push_back(d);
  return out;
}

}  // namespace kt
