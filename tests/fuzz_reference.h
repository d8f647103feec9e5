#pragma once
// The reference values of the random op-graph fuzzer (test_fuzz_graphs.cpp): double-precision
// results from reference.h, each element with the scale of its float32 rounding error and a mask
// of elements too close to a tie to compare, and the tolerance they are compared with.
#include <algorithm>
#include <cmath>
#include <vector>

#include "reference.h"

namespace fuzz {

using ref::NdArray;
using ref::Shape;

// Tolerance: |got - want| <= kAtol + kRtol * scale, where `scale` (>= |want|) is the magnitude the
// result's rounding error is proportional to (see RV::mag). Looser than float32's eps (~6e-8):
// errors compound along a program. exp() amplifies its input's error by |x| (up to ~3 here), sums of
// up to ~70k terms accumulate rounding (UPCAST also changes the summation order), and softmax,
// mean and division chain several of those. A scheduling or indexing bug reads wrong elements and is
// off by O(1), far outside this.
constexpr double kRtol = 1e-3, kAtol = 1e-4;

// A reference value with, per element, an error scale and an "unreliable" mask:
//   mag  the magnitude the value's float32 rounding error scales with: |value| for well-conditioned
//        results, more after cancellation (x - y with x ~ y keeps the error of x and y) or where a
//        function amplifies its input's error (linear error propagation: |f'(x)| mag(x) + |f(x)|).
//   bad  1 where the value depends on a comparison so close to a tie (where(x > y, a, b) with x ~ y)
//        that float32 may take the other branch; such elements are not compared.
struct RV {
  NdArray v, mag, bad;
};

inline RV leaf(const NdArray& v) { return {v, ref::map(v, [](double x) { return std::fabs(x); }), NdArray(v.shape, 0.0)}; }
inline RV scalar_rv(double s) { return leaf(NdArray(Shape{}, std::vector<double>{s})); }

template <class F, class G>
RV unary(const RV& a, F f, G g) {  // f(x) the value, g(x, mag x) the error scale
  RV out{NdArray(a.v.shape), NdArray(a.v.shape), a.bad};
  for (int64_t i = 0; i < a.v.size(); i++) {
    out.v.data[i] = f(a.v.data[i]);
    out.mag.data[i] = std::max(g(a.v.data[i], a.mag.data[i]), std::fabs(out.v.data[i]));
  }
  return out;
}

inline std::vector<RV> broadcast_all(const std::vector<const RV*>& xs) {
  Shape s = xs[0]->v.shape;
  for (const RV* x : xs) s = ref::broadcast_shape(s, x->v.shape);
  std::vector<RV> out;
  for (const RV* x : xs) out.push_back({ref::expand(x->v, s), ref::expand(x->mag, s), ref::expand(x->bad, s)});
  return out;
}

template <class F, class G>
RV binary(const RV& a, const RV& b, F f, G g) {  // g(x, y, mag x, mag y)
  auto e = broadcast_all({&a, &b});
  Shape s = e[0].v.shape;
  RV out{NdArray(s), NdArray(s), NdArray(s)};
  for (int64_t i = 0; i < out.v.size(); i++) {
    double x = e[0].v.data[i], y = e[1].v.data[i];
    out.v.data[i] = f(x, y);
    out.mag.data[i] = std::max(g(x, y, e[0].mag.data[i], e[1].mag.data[i]), std::fabs(out.v.data[i]));
    out.bad.data[i] = std::max(e[0].bad.data[i], e[1].bad.data[i]);
  }
  return out;
}

// where(x > y, a, b); near-ties of x and y are marked unreliable.
inline RV where_gt(const RV& x, const RV& y, const RV& a, const RV& b) {
  auto e = broadcast_all({&x, &y, &a, &b});
  Shape s = e[0].v.shape;
  RV out{NdArray(s), NdArray(s), NdArray(s)};
  for (int64_t i = 0; i < out.v.size(); i++) {
    double xv = e[0].v.data[i], yv = e[1].v.data[i];
    bool c = xv > yv;
    const RV& pick = c ? e[2] : e[3];
    out.v.data[i] = pick.v.data[i];
    out.mag.data[i] = pick.mag.data[i];
    bool tie = std::fabs(xv - yv) <= kRtol * (e[0].mag.data[i] + e[1].mag.data[i]) + kAtol;
    double bad = std::max({e[0].bad.data[i], e[1].bad.data[i], pick.bad.data[i]});
    out.bad.data[i] = tie ? 1.0 : bad;
  }
  return out;
}

template <class F>
RV movement(const RV& a, F f) {  // the same view of the value, its scale and its mask
  return {f(a.v), f(a.mag), f(a.bad)};
}

enum class Red { Sum, Max, Mean };
inline const char* red_name(Red r) { return r == Red::Sum ? "sum" : r == Red::Max ? "max" : "mean"; }

inline RV reduce(const RV& a, Red op, const std::vector<int>& axes, bool keepdim) {
  RV out;
  if (op == Red::Sum) out = {ref::sum(a.v, axes, keepdim), ref::sum(a.mag, axes, keepdim), {}};
  if (op == Red::Max) out = {ref::max(a.v, axes, keepdim), ref::max(a.mag, axes, keepdim), {}};
  if (op == Red::Mean) out = {ref::mean(a.v, axes, keepdim), ref::mean(a.mag, axes, keepdim), {}};
  out.bad = ref::max(a.bad, axes, keepdim);
  return out;
}

inline RV matmul(const RV& a, const RV& b) {
  auto ones = [](const NdArray& x) { return ref::map(x, [](double) { return 1.0; }); };
  NdArray bad = ref::zip(ref::matmul(a.bad, ones(b.bad)), ref::matmul(ones(a.bad), b.bad),
                         [](double x, double y) { return x + y > 0 ? 1.0 : 0.0; });
  return {ref::matmul(a.v, b.v), ref::matmul(a.mag, b.mag), bad};
}

inline RV softmax(const RV& a, int axis) {
  // The relative error of e^(x - max) / sum is about that of (x - max) twice over.
  NdArray v = ref::softmax(a.v, axis);
  NdArray m = ref::expand(ref::max(a.mag, {axis}, true), a.v.shape);
  return {v, ref::zip(v, m, [](double s, double mx) { return s * (1 + 4 * mx); }),
          ref::expand(ref::max(a.bad, {axis}, true), a.v.shape)};
}

inline double max_of(const NdArray& a) {
  double m = 0;
  for (double x : a.data) m = std::max(m, x);
  return m;
}

}  // namespace fuzz
