#pragma once
// The programs of the random op-graph fuzzer (test_fuzz_graphs.cpp) and their generator: a seeded
// list of steps, each a line of kiln C++, the function that runs it on kiln tensors, and the
// reference value (fuzz_reference.h) it must give.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "fuzz_reference.h"
#include "kiln/dtype.h"
#include "kiln/tensor.h"
#include "reference.h"

namespace fuzz {

using kiln::Tensor;
using Pairs = std::vector<std::pair<int64_t, int64_t>>;
using Vals = std::vector<Tensor>;

inline std::string vname(int i) { return "v" + std::to_string(i); }

struct Step {
  std::string code;                        // the step as a line of kiln C++
  int realize = -1;                        // >= 0: realize that value (no new value)
  std::function<Tensor(const Vals&)> fn;   // else: computes the next value from the earlier ones
};

struct Program {
  uint64_t seed = 0;
  std::string mode;
  std::vector<NdArray> inputs;
  std::vector<uint64_t> input_seeds;
  std::vector<Step> steps;
  std::vector<RV> refs;      // every value's reference, inputs first
  std::vector<int> checked;  // values compared after the run: realized intermediates, then the result
  int ops = 0;               // random ops drawn (partners and rescales they add are extra steps)

  std::string listing() const {
    std::ostringstream os;
    os << "// seed " << seed << " (" << mode << "): " << ops << " random ops, " << steps.size() << " steps\n";
    for (size_t i = 0; i < inputs.size(); i++)
      os << "Tensor v" << i << " = kt::make(kt::wrap(ref::random(" << shape_code(inputs[i].shape) << ", "
         << input_seeds[i] << "u, -2, 2), kiln::dtypes::float32));\n";
    for (const Step& s : steps) os << s.code << "\n";
    os << "// then read back and compared:";
    for (int i : checked) os << " " << vname(i);
    os << "\n";
    return os.str();
  }

  static std::string shape_code(const Shape& s) {
    std::ostringstream os;
    os << "{";
    for (size_t i = 0; i < s.size(); i++) os << (i ? ", " : "") << s[i];
    os << "}";
    return os.str();
  }
};

inline std::string ints_code(const std::vector<int>& v) {
  std::ostringstream os;
  os << "{";
  for (size_t i = 0; i < v.size(); i++) os << (i ? ", " : "") << v[i];
  os << "}";
  return os.str();
}

inline std::string pairs_code(const Pairs& p) {
  std::ostringstream os;
  os << "{";
  for (size_t i = 0; i < p.size(); i++) os << (i ? ", " : "") << "{" << p[i].first << ", " << p[i].second << "}";
  os << "}";
  return os.str();
}

inline std::string float_code(float f) {
  std::ostringstream os;
  os.precision(9);
  os << f;
  std::string s = os.str();
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + "f";
}


// An operand of a binary op: a value or a float scalar.
struct Arg {
  int idx = -1;  // value index, or -1 for the scalar
  float s = 0;
  bool scalar() const { return idx < 0; }
  std::string code() const { return scalar() ? float_code(s) : vname(idx); }
};

// kiln side and code of a reduction
inline Tensor reduce_t(const Tensor& t, Red op, const std::vector<int>& axes, bool keepdim) {
  return op == Red::Sum ? t.sum(axes, keepdim) : op == Red::Max ? t.max(axes, keepdim) : t.mean(axes, keepdim);
}
inline std::string reduce_code(Red op, const std::vector<int>& axes, bool keepdim) {
  return std::string(".") + red_name(op) + "(" + ints_code(axes) + ", " + (keepdim ? "true" : "false") + ")";
}

enum class Bin { Add, Sub, Mul, Div, Max };

// kiln side of a binary op; Div divides by |b| + 0.5 (by b itself when b is a scalar).
inline Tensor bin(Bin op, const Vals& V, Arg a, Arg b) {
  if (!a.scalar() && !b.scalar()) {
    const Tensor &x = V[a.idx], &y = V[b.idx];
    switch (op) {
      case Bin::Add: return x + y;
      case Bin::Sub: return x - y;
      case Bin::Mul: return x * y;
      case Bin::Div: return x / (y.abs() + 0.5f);
      case Bin::Max: return x.maximum(y);
    }
  } else if (!a.scalar()) {
    const Tensor& x = V[a.idx];
    switch (op) {
      case Bin::Add: return x + b.s;
      case Bin::Sub: return x - b.s;
      case Bin::Mul: return x * b.s;
      case Bin::Div: return x / b.s;
      case Bin::Max: return x.maximum(b.s);
    }
  } else {
    const Tensor& y = V[b.idx];
    switch (op) {
      case Bin::Add: return a.s + y;
      case Bin::Sub: return a.s - y;
      case Bin::Mul: return a.s * y;
      case Bin::Div: return a.s / (y.abs() + 0.5f);
      case Bin::Max: return y.maximum(a.s);
    }
  }
  throw std::logic_error("bin");
}

inline std::string bin_code(Bin op, Arg a, Arg b) {
  std::string x = a.code(), y = b.code();
  switch (op) {
    case Bin::Add: return x + " + " + y;
    case Bin::Sub: return x + " - " + y;
    case Bin::Mul: return x + " * " + y;
    case Bin::Div: return b.scalar() ? x + " / " + y : x + " / (" + y + ".abs() + 0.5f)";
    case Bin::Max: return a.scalar() ? y + ".maximum(" + x + ")" : x + ".maximum(" + y + ")";
  }
  return "";
}

inline RV bin_ref(Bin op, const RV& a, const RV& b, bool b_scalar) {
  switch (op) {
    case Bin::Add:
      return binary(a, b, [](double x, double y) { return x + y; },
                    [](double, double, double mx, double my) { return mx + my; });
    case Bin::Sub:
      return binary(a, b, [](double x, double y) { return x - y; },
                    [](double, double, double mx, double my) { return mx + my; });
    case Bin::Mul:
      return binary(a, b, [](double x, double y) { return x * y; },
                    [](double, double, double mx, double my) { return mx * my; });
    case Bin::Div:
      if (b_scalar)
        return binary(a, b, [](double x, double y) { return x / y; },
                      [](double, double y, double mx, double) { return mx / std::fabs(y); });
      return binary(a, b, [](double x, double y) { return x / (std::fabs(y) + 0.5); },
                    [](double, double y, double mx, double my) {
                      double d = std::fabs(y) + 0.5;
                      return mx / d + mx * (my + 0.5) / (d * d);
                    });
    case Bin::Max:
      return binary(a, b, [](double x, double y) { return std::max(x, y); },
                    [](double, double, double mx, double my) { return std::max(mx, my); });
  }
  throw std::logic_error("bin_ref");
}

enum class Mode { Small, Upcast, Thread };
inline const char* mode_name(Mode m) { return m == Mode::Small ? "small" : m == Mode::Upcast ? "upcast" : "thread"; }

struct Bias {
  double upcast = 0.15, thread = 0.03;  // probabilities of the input modes
};

class Generator {
 public:
  // `salt` gives each test its own programs for the same seeds.
  Generator(uint64_t seed, uint64_t salt, Bias bias) : rng_(seed ^ (salt * 0x9E3779B97F4A7C15ULL)), bias_(bias) {
    p_.seed = seed;
  }

  Program make() {
    double r = rng_.uniform();
    mode_ = r < bias_.thread ? Mode::Thread : r < bias_.thread + bias_.upcast ? Mode::Upcast : Mode::Small;
    p_.mode = mode_name(mode_);
    make_inputs();
    int n_ops = mode_ == Mode::Thread ? static_cast<int>(pick(3, 6)) : static_cast<int>(pick(3, 12));
    last_ = static_cast<int>(pick(0, static_cast<int64_t>(p_.inputs.size()) - 1));
    for (int i = 0; i < n_ops; i++) {
      random_op();
      p_.ops++;
    }
    if (last_ < n_inputs())  // the result is computed
      last_ = value(vname(last_) + " + 1.0f", bin_ref(Bin::Add, ref(last_), scalar_rv(1), true),
                    [a = last_](const Vals& V) { return V[a] + 1.0f; });
    // sometimes an intermediate is realized right before the result
    if (chance(0.3) && count() - 1 > n_inputs()) realize(static_cast<int>(pick(n_inputs(), count() - 2)));
    p_.steps.push_back({vname(last_) + ".realize();", last_, {}});
    if (std::find(p_.checked.begin(), p_.checked.end(), last_) == p_.checked.end()) p_.checked.push_back(last_);
    // sometimes also an intermediate that was never realized, read after the result: realizing the
    // result rewired its graph to the buffers it shares
    int extra = static_cast<int>(pick(n_inputs(), count() - 1));
    if (chance(0.3) && std::find(p_.checked.begin(), p_.checked.end(), extra) == p_.checked.end())
      p_.checked.push_back(extra);
    return std::move(p_);
  }

 private:
  // ---- randomness
  bool chance(double pr) { return rng_.uniform() < pr; }
  int64_t pick(int64_t lo, int64_t hi) { return rng_.integer(lo, hi); }
  size_t index(size_t n) { return static_cast<size_t>(pick(0, static_cast<int64_t>(n) - 1)); }  // [0, n)
  template <class T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; i--) std::swap(v[i - 1], v[index(i)]);
  }
  float nice_scalar() {  // exact in float32, nonzero
    static const float kS[] = {0.5f, -0.5f, 1.5f, -1.25f, 2.0f, -2.0f, 0.25f, 3.0f, -0.75f, 1.0f, 0.125f, -3.0f};
    return kS[pick(0, 11)];
  }

  // ---- values
  const RV& ref(int i) const { return p_.refs[static_cast<size_t>(i)]; }
  const Shape& shape(int i) const { return ref(i).v.shape; }
  int64_t ndim(int i) const { return static_cast<int64_t>(shape(i).size()); }
  int count() const { return static_cast<int>(p_.refs.size()); }
  int n_inputs() const { return static_cast<int>(p_.inputs.size()); }

  // Adds a value; values whose scale grows past 64 are scaled down by a power of two (exact), so
  // long chains of products and sums stay far from float32 overflow.
  int value(const std::string& expr, RV r, std::function<Tensor(const Vals&)> fn) {
    int id = count();
    double m = max_of(r.mag);
    p_.refs.push_back(std::move(r));
    p_.steps.push_back({"Tensor " + vname(id) + " = " + expr + ";", -1, std::move(fn)});
    if (m > 64) {
      float s = std::ldexp(1.0f, -static_cast<int>(std::ceil(std::log2(m / 4))));
      return value(vname(id) + " * " + float_code(s), bin_ref(Bin::Mul, ref(id), scalar_rv(s), true),
                   [id, s](const Vals& V) { return V[id] * s; });
    }
    return id;
  }

  void realize(int i) {
    if (i < n_inputs()) return;
    p_.steps.push_back({vname(i) + ".realize();", i, {}});
    if (std::find(p_.checked.begin(), p_.checked.end(), i) == p_.checked.end()) p_.checked.push_back(i);
  }

  int pick_computed() {
    if (count() == n_inputs()) return last_;
    return chance(0.5) ? last_ : static_cast<int>(pick(n_inputs(), count() - 1));
  }

  // ---- inputs
  Shape small_shape(int64_t rank_lo, int64_t rank_hi) {
    Shape s(static_cast<size_t>(pick(rank_lo, rank_hi)));
    for (int64_t& d : s) d = chance(0.25) ? 1 : pick(2, 9);
    return s;
  }

  void make_inputs() {
    Shape first;
    if (mode_ == Mode::Thread) {
      // ~70k elements: THREAD splits the outermost loop of kernels with >= 65536 iterations
      int64_t outer = pick(2, 9);
      if (chance(0.5)) {
        int64_t inner = (70000 / outer + 7) / 8 * 8;
        first = {outer, inner};
      } else {
        int64_t mid = chance(0.5) ? 8 : pick(2, 9);
        first = {outer, mid, (70000 / (outer * mid) + 7) / 8 * 8};
      }
      cap_ = ref::numel(first) + 8;
    } else {
      first = small_shape(1, 4);
      if (mode_ == Mode::Upcast) {
        // UPCAST splits the innermost output loop of a reduction kernel by 8, the outermost by 4
        first = small_shape(2, 3);
        first[index(first.size())] = 8 * pick(2, 4);
        if (chance(0.5)) first[index(first.size())] = chance(0.5) ? 4 : 8;
      }
      cap_ = std::max<int64_t>(4096, ref::numel(first));
    }
    int n = static_cast<int>(pick(1, 3));
    for (int i = 0; i < n; i++) {
      Shape s = first;
      if (i > 0) {
        if (mode_ == Mode::Small && chance(0.2)) {
          s = small_shape(1, 4);
        } else {
          for (int64_t& d : s)
            if (chance(0.3)) d = 1;
          if (chance(0.25)) s.erase(s.begin(), s.begin() + pick(0, static_cast<int64_t>(s.size()) - 1));
        }
      }
      uint64_t seed = rng_.next() % 1000000007;
      NdArray a = kt::wrap(ref::random(s, seed, -2, 2), kiln::dtypes::float32);
      p_.inputs.push_back(a);
      p_.input_seeds.push_back(seed);
      p_.refs.push_back(leaf(a));
    }
  }

  // ---- ops
  void random_op() {
    int x = chance(0.7) ? last_ : static_cast<int>(pick(0, count() - 1));
    for (int attempt = 0; attempt < 20; attempt++) {
      double r = rng_.uniform() * 22;
      bool ok = r < 4      ? unary_op(x)
                : r < 9    ? binary_op(x)
                : r < 10.5 ? where_op(x)
                : r < 13   ? reduce_op(x)
                : r < 17   ? movement_op(x)
                : r < 17.8 ? contiguous_op(x)
                : r < 19   ? matmul_op(x)
                : r < 20   ? softmax_op(x)
                : r < 21   ? expand_op(x, /*then_reduce=*/true)
                           : realize_op();
      if (ok) return;
    }
  }

  bool unary_op(int x) {
    int k = static_cast<int>(pick(0, 5));
    const RV& a = ref(x);
    std::string n = vname(x);
    switch (k) {
      case 0:
        last_ = value("-" + n, unary(a, [](double v) { return -v; }, [](double, double m) { return m; }),
                      [x](const Vals& V) { return -V[x]; });
        break;
      case 1:
        last_ = value(n + ".relu()",
                      unary(a, [](double v) { return std::max(v, 0.0); }, [](double, double m) { return m; }),
                      [x](const Vals& V) { return V[x].relu(); });
        break;
      case 2:
        last_ = value(n + ".clip(-3, 3).exp()",
                      unary(a, [](double v) { return std::exp(std::clamp(v, -3.0, 3.0)); },
                            [](double v, double m) { return std::exp(std::clamp(v, -3.0, 3.0)) * (1 + m); }),
                      [x](const Vals& V) { return V[x].clip(-3, 3).exp(); });
        break;
      case 3:
        last_ = value(n + ".abs()", unary(a, [](double v) { return std::fabs(v); }, [](double, double m) { return m; }),
                      [x](const Vals& V) { return V[x].abs(); });
        break;
      case 4:
        last_ = value(n + ".sigmoid()",
                      unary(a, [](double v) { return 1 / (1 + std::exp(-v)); },
                            [](double v, double m) {
                              double s = 1 / (1 + std::exp(-v));
                              return s * (1 - s) * m + s;
                            }),
                      [x](const Vals& V) { return V[x].sigmoid(); });
        break;
      default:
        last_ = value("(" + n + ".abs() + 1.0f).sqrt()",
                      unary(a, [](double v) { return std::sqrt(std::fabs(v) + 1); },
                            [](double v, double m) {
                              double f = std::sqrt(std::fabs(v) + 1);
                              return (m + 1) / (2 * f) + f;
                            }),
                      [x](const Vals& V) { return (V[x].abs() + 1.0f).sqrt(); });
        break;
    }
    return true;
  }

  bool broadcastable(const Shape& a, const Shape& b) const {
    try {
      return ref::numel(ref::broadcast_shape(a, b)) <= cap_;
    } catch (const std::exception&) {
      return false;
    }
  }

  std::vector<int> random_axes(int64_t nd, bool allow_empty) {
    std::vector<int> axes;
    for (int64_t i = 0; i < nd; i++)
      if (chance(0.5)) axes.push_back(static_cast<int>(i));
    if (axes.empty() && !allow_empty && nd > 0) axes.push_back(static_cast<int>(pick(0, nd - 1)));
    for (int& a : axes)
      if (chance(0.3)) a -= static_cast<int>(nd);  // negative axes too
    shuffle(axes);
    return axes;
  }

  // The other operand of a binary op on x: a scalar, another live value that broadcasts with x, or
  // x itself seen another way (flipped, shifted, transposed, or a keepdim reduction of it broadcast
  // back): reuse that makes the scheduler choose between recomputing and realizing.
  Arg partner(int x) {
    double r = rng_.uniform();
    const Shape& s = shape(x);
    if (r < 0.22) return Arg{-1, nice_scalar()};
    if (r < 0.45) {
      std::vector<int> order(static_cast<size_t>(count()));
      std::iota(order.begin(), order.end(), 0);
      shuffle(order);
      for (int o : order)
        if (o != x && broadcastable(s, shape(o))) return Arg{o, 0};
    }
    if (r < 0.60 && flip_op(x, /*chain=*/false)) return Arg{count() - 1, 0};
    if (r < 0.75 && !s.empty()) {
      Red op = pick_red(x);
      std::vector<int> axes = random_axes(static_cast<int64_t>(s.size()), false);
      return Arg{value(vname(x) + reduce_code(op, axes, true), reduce(ref(x), op, axes, true),
                       [x, op, axes](const Vals& V) { return reduce_t(V[x], op, axes, true); }),
                 0};
    }
    if (r < 0.85) {  // shifted by one along an axis, zero filled: pad then shrink
      std::vector<int> big;
      for (size_t i = 0; i < s.size(); i++)
        if (s[i] >= 2) big.push_back(static_cast<int>(i));
      if (!big.empty()) {
        size_t ax = static_cast<size_t>(big[index(big.size())]);
        Pairs pad(s.size(), {0, 0}), shr;
        bool fwd = chance(0.5);
        pad[ax] = fwd ? std::make_pair<int64_t, int64_t>(1, 0) : std::make_pair<int64_t, int64_t>(0, 1);
        for (size_t i = 0; i < s.size(); i++) shr.push_back({0, s[i]});
        if (!fwd) shr[ax] = {1, s[ax] + 1};
        RV rv = movement(ref(x), [&](const NdArray& a) { return ref::shrink(ref::pad(a, pad), shr); });
        return Arg{value(vname(x) + ".pad(" + pairs_code(pad) + ").shrink(" + pairs_code(shr) + ")", rv,
                         [x, pad, shr](const Vals& V) { return V[x].pad(pad).shrink(shr); }),
                   0};
      }
    }
    if (r < 0.93) {  // transposed, where two axes have the same size
      for (size_t i = 0; i < s.size(); i++)
        for (size_t j = i + 1; j < s.size(); j++)
          if (s[i] == s[j] && s[i] > 1) {
            int a = static_cast<int>(i), b = static_cast<int>(j);
            return Arg{value(vname(x) + ".transpose(" + std::to_string(a) + ", " + std::to_string(b) + ")",
                             movement(ref(x), [&](const NdArray& v) { return ref::transpose(v, a, b); }),
                             [x, a, b](const Vals& V) { return V[x].transpose(a, b); }),
                       0};
          }
    }
    return chance(0.5) ? Arg{x, 0} : Arg{-1, nice_scalar()};
  }

  RV arg_ref(Arg a) const { return a.scalar() ? scalar_rv(a.s) : ref(a.idx); }

  bool binary_op(int x) {
    Arg p = partner(x);
    Bin op = static_cast<Bin>(pick(0, 4));
    Arg a{x, 0}, b = p;
    if (chance(0.4)) std::swap(a, b);
    if (op == Bin::Div && b.scalar()) b.s = std::fabs(b.s) < 0.25f ? 0.5f : b.s;
    RV r = bin_ref(op, arg_ref(a), arg_ref(b), b.scalar());
    last_ = value(bin_code(op, a, b), std::move(r), [op, a, b](const Vals& V) { return bin(op, V, a, b); });
    return true;
  }

  bool where_op(int x) {
    Arg y = partner(x);
    Arg a = chance(0.5) ? Arg{x, 0} : partner(x);
    Arg b = chance(0.3) ? Arg{-1, nice_scalar()} : chance(0.5) ? y : partner(x);
    if (a.scalar() && b.scalar()) a = Arg{x, 0};
    // each operand broadcasts with x, but not necessarily with the others
    Shape s = shape(x);
    for (Arg o : {y, a, b}) {
      if (o.scalar()) continue;
      if (!broadcastable(s, shape(o.idx))) return false;
      s = ref::broadcast_shape(s, shape(o.idx));
    }
    RV r = where_gt(ref(x), arg_ref(y), arg_ref(a), arg_ref(b));
    std::string code = vname(x) + ".gt(" + y.code() + ").where(" + a.code() + ", " + b.code() + ")";
    last_ = value(code, std::move(r), [x, y, a, b](const Vals& V) {
      Tensor c = y.scalar() ? V[x].gt(y.s) : V[x].gt(V[y.idx]);
      if (a.scalar()) return c.where(a.s, V[b.idx]);
      if (b.scalar()) return c.where(V[a.idx], b.s);
      return c.where(V[a.idx], V[b.idx]);
    });
    return true;
  }

  // max and mean of an empty tensor are -inf and NaN: empty tensors (rare) are only summed
  Red pick_red(int x) { return ref::numel(shape(x)) == 0 ? Red::Sum : static_cast<Red>(pick(0, 2)); }

  bool reduce_op(int x) {
    if (ndim(x) == 0) return false;
    Red op = pick_red(x);
    std::vector<int> axes = chance(0.15) ? std::vector<int>{} : random_axes(ndim(x), false);
    bool keepdim = chance(0.5);
    last_ = value(vname(x) + reduce_code(op, axes, keepdim), reduce(ref(x), op, axes, keepdim),
                  [x, op, axes, keepdim](const Vals& V) { return reduce_t(V[x], op, axes, keepdim); });
    return true;
  }

  bool contiguous_op(int x) {
    last_ = value(vname(x) + ".contiguous()", ref(x), [x](const Vals& V) { return V[x].contiguous(); });
    return true;
  }

  bool realize_op() {
    if (count() == n_inputs()) return false;
    realize(pick_computed());
    return true;
  }

  bool softmax_op(int x) {
    if (ndim(x) == 0) return false;
    int axis = static_cast<int>(pick(0, ndim(x) - 1));
    if (chance(0.3)) axis -= static_cast<int>(ndim(x));
    last_ = value(vname(x) + ".softmax(" + std::to_string(axis) + ")", softmax(ref(x), axis),
                  [x, axis](const Vals& V) { return V[x].softmax(axis); });
    return true;
  }

  static bool batch_ok(const Shape& a, const Shape& b) {  // a, b: (..., n, k) and (..., k, m)
    Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
    try {
      ref::broadcast_shape(ba, bb);
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }

  bool matmul_op(int x) {
    const Shape& s = shape(x);
    if (s.empty()) return false;
    auto work_of = [&](const Shape& a, const Shape& b) -> int64_t {
      Shape a2 = a, b2 = b;
      if (a2.size() == 1) a2.insert(a2.begin(), 1);
      if (b2.size() == 1) b2.push_back(1);
      if (a2.back() != b2[b2.size() - 2] || !batch_ok(a2, b2)) return -1;
      Shape batch = ref::broadcast_shape(Shape(a2.begin(), a2.end() - 2), Shape(b2.begin(), b2.end() - 2));
      int64_t out = ref::numel(batch) * a2[a2.size() - 2] * b2.back();
      if (out > cap_) return -1;
      return out * a2.back();
    };
    const int64_t max_work = mode_ == Mode::Thread ? 4000000 : 300000;
    // another live value that fits, on either side
    std::vector<int> order(static_cast<size_t>(count()));
    std::iota(order.begin(), order.end(), 0);
    shuffle(order);
    std::vector<std::pair<int, int>> cands;
    for (int o : order) {
      if (shape(o).empty()) continue;
      int64_t w = work_of(s, shape(o));
      if (w >= 0 && w <= max_work) cands.push_back({x, o});
      w = work_of(shape(o), s);
      if (w >= 0 && w <= max_work) cands.push_back({o, x});
    }
    int a = -1, b = -1;
    if (!cands.empty() && chance(0.6)) {
      std::tie(a, b) = cands[index(cands.size())];
    } else if (s.size() >= 2) {
      // x with its own transpose: x @ x^T or x^T @ x
      Shape t = s;
      std::swap(t[t.size() - 1], t[t.size() - 2]);
      bool left = chance(0.5);
      int64_t w = left ? work_of(s, t) : work_of(t, s);
      if (w < 0 || w > max_work) return false;
      int xt = value(vname(x) + ".transpose(-1, -2)",
                     movement(ref(x), [](const NdArray& v) { return ref::transpose(v, -1, -2); }),
                     [x](const Vals& V) { return V[x].transpose(-1, -2); });
      a = left ? x : xt;
      b = left ? xt : x;
    } else if (!cands.empty()) {
      std::tie(a, b) = cands[0];
    } else {
      return false;
    }
    last_ = value(vname(a) + ".matmul(" + vname(b) + ")", matmul(ref(a), ref(b)),
                  [a, b](const Vals& V) { return V[a].matmul(V[b]); });
    return true;
  }

  // ---- movement
  bool movement_op(int x) {
    switch (pick(0, 6)) {
      case 0: return reshape_op(x);
      case 1: return permute_op(x);
      case 2: return expand_op(x);
      case 3: return pad_op(x);
      case 4: return shrink_op(x);
      case 5: return flip_op(x, true);
      default: return transpose_op(x);
    }
  }

  bool reshape_op(int x) {
    int64_t n = ref::numel(shape(x));
    if (n == 0) return false;
    std::vector<int64_t> factors;
    for (int64_t m = n, f = 2; m > 1;) {
      if (f * f > m) {
        factors.push_back(m);
        break;
      }
      if (m % f == 0) {
        factors.push_back(f);
        m /= f;
      } else {
        f++;
      }
    }
    Shape to(static_cast<size_t>(pick(1, 4)), 1);
    for (int64_t f : factors) to[index(to.size())] *= f;
    if (n == 1 && chance(0.3)) to.clear();  // a scalar
    Shape call = to;
    if (!call.empty() && chance(0.2)) call[index(call.size())] = -1;
    last_ = value(vname(x) + ".reshape(" + Program::shape_code(call) + ")",
                  movement(ref(x), [&](const NdArray& a) { return ref::reshape(a, to); }),
                  [x, call](const Vals& V) { return V[x].reshape(call); });
    return true;
  }

  bool permute_op(int x) {
    if (ndim(x) < 2) return false;
    std::vector<int> order(static_cast<size_t>(ndim(x)));
    std::iota(order.begin(), order.end(), 0);
    shuffle(order);
    last_ = value(vname(x) + ".permute(" + ints_code(order) + ")",
                  movement(ref(x), [&](const NdArray& a) { return ref::permute(a, order); }),
                  [x, order](const Vals& V) { return V[x].permute(order); });
    return true;
  }

  bool transpose_op(int x) {
    if (ndim(x) < 2) return false;
    int a = static_cast<int>(pick(0, ndim(x) - 1)), b = static_cast<int>(pick(0, ndim(x) - 2));
    if (b >= a) b++;
    if (chance(0.3)) a -= static_cast<int>(ndim(x));
    last_ = value(vname(x) + ".transpose(" + std::to_string(a) + ", " + std::to_string(b) + ")",
                  movement(ref(x), [&](const NdArray& v) { return ref::transpose(v, a, b); }),
                  [x, a, b](const Vals& V) { return V[x].transpose(a, b); });
    return true;
  }

  // Size-1 axes stretched, maybe a new leading axis. then_reduce: reduced right away, so the
  // reduction's input is the same along some of the loops around it.
  bool expand_op(int x, bool then_reduce = false) {
    Shape to = shape(x);
    for (int64_t& d : to)
      if (d == 1 && chance(0.6)) d = pick(2, 5);
    if (to.size() < 4 && (chance(0.3) || (then_reduce && to == shape(x)))) to.insert(to.begin(), pick(2, 4));
    if (to == shape(x) || ref::numel(to) > cap_) return false;
    Shape call = to;
    for (size_t i = call.size() - shape(x).size(); i < call.size(); i++)
      if (call[i] == shape(x)[i - (call.size() - shape(x).size())] && chance(0.3)) call[i] = -1;  // -1 keeps
    std::string code = vname(x) + ".expand(" + Program::shape_code(call) + ")";
    RV r = movement(ref(x), [&](const NdArray& a) { return ref::expand(a, to); });
    if (!then_reduce) {
      last_ = value(code, std::move(r), [x, call](const Vals& V) { return V[x].expand(call); });
      return true;
    }
    Red op = pick_red(x);
    std::vector<int> axes = random_axes(static_cast<int64_t>(to.size()), false);
    bool keepdim = chance(0.5);
    last_ = value(code + reduce_code(op, axes, keepdim), reduce(r, op, axes, keepdim),
                  [x, call, op, axes, keepdim](const Vals& V) {
                    return reduce_t(V[x].expand(call), op, axes, keepdim);
                  });
    return true;
  }

  bool pad_op(int x) {
    const Shape& s = shape(x);
    if (s.empty()) return false;
    Pairs p;
    int64_t n = 1;
    for (int64_t d : s) {
      p.push_back({chance(0.5) ? pick(0, 2) : 0, chance(0.5) ? pick(0, 2) : 0});
      n *= d + p.back().first + p.back().second;
    }
    if (n > cap_) return false;
    last_ = value(vname(x) + ".pad(" + pairs_code(p) + ")",
                  movement(ref(x), [&](const NdArray& a) { return ref::pad(a, p); }),
                  [x, p](const Vals& V) { return V[x].pad(p); });
    return true;
  }

  bool shrink_op(int x) {
    const Shape& s = shape(x);
    if (s.empty()) return false;
    Pairs p;
    bool any = false;
    for (int64_t d : s) {
      int64_t b = 0, e = d;
      if (d > 1 && chance(0.6)) {
        b = pick(0, d - 1);
        e = pick(b + 1, d);
      }
      if (d > 0 && chance(0.01)) e = b = pick(0, d);  // now and then an empty tensor
      any |= b != 0 || e != d;
      p.push_back({b, e});
    }
    if (!any) return false;
    last_ = value(vname(x) + ".shrink(" + pairs_code(p) + ")",
                  movement(ref(x), [&](const NdArray& a) { return ref::shrink(a, p); }),
                  [x, p](const Vals& V) { return V[x].shrink(p); });
    return true;
  }

  // chain: the flipped value continues the chain; else it is only a partner
  bool flip_op(int x, bool chain) {
    const Shape& s = shape(x);
    std::vector<int> axes;
    for (size_t i = 0; i < s.size(); i++)
      if (s[i] > 1 && chance(0.6)) axes.push_back(static_cast<int>(i) - (chance(0.3) ? static_cast<int>(s.size()) : 0));
    if (axes.empty()) return false;
    int id = value(vname(x) + ".flip(" + ints_code(axes) + ")",
                   movement(ref(x), [&](const NdArray& a) { return ref::flip(a, axes); }),
                   [x, axes](const Vals& V) { return V[x].flip(axes); });
    if (chain) last_ = id;
    return true;
  }

  ref::Lcg rng_;
  Bias bias_;
  Program p_;
  Mode mode_ = Mode::Small;
  int64_t cap_ = 4096;
  int last_ = 0;  // the value the program's chain ends at
};

}  // namespace fuzz
