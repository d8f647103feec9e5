// Symbolic simplification (see kiln/ir/symbolic.h).
//
// Layout of this file:
//   1. constant evaluation (exec_alu): C semantics per dtype
//   2. facts about nodes: trusted value ranges, a deterministic structural order
//   3. Linear: integer sums Σ coef·term + const, the normal form of index arithmetic
//   4. rewrite functions for the bigger rules (sums, div/mod, comparisons)
//   5. the two PatternMatchers
//
// Integer identities that only reorder + and * (combining terms, distributing constants) hold
// modulo 2^width, so they are valid even when the arithmetic wraps. Everything that reasons with
// value ranges (div/mod folding, comparisons, min==max) first checks that the ranges are facts:
// see range_trusted.
#include "kiln/ir/symbolic.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <span>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "kiln/error.h"

namespace kiln {
namespace {

// =============================================================================================
// 1. Constant evaluation

bool is_intlike(DType d) { return !d.ptr && (d.is_int() || d.is_bool()); }
bool is_int(DType d) { return !d.ptr && d.is_int(); }
// Integer dtypes whose every value is its own int64: the index math below works on these.
bool is_index_int(DType d) { return is_int(d) && d.scalar != ScalarType::UInt64; }

int arity(Ops op) {
  if (group::Unary.has(op)) return 1;
  if (group::Binary.has(op)) return 2;
  if (group::Ternary.has(op)) return 3;
  return 0;
}

// Integer and bool CONSTs keep their C value in an int64 arg (as UOp::const_ does): signed types
// sign-extended, narrower unsigned zero-extended, uint64 as its bit pattern, bool as 0/1.
// wrap() is a C conversion of a 64-bit pattern to that form.
int64_t wrap(DType d, uint64_t bits) {
  switch (d.scalar) {
    case ScalarType::Bool: return bits != 0;
    case ScalarType::Int8: return static_cast<int8_t>(bits);
    case ScalarType::Int16: return static_cast<int16_t>(bits);
    case ScalarType::Int32: return static_cast<int32_t>(bits);
    case ScalarType::UInt8: return static_cast<uint8_t>(bits);
    case ScalarType::UInt16: return static_cast<uint16_t>(bits);
    case ScalarType::UInt32: return static_cast<uint32_t>(bits);
    case ScalarType::Int64: case ScalarType::UInt64: return static_cast<int64_t>(bits);
    default: throw_error("exec_alu: ", d.name(), " is not an integer dtype");
  }
}
int64_t wrap(DType d, int64_t v) { return wrap(d, static_cast<uint64_t>(v)); }
bool representable(DType d, int64_t v) { return wrap(d, v) == v; }

double int_to_double(DType d, int64_t v) {
  return d.scalar == ScalarType::UInt64 ? static_cast<double>(static_cast<uint64_t>(v)) : static_cast<double>(v);
}

// C conversion of a floating value to an integer dtype: truncation toward zero; bool is `v != 0`.
// Values out of the dtype's range (undefined in C) wrap modulo 2^64 and then to the width;
// NaN and infinities have no integer value and throw.
int64_t int_from_double(DType d, double v) {
  if (d.is_bool()) return v != 0;
  if (!std::isfinite(v)) throw_error("exec_alu: ", v, " has no ", d.name(), " value");
  const double two63 = 9223372036854775808.0, two64 = 18446744073709551616.0;
  double t = std::trunc(v);
  if (t >= -two63 && t < two63) return wrap(d, static_cast<int64_t>(t));
  double m = std::fmod(t, two64);  // exact; |t| >= 2^63 is a multiple of 2^11, so m + 2^64 is too
  if (m < 0) m += two64;
  return wrap(d, static_cast<uint64_t>(m));
}

// Rounds to a binary float with `mant` stored mantissa bits and normal exponents [emin, emax]:
// round to nearest even, subnormals, overflow to infinity.
double round_binary(double v, int mant, int emin, int emax) {
  if (!std::isfinite(v) || v == 0) return v;
  int e;
  std::frexp(v, &e);  // |v| in [2^(e-1), 2^e)
  double quantum = std::ldexp(1.0, std::max(e - 1, emin) - mant);
  double r = std::nearbyint(v / quantum) * quantum;
  double max_finite = std::ldexp(2.0 - std::ldexp(1.0, -mant), emax);
  return std::fabs(r) > max_finite ? std::copysign(std::numeric_limits<double>::infinity(), v) : r;
}

double round_float(DType d, double v) {
  switch (d.scalar) {
    case ScalarType::Float16: return round_binary(v, 10, -14, 15);
    case ScalarType::BFloat16: return round_binary(v, 7, -126, 127);
    case ScalarType::Float32: return round_binary(v, 23, -126, 127);
    case ScalarType::Float64: return v;
    default: throw_error("exec_alu: ", d.name(), " is not a float dtype");
  }
}

[[noreturn]] void cannot_fold(Ops op, DType d) { throw_error("exec_alu: cannot fold ", op_name(op), " on ", d.name()); }

// Integer/bool ALU on canonical values of dtype `d` (for comparisons the operands' dtype, result
// 0/1; for WHERE the result dtype, operand 0 is the condition). Arithmetic is done on 64-bit
// patterns and wrapped to the width, which is what C computes (narrow types promote to int and are
// converted back; bool results are `!= 0`).
int64_t exec_int(Ops op, DType d, std::span<const int64_t> v) {
  const bool uns = d.is_unsigned() || d.is_bool();
  auto U = [](int64_t x) { return static_cast<uint64_t>(x); };
  auto out = [&](uint64_t bits) { return wrap(d, bits); };
  auto less = [&](int64_t a, int64_t b) { return uns ? U(a) < U(b) : a < b; };
  switch (op) {
    case Ops::TRUNC: return v[0];
    case Ops::NEG: return out(0 - U(v[0]));
    case Ops::ADD: return out(U(v[0]) + U(v[1]));
    case Ops::SUB: return out(U(v[0]) - U(v[1]));
    case Ops::MUL: return out(U(v[0]) * U(v[1]));
    case Ops::IDIV:
    case Ops::MOD: {
      int64_t a = v[0], b = v[1];
      if (b == 0) throw_error("exec_alu: ", op == Ops::IDIV ? "division" : "modulo", " by zero");
      if (uns) return out(op == Ops::IDIV ? U(a) / U(b) : U(a) % U(b));
      if (b == -1) return op == Ops::IDIV ? out(0 - U(a)) : 0;  // INT64_MIN / -1 wraps
      return out(U(op == Ops::IDIV ? a / b : a % b));
    }
    case Ops::MAX: return less(v[0], v[1]) ? v[1] : v[0];
    case Ops::CMPLT: return less(v[0], v[1]);
    case Ops::CMPNE: return v[0] != v[1];
    case Ops::CMPEQ: return v[0] == v[1];
    case Ops::AND: return out(U(v[0]) & U(v[1]));
    case Ops::OR: return out(U(v[0]) | U(v[1]));
    case Ops::XOR: return out(U(v[0]) ^ U(v[1]));
    case Ops::SHL:
    case Ops::SHR: {
      // Narrow operands are promoted to int in C, so counts up to 31 are defined for them.
      uint64_t limit = std::max(32, d.itemsize() * 8);
      bool bad = uns ? U(v[1]) >= limit : (v[1] < 0 || U(v[1]) >= limit);
      if (bad) throw_error("exec_alu: shift by ", v[1], " is undefined for ", d.name());
      int n = static_cast<int>(v[1]);
      if (op == Ops::SHL) return out(U(v[0]) << n);
      return uns ? out(U(v[0]) >> n) : out(U(v[0] >> n));
    }
    case Ops::WHERE: return v[0] != 0 ? v[1] : v[2];
    default: cannot_fold(op, d);
  }
}

// Float ALU: operands are rounded to `d`, computed in double, and the result rounded to `d`
// (for float32 that is "rounded through float"; + - * / sqrt are then correctly rounded).
// MAX is (a > b ? a : b). Comparisons return 0/1.
double exec_float(Ops op, DType d, std::span<const double> in) {
  double v[3] = {};
  for (size_t i = 0; i < in.size(); i++) v[i] = (op == Ops::WHERE && i == 0) ? in[i] : round_float(d, in[i]);
  auto r = [&](double x) { return round_float(d, x); };
  switch (op) {
    case Ops::NEG: return -v[0];
    case Ops::TRUNC: return std::trunc(v[0]);
    case Ops::EXP: return r(std::exp(v[0]));
    case Ops::EXP2: return r(std::exp2(v[0]));
    case Ops::LOG: return r(std::log(v[0]));
    case Ops::LOG2: return r(std::log2(v[0]));
    case Ops::SIN: return r(std::sin(v[0]));
    case Ops::COS: return r(std::cos(v[0]));
    case Ops::SQRT: return r(std::sqrt(v[0]));
    case Ops::RECIPROCAL: return r(1.0 / v[0]);
    case Ops::ADD: return r(v[0] + v[1]);
    case Ops::SUB: return r(v[0] - v[1]);
    case Ops::MUL: return r(v[0] * v[1]);
    case Ops::FDIV: return r(v[0] / v[1]);
    case Ops::MAX: return (v[0] > v[1] || std::isnan(v[0])) ? v[0] : v[1];  // NaN wins, as in PyTorch
    case Ops::CMPLT: return v[0] < v[1];
    case Ops::CMPNE: return v[0] != v[1];
    case Ops::CMPEQ: return v[0] == v[1];
    case Ops::WHERE: return v[0] != 0 ? v[1] : v[2];
    default: cannot_fold(op, d);
  }
}

// =============================================================================================
// 2. Facts about nodes

bool is_iconst(const UOp* u) { return u->op == Ops::CONST && std::holds_alternative<int64_t>(u->arg); }
int64_t ival(const UOp* u) { return std::get<int64_t>(u->arg); }
UOpRef iconst(DType d, int64_t v) { return UOp::make(Ops::CONST, d, {}, wrap(d, v)); }
// A CONST divisor/factor > 0 of an index dtype, else 0.
int64_t pos_const(const UOpRef& u) { return is_iconst(u.get()) && ival(u.get()) > 0 ? ival(u.get()) : 0; }

// The bounds used to check for overflow (64-bit types keep a margin: doubles are inexact there).
double lo_bound(DType d) { return d.itemsize() == 8 && !d.is_unsigned() ? -4.6e18 : d.min_value(); }
double hi_bound(DType d) { return d.itemsize() == 8 ? 4.6e18 : d.max_value(); }

struct Interval {
  double lo, hi;
  bool within(DType d) const { return lo >= lo_bound(d) && hi <= hi_bound(d); }
};
Interval range_of(const UOp* u) { return {u->vmin(), u->vmax()}; }

// compute_range clamps a result to its dtype instead of modelling wraparound (e.g. uint8 x-1 with x
// in [0,1] gets [0,0], but x=0 gives 255), and a wrong range spreads to every user. So a node's
// vmin/vmax are only used as facts after checking that no integer node they were computed from can
// leave its dtype. Checks the node and, through the sources compute_range reads, everything below.
// Nodes whose range is the whole dtype (LOAD, SHL, ...) are facts without looking further.
bool range_trusted(const UOp* root) {
  std::vector<const UOp*> stack{root};
  std::unordered_set<const UOp*> seen{root};
  auto visit = [&](const UOp* s) {
    if (is_intlike(s->dtype) && seen.insert(s).second) stack.push_back(s);
  };
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    auto src = [&](size_t i) { return u->src.at(i).get(); };
    std::optional<Interval> raw;  // the unclamped range, for ops whose range can overflow
    switch (u->op) {
      case Ops::ADD: raw = Interval{src(0)->vmin() + src(1)->vmin(), src(0)->vmax() + src(1)->vmax()}; break;
      case Ops::SUB: raw = Interval{src(0)->vmin() - src(1)->vmax(), src(0)->vmax() - src(1)->vmin()}; break;
      case Ops::NEG: raw = Interval{-src(0)->vmax(), -src(0)->vmin()}; break;
      case Ops::MUL:
      case Ops::IDIV: {
        const UOp *a = src(0), *b = src(1);
        if (u->op == Ops::IDIV && !(b->vmin() > 0 || b->vmax() < 0)) continue;  // whole dtype
        double c[4] = {a->vmin() * b->vmin(), a->vmin() * b->vmax(), a->vmax() * b->vmin(), a->vmax() * b->vmax()};
        if (u->op == Ops::IDIV)
          c[0] = std::trunc(a->vmin() / b->vmin()), c[1] = std::trunc(a->vmin() / b->vmax()),
          c[2] = std::trunc(a->vmax() / b->vmin()), c[3] = std::trunc(a->vmax() / b->vmax());
        if (std::any_of(c, c + 4, [](double x) { return std::isnan(x); })) continue;  // whole dtype
        raw = Interval{*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
        break;
      }
      case Ops::CAST: {
        const UOp* s = src(0);
        if (!is_intlike(s->dtype)) continue;  // from float: whole dtype
        if (u->dtype.is_bool()) {  // clamped to [max(0,lo), min(1,hi)]: right only if lo is 0 or 1
          if (s->vmin() < 0 || s->vmin() > 1) return false;
        } else {
          raw = range_of(s);
        }
        break;
      }
      case Ops::MOD: case Ops::MAX: case Ops::CMPLT: case Ops::AND: case Ops::WHERE:
      case Ops::RANGE: case Ops::SPECIAL:
        break;  // within the dtype whenever the sources' ranges are right
      default: continue;  // CONST, or a node whose range is the whole dtype
    }
    if (raw && !raw->within(u->dtype)) return false;
    if (u->vmin() > u->vmax()) return false;
    size_t first = u->op == Ops::WHERE ? 1 : 0;
    size_t last = (u->op == Ops::RANGE || u->op == Ops::SPECIAL) ? 1 : u->src.size();
    for (size_t i = first; i < std::min(last, u->src.size()); i++) visit(src(i));
  }
  return true;
}
bool trusted(const UOpRef& u) { return range_trusted(u.get()); }
bool trusted_value(const UOpRef& u) { return is_intlike(u->dtype) && range_trusted(u.get()); }

// A total order on nodes by structure (op, dtype, arg, sources), independent of addresses, so sums
// are rebuilt the same way in every run. Hash-consing makes distinct nodes structurally distinct, so
// the first differing source pair decides and the walk is a single path down the graph.
template <class T>
int three_way(const T& a, const T& b) {
  return a < b ? -1 : b < a ? 1 : 0;
}
int cmp_arg(const Arg& a, const Arg& b) {
  if (a.index() != b.index()) return a.index() < b.index() ? -1 : 1;
  return std::visit(
      [&](const auto& x) -> int {
        using T = std::decay_t<decltype(x)>;
        const T& y = std::get<T>(b);
        if constexpr (std::is_same_v<T, std::monostate>) return 0;
        else if constexpr (std::is_same_v<T, ConstFloat>)
          return x.v < y.v ? -1 : y.v < x.v ? 1 : three_way(std::bit_cast<uint64_t>(x.v), std::bit_cast<uint64_t>(y.v));
        else if constexpr (std::is_same_v<T, ReduceArg>) return three_way(std::tie(x.op, x.axes), std::tie(y.op, y.axes));
        else if constexpr (std::is_same_v<T, RangeArg>) return three_way(std::tie(x.id, x.type), std::tie(y.id, y.type));
        else if constexpr (std::is_same_v<T, BufferArg>)
          return three_way(std::tie(x.id, x.size, x.device), std::tie(y.id, y.size, y.device));
        else return three_way(x, y);
      },
      a);
}
int cmp_node(const UOp* a, const UOp* b) {
  while (a != b) {
    if (a->op != b->op) return a->op < b->op ? -1 : 1;
    auto dt = [](DType d) { return std::tuple(d.scalar, d.count, d.ptr); };
    if (int c = three_way(dt(a->dtype), dt(b->dtype))) return c;
    if (int c = cmp_arg(a->arg, b->arg)) return c;
    if (a->src.size() != b->src.size()) return a->src.size() < b->src.size() ? -1 : 1;
    size_t i = 0;
    while (i < a->src.size() && a->src[i] == b->src[i]) i++;
    if (i == a->src.size()) return 0;  // same structure (only while one of them is being freed)
    a = a->src[i].get();
    b = b->src[i].get();
  }
  return 0;
}

size_t node_count(const UOpRef& u) { return u->toposort().size(); }

// Integer helpers for c > 0.
int64_t floordiv(int64_t a, int64_t c) { return a / c - (a % c != 0 && a < 0); }
int64_t floormod(int64_t a, int64_t c) { return a - floordiv(a, c) * c; }
int64_t ceildiv(int64_t a, int64_t c) { return -floordiv(-a, c); }
// Truncating (C) division and modulo for any nonzero c.
int64_t cdiv(int64_t a, int64_t c) { return a / c; }
int64_t cmod(int64_t a, int64_t c) { return a % c; }
std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

UOpRef mk(Ops op, const UOpRef& a, const UOpRef& b) { return a->alu(op, {b}); }
UOpRef mk_not(const UOpRef& b) { return mk(Ops::CMPNE, b, UOp::const_(b->dtype, 1)); }

// =============================================================================================
// 3. Linear: Σ coef·term + constant over one integer dtype, coefficients wrapped to that dtype.
// Terms are the non-linear leaves (ranges, div/mod, products of variables, ...), combined by node
// identity. build() is the canonical form: terms sorted by cmp_node, left-nested, constant last.

class Linear {
 public:
  struct Term {
    UOpRef node;
    int64_t coef;
  };
  explicit Linear(DType d) : d_(d) {}
  static Linear of(const UOpRef& u) {
    Linear l(u->dtype);
    l.add(u, 1);
    return l;
  }

  // this += k·u, looking through ADD, SUB, NEG and multiplication by a constant.
  void add(const UOpRef& root, int64_t k) {
    std::vector<std::pair<const UOpRef*, int64_t>> stack{{&root, k}};
    while (!stack.empty()) {
      auto [p, c] = stack.back();
      stack.pop_back();
      const UOpRef& u = *p;
      if (c == 0) continue;
      bool same = u->dtype == d_;
      if (u->op == Ops::CONST && same && is_iconst(u.get())) {
        constant_ = mul_add(constant_, ival(u.get()), c);
      } else if (same && u->op == Ops::ADD) {
        stack.push_back({&u->src[1], c});
        stack.push_back({&u->src[0], c});
      } else if (same && u->op == Ops::SUB) {
        stack.push_back({&u->src[1], neg(c)});
        stack.push_back({&u->src[0], c});
      } else if (same && u->op == Ops::NEG) {
        stack.push_back({&u->src[0], neg(c)});
      } else if (same && u->op == Ops::MUL && (is_iconst(u->src[0].get()) || is_iconst(u->src[1].get()))) {
        bool c1 = is_iconst(u->src[1].get());
        stack.push_back({&u->src[c1 ? 0 : 1], mul(c, ival(u->src[c1 ? 1 : 0].get()))});
      } else if (u->vmin() == u->vmax() && same && trusted_value(u)) {
        constant_ = mul_add(constant_, int_from_double(d_, u->vmin()), c);  // e.g. a size-1 RANGE
      } else {
        add_term(u, c);
      }
    }
  }
  void add_const(int64_t k) { constant_ = wrap(d_, static_cast<uint64_t>(constant_) + static_cast<uint64_t>(k)); }
  void remove(const UOpRef& term) {
    if (auto it = index_.find(term.get()); it != index_.end()) terms_[it->second].coef = 0;
  }

  DType dtype() const { return d_; }
  int64_t constant() const { return constant_; }
  // Nonzero terms in canonical order.
  std::vector<Term> terms() const {
    std::vector<Term> t;
    for (const Term& x : terms_)
      if (x.coef != 0) t.push_back(x);
    std::sort(t.begin(), t.end(), [](const Term& a, const Term& b) { return cmp_node(a.node.get(), b.node.get()) < 0; });
    return t;
  }
  // Range of the exact (unwrapped) sum, from the terms' ranges.
  Interval range() const {
    Interval r{value(constant_), value(constant_)};
    for (const Term& t : terms_) {
      if (t.coef == 0) continue;
      double c = value(t.coef), a = c * t.node->vmin(), b = c * t.node->vmax();
      r.lo += std::min(a, b);
      r.hi += std::max(a, b);
    }
    return r;
  }
  UOpRef build() const {
    UOpRef acc;
    for (const Term& t : terms()) {
      UOpRef x = t.coef == 1 ? t.node : mk(Ops::MUL, t.node, iconst(d_, t.coef));
      acc = acc ? mk(Ops::ADD, acc, x) : x;
    }
    if (!acc) return iconst(d_, constant_);
    return constant_ == 0 ? acc : mk(Ops::ADD, acc, iconst(d_, constant_));
  }

 private:
  double value(int64_t v) const { return int_to_double(d_, v); }
  int64_t neg(int64_t a) const { return wrap(d_, 0 - static_cast<uint64_t>(a)); }
  int64_t mul(int64_t a, int64_t b) const { return wrap(d_, static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); }
  int64_t mul_add(int64_t acc, int64_t a, int64_t b) const {
    return wrap(d_, static_cast<uint64_t>(acc) + static_cast<uint64_t>(mul(a, b)));
  }
  void add_term(const UOpRef& u, int64_t c) {
    auto [it, fresh] = index_.try_emplace(u.get(), terms_.size());
    if (fresh) terms_.push_back({u, 0});
    terms_[it->second].coef = mul_add(terms_[it->second].coef, c, 1);
  }

  DType d_;
  std::vector<Term> terms_;
  std::unordered_map<const UOp*, size_t> index_;
  int64_t constant_ = 0;
};

// u as an exact integer sum: u's ranges are facts and Σ coef·term + const stays within the dtype, so
// it equals u without wraparound and the terms' ranges bound it.
std::optional<Linear> exact_linear(const UOpRef& u) {
  if (!is_index_int(u->dtype) || !trusted(u)) return std::nullopt;
  Linear l = Linear::of(u);
  if (!l.range().within(u->dtype)) return std::nullopt;
  return l;
}

// A digit of a mixed-radix number: (z // a) % n, with n == 0 meaning no modulo.
struct Digit {
  UOpRef z;
  int64_t a, n;
};
Digit as_digit(const UOpRef& t) {
  if (t->op == Ops::MOD && pos_const(t->src[1])) {
    const UOpRef& in = t->src[0];
    if (in->op == Ops::IDIV && pos_const(in->src[1])) return {in->src[0], pos_const(in->src[1]), pos_const(t->src[1])};
    return {in, 1, pos_const(t->src[1])};
  }
  if (t->op == Ops::IDIV && pos_const(t->src[1])) return {t->src[0], pos_const(t->src[1]), 0};
  return {t, 1, 0};
}
UOpRef digit_node(const Digit& d) {
  UOpRef u = d.z;
  if (d.a > 1) u = mk(Ops::IDIV, u, iconst(u->dtype, d.a));
  if (d.n > 0) u = mk(Ops::MOD, u, iconst(u->dtype, d.n));
  return u;
}

// Joins two adjacent digits of the same number: k·((z//a)%n1) + k·n1·((z//(a·n1))%n2) = k·((z//a)%(n1·n2))
// (n2 absent: k·(z//a)). This is (x//c)*c + x%c -> x in general form. C's truncating division keeps
// x == (x/c)*c + x%c and (x/a)/b == x/(a*b) for every sign, so no range condition is needed.
bool merge_digit_pair(Linear& l) {
  std::vector<Linear::Term> ts = l.terms();
  std::vector<Digit> ds;
  for (const auto& t : ts) ds.push_back(as_digit(t.node));
  for (size_t i = 0; i < ts.size(); i++) {
    if (ds[i].n == 0) continue;
    for (size_t j = 0; j < ts.size(); j++) {
      if (i == j || ds[i].z != ds[j].z) continue;
      auto a_next = checked_mul(ds[i].a, ds[i].n);
      if (!a_next || *a_next != ds[j].a) continue;
      if (ts[j].coef != wrap(l.dtype(), static_cast<uint64_t>(ts[i].coef) * static_cast<uint64_t>(ds[i].n))) continue;
      int64_t n = 0;
      if (ds[j].n) {
        auto nn = checked_mul(ds[i].n, ds[j].n);
        if (!nn || !representable(l.dtype(), *nn)) continue;
        n = *nn;
      }
      l.remove(ts[i].node);
      l.remove(ts[j].node);
      l.add(digit_node({ds[i].z, ds[i].a, n}), ts[i].coef);
      return true;
    }
  }
  return false;
}

// =============================================================================================
// 4. Rewrite functions

// ---- constant folding ----

UOpRef fold_constants(const UOpRef& a) {
  if (arity(a->op) != static_cast<int>(a->src.size())) return {};
  for (const UOpRef& s : a->src)
    if (s->op != Ops::CONST) return {};
  if (a->op == Ops::WHERE) return a->src[a->src[0]->const_value() != 0 ? 1 : 2];
  bool cmp = group::Comparison.has(a->op);
  DType d = cmp ? a->src[0]->dtype : a->dtype;  // the dtype the operation is computed in
  size_t first_value = a->op == Ops::WHERE ? 1 : 0;
  for (size_t i = first_value; i < a->src.size(); i++)
    if (a->src[i]->dtype.scalar != d.scalar) return {};
  try {
    if (is_intlike(d)) {
      std::vector<int64_t> v;
      for (size_t i = 0; i < a->src.size(); i++)
        v.push_back(i < first_value ? a->src[i]->const_value() != 0 : ival(a->src[i].get()));
      int64_t r = exec_int(a->op, d.base(), v);
      return UOp::make(Ops::CONST, a->dtype, {}, cmp ? r : wrap(a->dtype, r));
    }
    if (d.is_float() && !d.ptr) {
      std::vector<double> v;
      for (const UOpRef& s : a->src) v.push_back(s->const_value());
      double r = exec_float(a->op, d.base(), v);
      return UOp::const_(a->dtype, r);
    }
  } catch (const Error&) {
    // Not foldable (division by zero, an undefined shift, an op the dtype lacks): leave it for runtime.
  }
  return {};
}

// CAST of a CONST with C conversion semantics.
UOpRef fold_cast(const UOpRef& root) {
  const UOp* c = root->src[0].get();
  DType to = root->dtype, from = c->dtype;
  if (to.ptr || from.ptr) return {};
  try {
    if (is_intlike(to)) {
      int64_t v = is_intlike(from) ? wrap(to, static_cast<uint64_t>(ival(c))) : int_from_double(to, c->const_value());
      return UOp::make(Ops::CONST, to, {}, v);
    }
    if (to.is_float()) return UOp::const_(to, round_float(to, c->const_value()));
  } catch (const Error&) {
  }
  return {};
}

// True when every value of `from` converts to `to` exactly.
bool lossless(DType from, DType to) {
  if (from == to || from.is_bool()) return true;
  if (from.is_int() && to.is_int()) return to.min_value() <= from.min_value() && to.max_value() >= from.max_value();
  auto mant = [](DType d) {
    switch (d.scalar) {
      case ScalarType::Float16: return 11;
      case ScalarType::BFloat16: return 8;
      case ScalarType::Float32: return 24;
      case ScalarType::Float64: return 53;
      default: return 0;
    }
  };
  if (from.is_int() && to.is_float()) return std::max(-from.min_value(), from.max_value()) <= std::ldexp(1.0, mant(to));
  if (from.is_float() && to.is_float())
    return mant(from) <= mant(to) && !(from.scalar == ScalarType::Float16 && to.scalar == ScalarType::BFloat16);
  return false;
}

// ---- value ranges ----

// An integer or bool node whose range is a single value is that value.
UOpRef fold_known_value(const UOpRef& u) {
  if (!is_intlike(u->dtype) || u->vmin() != u->vmax() || !trusted(u)) return {};
  return UOp::make(Ops::CONST, u->dtype, {}, int_from_double(u->dtype, u->vmin()));
}

// Comparisons whose answer the operands' ranges already decide.
UOpRef decide_compare(const UOpRef& root) {
  const UOpRef &a = root->src[0], &b = root->src[1];
  if (!is_intlike(a->dtype)) return {};
  std::optional<bool> r;
  bool disjoint = a->vmax() < b->vmin() || b->vmax() < a->vmin();
  switch (root->op) {
    case Ops::CMPLT:
      if (a->vmax() < b->vmin()) r = true;
      else if (a->vmin() >= b->vmax()) r = false;
      break;
    case Ops::CMPNE: if (disjoint) r = true; break;
    case Ops::CMPEQ: if (disjoint) r = false; break;
    default: break;
  }
  if (!r || !trusted(a) || !trusted(b)) return {};
  return UOp::const_(root->dtype, *r);
}

UOpRef fold_max_by_range(const UOpRef& root) {
  const UOpRef &a = root->src[0], &b = root->src[1];
  if (!is_intlike(root->dtype)) return {};
  if (a->vmin() >= b->vmax() && trusted(a) && trusted(b)) return a;
  if (a->vmax() <= b->vmin() && trusted(a) && trusted(b)) return b;
  return {};
}

// ---- sums ----

// The term of `u` without its constant factor, if u is a plain term (not a sum or a constant).
const UOp* term_base(const UOp* u) {
  if (u->op == Ops::MUL && is_iconst(u->src[1].get())) u = u->src[0].get();
  bool linear = u->op == Ops::ADD || u->op == Ops::SUB || u->op == Ops::NEG || u->op == Ops::CONST ||
                (u->op == Ops::MUL && (is_iconst(u->src[0].get()) || is_iconst(u->src[1].get())));
  return linear ? nullptr : u;
}

// ADD(sum, term) is already canonical when `sum` is (graph_rewrite rewrites sources first), has no
// constant, and `term` sorts after its last term and cannot join it as a digit or a constant. This
// keeps long sums from being re-sorted at every prefix.
bool already_canonical(const UOpRef& root) {
  if (root->op != Ops::ADD) return false;
  const UOp *sum = root->src[0].get(), *last = sum->op == Ops::ADD ? sum->src[1].get() : sum;
  const UOp *a = term_base(last), *b = term_base(root->src[1].get());
  return a && b && b->op != Ops::IDIV && b->op != Ops::MOD && b->vmin() != b->vmax() && cmp_node(a, b) < 0;
}

// ADD/SUB/NEG and multiplication by a constant on integers: flatten to a Linear, combine like terms,
// join mixed-radix digits, and rebuild in canonical order. Rebuilding a canonical sum gives the same
// node back, so this reaches a fixed point.
UOpRef normalize_sum(const UOpRef& root) {
  // uint64 is left alone: its coefficients (e.g. -1 = 2^64-1) are not exact as doubles.
  if (!is_index_int(root->dtype) || already_canonical(root)) return {};
  if (root->op == Ops::MUL && !is_iconst(root->src[0].get()) && !is_iconst(root->src[1].get())) return {};
  Linear l = Linear::of(root);
  for (int i = 0; i < 64 && merge_digit_pair(l); i++) {
  }
  return l.build();
}

// ---- division and modulo ----

// x//y or x%y when x's range lies inside one quotient interval of y (any signs: trunc is monotonic).
UOpRef divmod_by_range(const UOpRef& d) {
  const UOpRef &x = d->src[0], &y = d->src[1];
  if (!(y->vmin() > 0 || y->vmax() < 0) || !trusted(x) || !trusted(y)) return {};
  double q[4] = {std::trunc(x->vmin() / y->vmin()), std::trunc(x->vmin() / y->vmax()),
                 std::trunc(x->vmax() / y->vmin()), std::trunc(x->vmax() / y->vmax())};
  if (!std::all_of(q, q + 4, [&](double v) { return v == q[0]; })) return {};
  int64_t qv = static_cast<int64_t>(q[0]);
  if (d->op == Ops::IDIV) return iconst(d->dtype, qv);
  Linear l = Linear::of(x);
  l.add(y, -qv);
  return l.build();  // x - q*y
}

// Rules for x//c and x%c with a constant c > 0. `x` must be trusted and `l` its exact Linear form.
class DivMod {
 public:
  DivMod(const UOpRef& d, int64_t c, Linear l) : d_(d), x_(d->src[0]), c_(c), l_(std::move(l)), div_(d->op == Ops::IDIV) {
    ts_ = l_.terms();
  }

  // Exact division: every coefficient and the constant are multiples of c (any sign).
  UOpRef exact() const {
    if (l_.constant() % c_ != 0) return {};
    for (const auto& t : ts_)
      if (t.coef % c_ != 0) return {};
    if (!div_) return iconst(dt(), 0);
    Linear q(dt());
    for (const auto& t : ts_) q.add(t.node, t.coef / c_);
    q.add_const(l_.constant() / c_);
    return q.build();
  }

  // One variable term taking two values: evaluate both and interpolate (any signs).
  UOpRef binary_numerator() const {
    if (ts_.size() != 1) return {};
    const auto& [t, f] = ts_[0];
    if (t->vmax() - t->vmin() != 1) return {};
    auto at = [&](double v) {
      int64_t n = f * static_cast<int64_t>(v) + l_.constant();
      return div_ ? cdiv(n, c_) : cmod(n, c_);
    };
    int64_t y1 = at(t->vmin()), y2 = at(t->vmax());
    Linear r(dt());
    r.add(t, y2 - y1);
    r.add_const(y1 - (y2 - y1) * static_cast<int64_t>(t->vmin()));
    return r.build();
  }

  // x >= 0: write x = c·Q + rem with each coefficient's remainder taken nearest to zero; when rem's
  // range sits in one period [q·c, q·c+c), x//c = Q+q and x%c = rem-q·c, with no division left.
  UOpRef congruence() const {
    std::vector<std::vector<int64_t>> choices;
    for (const auto& t : ts_) {
      int64_t r = floormod(t.coef, c_);
      if (r == c_ - r) choices.push_back({r, r - c_});  // a tie: either may fit
      else choices.push_back({r < c_ - r ? r : r - c_});
    }
    size_t combos = 1;
    for (const auto& ch : choices) combos = std::min<size_t>(combos * ch.size(), 16);
    int64_t kq = floordiv(l_.constant(), c_), kr = floormod(l_.constant(), c_);
    for (size_t combo = 0; combo < combos; combo++) {
      std::vector<int64_t> rem(ts_.size());
      size_t bits = combo;
      Interval range{static_cast<double>(kr), static_cast<double>(kr)};
      for (size_t i = 0; i < ts_.size(); i++) {
        rem[i] = choices[i][choices[i].size() == 2 ? (bits & 1) : 0];
        if (choices[i].size() == 2) bits >>= 1;
        double a = rem[i] * ts_[i].node->vmin(), b = rem[i] * ts_[i].node->vmax();
        range.lo += std::min(a, b);
        range.hi += std::max(a, b);
      }
      if (std::fabs(range.lo) > 1e15 || std::fabs(range.hi) > 1e15) return {};
      int64_t q = floordiv(static_cast<int64_t>(range.lo), c_);
      if (q != floordiv(static_cast<int64_t>(range.hi), c_)) continue;
      Linear r(dt());
      for (size_t i = 0; i < ts_.size(); i++) r.add(ts_[i].node, div_ ? (ts_[i].coef - rem[i]) / c_ : rem[i]);
      r.add_const(div_ ? kq + q : kr - q * c_);
      return r.build();
    }
    return {};
  }

  // x >= 0: move the multiples of c out, then divide out the gcd g of c and what remains:
  //   x//c = Q + R'//(c/g),   x%c = (R' % (c/g))·g + (k mod c) mod g,   where R' >= 0.
  // For // only whole multiples move to Q (splitting a coefficient would add a term); for % every
  // coefficient is reduced to its residue nearest zero (so 23-i stays 23-i instead of 5i+5, and
  // (z//c)*c + z%c can still meet).
  UOpRef split_remainder() const {
    int64_t kr = floormod(l_.constant(), c_);
    bool changed = kr != l_.constant();
    Linear quo(dt());
    std::vector<Linear::Term> rem;
    for (const auto& t : ts_) {
      int64_t r = floormod(t.coef, c_);
      if (!div_ && r > c_ - r) r -= c_;
      if (div_ && r == 0) {
        quo.add(t.node, t.coef / c_);
        changed = true;
      } else if (div_) {
        rem.push_back(t);
      } else {
        changed |= r != t.coef;
        if (r) rem.push_back({t.node, r});
      }
    }
    if (rem.empty()) return {};  // a constant remainder: the other rules handle it
    int64_t g = c_;
    for (const auto& t : rem) g = std::gcd(g, t.coef);
    if (!changed && g == 1) return {};
    Linear r2(dt());
    for (const auto& t : rem) r2.add(t.node, t.coef / g);
    r2.add_const(kr / g);
    if (Interval r = r2.range(); r.lo < 0 || !r.within(dt())) return {};
    UOpRef cg = iconst(dt(), c_ / g);
    if (!div_) {
      Linear out(dt());
      out.add(mk(Ops::MOD, r2.build(), cg), g);
      out.add_const(kr % g);
      return out.build();
    }
    quo.add_const(floordiv(l_.constant(), c_));
    quo.add(mk(Ops::IDIV, r2.build(), cg), 1);
    return quo.build();
  }

  // x >= 0, x%c: a term (u % m)·k with c | m is ≡ u·k (mod c). Needs the sum to stay >= 0.
  UOpRef remove_inner_mod() const {
    if (div_) return {};
    Linear r(dt());
    bool changed = false;
    for (const auto& t : ts_) {
      int64_t m = t.node->op == Ops::MOD ? pos_const(t.node->src[1]) : 0;
      bool drop = m && m % c_ == 0;
      r.add(drop ? t.node->src[0] : t.node, t.coef);
      changed |= drop;
    }
    r.add_const(l_.constant());
    if (Interval v = r.range(); !changed || v.lo < 0 || !v.within(dt())) return {};
    return mk(Ops::MOD, r.build(), iconst(dt(), c_));
  }

  // (z//a + k)//c -> (z + k·a)//(a·c) for z, k >= 0: floor of floor.
  UOpRef merge_div_const() const {
    if (!div_ || ts_.size() != 1 || ts_[0].coef != 1 || l_.constant() < 0) return {};
    const UOpRef& t = ts_[0].node;
    int64_t a = t->op == Ops::IDIV ? pos_const(t->src[1]) : 0;
    if (!a || t->src[0]->vmin() < 0 || !trusted(t->src[0])) return {};
    auto ka = checked_mul(l_.constant(), a), ac = checked_mul(a, c_);
    if (!ka || !ac || !representable(dt(), *ac)) return {};
    Linear n = Linear::of(t->src[0]);
    n.add_const(*ka);
    if (!n.range().within(dt())) return {};
    return mk(Ops::IDIV, n.build(), iconst(dt(), *ac));
  }

  // x >= 0: divide by a factor f of c first when x//f simplifies away (e.g. (a*4+b)//8 with b<4 is
  // (a*4+b)//4//2 = a//2):  x//c = (x//f)//(c/f),  x%c = ((x//f)%(c/f))·f + x%f  with x%f folded.
  UOpRef nest_by_factor() const {
    std::vector<int64_t> factors;
    for (const auto& t : ts_) {
      int64_t f = t.coef < 0 ? -t.coef : t.coef;
      if (f > 1 && f < c_ && c_ % f == 0) factors.push_back(f);
    }
    std::sort(factors.begin(), factors.end());
    factors.erase(std::unique(factors.begin(), factors.end()), factors.end());
    UOpRef best;
    size_t best_size = 0;
    for (int64_t f : factors) {
      UOpRef fc = iconst(dt(), f);
      UOpRef y = simplify(mk(Ops::IDIV, x_, fc));
      if ((y->op == Ops::IDIV && y->src[1] == fc) || y->vmin() < 0 || !trusted(y)) continue;
      UOpRef cand;
      if (div_) {
        cand = mk(Ops::IDIV, y, iconst(dt(), c_ / f));
      } else {
        Linear low(dt());  // x%f as a sum, valid when it lies in [0, f)
        for (const auto& t : ts_) low.add(t.node, floormod(t.coef, f));
        low.add_const(floormod(l_.constant(), f));
        Interval r = low.range();
        if (r.lo < 0 || r.hi >= static_cast<double>(f)) continue;
        Linear out(dt());
        out.add(mk(Ops::MOD, y, iconst(dt(), c_ / f)), f);
        out.add(low.build(), 1);
        cand = out.build();
      }
      size_t size = node_count(cand);
      if (!best || size < best_size) best = cand, best_size = size;
    }
    return best;
  }

 private:
  DType dt() const { return d_->dtype; }
  UOpRef d_, x_;
  int64_t c_;
  Linear l_;
  bool div_;
  std::vector<Linear::Term> ts_;
};

UOpRef fold_divmod(const UOpRef& d) {
  const UOpRef &x = d->src[0], &y = d->src[1];
  DType dt = d->dtype;
  if (!is_index_int(dt)) return {};
  bool div = d->op == Ops::IDIV;
  // x//x = 1, x%x = 0 when x is never 0
  if (x == y && (x->vmin() > 0 || x->vmax() < 0) && trusted(x)) return iconst(dt, div ? 1 : 0);
  if (UOpRef r = divmod_by_range(d)) return r;
  if (!is_iconst(y.get())) return {};
  int64_t c = ival(y.get());
  if (c == 0) return {};
  // Negative divisors: C's x/-c = -(x/c) and x%-c = x%c.
  if (c < 0) {
    if (!representable(dt, -c)) return {};
    UOpRef p = iconst(dt, -c);
    return div ? mk(Ops::MUL, mk(Ops::IDIV, x, p), iconst(dt, -1)) : mk(Ops::MOD, x, p);
  }
  if (c == 1) return div ? x : iconst(dt, 0);
  // Nested div/mod by constants; these identities hold for every sign in C:
  //   (z%m)//c -> (z//c)%(m/c) and (z%m)%c -> z%c when c | m;  (z//a)//c -> z//(a·c).
  if (int64_t m = x->op == Ops::MOD ? pos_const(x->src[1]) : 0; m && m % c == 0)
    return div ? mk(Ops::MOD, mk(Ops::IDIV, x->src[0], y), iconst(dt, m / c)) : mk(Ops::MOD, x->src[0], y);
  if (int64_t a = x->op == Ops::IDIV ? pos_const(x->src[1]) : 0; a && div) {
    if (auto ac = checked_mul(a, c); ac && representable(dt, *ac)) return mk(Ops::IDIV, x->src[0], iconst(dt, *ac));
  }
  std::optional<Linear> l = exact_linear(x);
  if (!l) return {};
  DivMod dm(d, c, *l);
  if (UOpRef r = dm.exact()) return r;
  if (UOpRef r = dm.binary_numerator()) return r;
  // x <= 0: -((-x)//c) and -((-x)%c), so the rules for x >= 0 apply.
  if (x->vmax() <= 0 && -l->range().lo <= hi_bound(dt)) {
    Linear nx(dt);
    nx.add(x, -1);
    return mk(Ops::MUL, mk(d->op, nx.build(), y), iconst(dt, -1));
  }
  if (x->vmin() < 0) return {};
  for (auto rule : {&DivMod::congruence, &DivMod::merge_div_const, &DivMod::split_remainder,
                    &DivMod::remove_inner_mod, &DivMod::nest_by_factor})
    if (UOpRef r = (dm.*rule)()) return r;
  return {};
}

// ---- comparisons ----

// y//d < c  <=>  y < lower(c) for d > 0 (trunc division; checked for both signs of c).
std::optional<int64_t> div_lt_bound(int64_t c, int64_t d) {
  auto cd = checked_mul(c, d);
  if (!cd) return std::nullopt;
  return c > 0 ? *cd : *cd - (d - 1);
}

// Integer CMPLT with a constant on one side: move constants across, divide out positive factors.
UOpRef fold_lt(const UOpRef& root) {
  const UOpRef &a = root->src[0], &b = root->src[1];
  DType dt = a->dtype;
  if (!is_index_int(dt)) return {};
  bool const_right = is_iconst(b.get());
  if (!const_right && !is_iconst(a.get())) return {};
  int64_t c = ival((const_right ? b : a).get());
  const UOpRef& x = const_right ? a : b;
  auto lt = [&](const UOpRef& l, const UOpRef& r) { return mk(Ops::CMPLT, l, r); };
  auto k = [&](int64_t v) -> std::optional<UOpRef> {
    if (!representable(dt, v)) return std::nullopt;
    return iconst(dt, v);
  };
  // y//d < c -> y < lower(c);  c < y//d <=> !(y//d < c+1) -> lower(c+1)-1 < y
  if (int64_t d = x->op == Ops::IDIV ? pos_const(x->src[1]) : 0) {
    if (const_right) {
      if (auto bound = div_lt_bound(c, d); bound && k(*bound)) return lt(x->src[0], *k(*bound));
    } else if (c < std::numeric_limits<int64_t>::max()) {
      if (auto bound = div_lt_bound(c + 1, d); bound && k(*bound - 1)) return lt(*k(*bound - 1), x->src[0]);
    }
  }
  std::optional<Linear> l = exact_linear(x);
  if (!l) return {};
  std::vector<Linear::Term> ts = l->terms();
  if (ts.empty()) return {};
  // y + k < c -> y < c-k  (and c < y + k -> c-k < y); y itself must not wrap
  if (int64_t kc = l->constant(); kc != 0) {
    Linear y = *l;
    y.add_const(-kc);
    int64_t diff;
    if (__builtin_sub_overflow(c, kc, &diff) || !k(diff) || !y.range().within(dt)) return {};
    return const_right ? lt(y.build(), *k(diff)) : lt(*k(diff), y.build());
  }
  // y·f < c -> y < ceil(c/f) (f > 0) or floor(c/f) < y (f < 0); c < y·f the other way round
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  if (ts.size() == 1 && ts[0].coef != 1 && ts[0].coef != kMin && c != kMin) {
    const auto& [y, f] = ts[0];
    int64_t fl = f > 0 ? floordiv(c, f) : floordiv(-c, -f), ce = f > 0 ? ceildiv(c, f) : ceildiv(-c, -f);
    bool upper_bound = const_right == (f > 0);
    if (!k(upper_bound ? ce : fl)) return {};
    return upper_bound ? lt(y, *k(ce)) : lt(*k(fl), y);
  }
  // Σ f·y + small < c with g = gcd(c, big factors) and 0 <= small < g  ->  Σ (f/g)·y < c/g
  if (!const_right) return {};
  int64_t g = c;
  for (const auto& t : ts)
    if (t.coef != 1 && t.coef != -1) g = std::gcd(g, t.coef);
  if (g <= 1) return {};
  Linear big(dt), small(dt);
  for (const auto& t : ts) (t.coef % g == 0 ? big : small).add(t.node, t.coef % g == 0 ? t.coef / g : t.coef);
  Interval sr = small.range();
  if (big.terms().empty() || sr.lo < 0 || sr.hi >= static_cast<double>(g)) return {};
  return lt(big.build(), iconst(dt, c / g));
}

// !(x < c) -> c-1 < x and !(c < x) -> x < c+1 on integers, so negated bounds are bounds again.
UOpRef negate_lt(const UOpRef& lt) {
  const UOpRef &a = lt->src[0], &b = lt->src[1];
  if (!is_index_int(a->dtype)) return {};
  constexpr int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  if (is_iconst(b.get()) && ival(b.get()) != lo && representable(a->dtype, ival(b.get()) - 1))
    return mk(Ops::CMPLT, iconst(a->dtype, ival(b.get()) - 1), a);
  if (is_iconst(a.get()) && ival(a.get()) != hi && representable(a->dtype, ival(a.get()) + 1))
    return mk(Ops::CMPLT, b, iconst(a->dtype, ival(a.get()) + 1));
  return {};
}

// =============================================================================================
// 5. Pattern matchers

using Rule = PatternMatcher::Rule;
using Fn = UOpRef (*)(const UOpRef&);
// A rule whose function looks at the matched node itself.
Rule on_root(UPat pat, Fn f, SourceLoc where = SourceLoc::current()) {
  return Rule{std::move(pat), [f](RewriteCtx*, const Match& m) { return f(m.root()); }, where};
}
// A rule returning capture `name` when `pred(m)` holds.
template <class Pred>
Rule keep(UPat pat, const char* name, Pred pred, SourceLoc where = SourceLoc::current()) {
  return Rule{std::move(pat), [name, pred](RewriteCtx*, const Match& m) { return pred(m) ? m[name] : UOpRef(); }, where};
}
Rule keep(UPat pat, const char* name, SourceLoc where = SourceLoc::current()) {
  return keep(std::move(pat), name, [](const Match&) { return true; }, where);
}

bool int_node(const UOpRef& u) { return is_int(u->dtype); }
bool intbool_node(const UOpRef& u) { return is_intlike(u->dtype); }
bool bool_node(const UOpRef& u) { return u->dtype.is_bool() && !u->dtype.ptr; }
bool float_node(const UOpRef& u) { return u->dtype.is_float() && !u->dtype.ptr; }
bool x_is_bool(const Match& m) { return bool_node(m["x"]); }
bool cflag(const UOpRef& c) { return c->const_value() != 0; }
// x + c == x exactly: c is 0, and for floats -0.0 (x + +0.0 turns -0.0 into +0.0).
bool adds_nothing(const UOpRef& x, const UOpRef& c) {
  return c->is_const(0) && (!float_node(x) || std::signbit(c->const_value()));
}
// x - c == x exactly: c is +0.0 for floats, 0 otherwise.
bool subtracts_nothing(const UOpRef& c) { return c->is_const(0) && !std::signbit(c->const_value()); }

// A rule rewriting to the zero of x's dtype when `ok(x)`.
Rule to_zero(UPat pat, bool (*ok)(const UOpRef&), SourceLoc where = SourceLoc::current()) {
  return Rule{std::move(pat), [ok](RewriteCtx*, const Match& m) { return ok(m["x"]) ? m["x"]->const_like(0) : UOpRef(); }, where};
}
// A rule rewriting to NOT x (x != true) for a bool x.
Rule to_not(UPat pat, SourceLoc where = SourceLoc::current()) {
  return Rule{std::move(pat), [](RewriteCtx*, const Match& m) { return x_is_bool(m) ? mk_not(m["x"]) : UOpRef(); }, where};
}

PatternMatcher make_symbolic_simple() {
  const UPat x = UPat::var("x"), y = UPat::var("y"), c = UPat::cvar("c");
  const UPat t = UPat::var("t"), f = UPat::var("f");
  const UPat zero = UPat::cconst(0), one = UPat::cconst(1);
  const UPat btrue = UPat::cconst(1).with_dtypes({dtypes::bool_}), bfalse = UPat::cconst(0).with_dtypes({dtypes::bool_});
  auto alu = [](Ops op, std::vector<UPat> src) { return UPat::op(op, std::move(src)); };
  auto not_ = [&](const UPat& p) { return alu(Ops::CMPNE, {p, btrue}); };
  std::vector<Rule> rules = {
      // ** constant folding: ALU on CONSTs, CAST of a CONST, CAST to the same dtype **
      on_root(UPat(group::ALU).any_src(), fold_constants),
      on_root(UPat(Ops::CAST, {UPat::cvar()}), fold_cast),
      on_root(UPat(Ops::CAST, {x}), [](const UOpRef& r) { return r->dtype == r->src[0]->dtype ? r->src[0] : UOpRef(); }),
      // b.cast(a).cast(b) -> b, and widening twice is widening once, when the middle type loses nothing
      on_root(UPat(Ops::CAST, {UPat(Ops::CAST, {x})}),
              [](const UOpRef& r) {
                const UOpRef &mid = r->src[0], &in = mid->src[0];
                if (!lossless(in->dtype.base(), mid->dtype.base())) return UOpRef();
                return r->dtype == in->dtype ? in : in->cast(r->dtype);
              }),
      // ** canonical order: constants to the right of commutative ops **
      on_root(UPat(group::Commutative, {c, x}),
              [](const UOpRef& r) { return r->src[1]->op == Ops::CONST ? UOpRef() : r->with_src({r->src[1], r->src[0]}); }),
      // ** identities. Floats keep IEEE results: x+(-0.0), x-(+0.0), x*1, x/1 are exact; x+0.0, x*0 are not **
      keep(x + c, "x", [](const Match& m) { return adds_nothing(m["x"], m["c"]); }),
      keep(UPat(Ops::SUB, {x, c}), "x", [](const Match& m) { return subtracts_nothing(m["c"]); }),
      keep(x * one, "x"),
      keep(UPat(Ops::FDIV, {x, one}), "x"),
      keep(x / one, "x", [](const Match& m) { return int_node(m["x"]); }),
      to_zero(x * zero, intbool_node),
      to_zero(x % one, int_node),
      to_zero(UPat(Ops::SUB, {x, x}), int_node),
      keep(UPat(Ops::NEG, {UPat(Ops::NEG, {x})}), "x"),
      // ** x op x **
      keep(UPat(OpSet{Ops::MAX, Ops::AND, Ops::OR}, {x, x}), "x"),
      {x < x, [](RewriteCtx*, const Match& m) { return UOp::const_(m.root()->dtype, 0); }},  // also for NaN
      {UPat(OpSet{Ops::CMPNE, Ops::CMPEQ}, {x, x}),
       [](RewriteCtx*, const Match& m) {
         return intbool_node(m["x"]) ? UOp::const_(m.root()->dtype, m.root()->op == Ops::CMPEQ) : UOpRef();
       }},
      // ** bool logic. NOT is written x != true **
      {UPat::op(Ops::AND, {x, c}).with_dtypes({dtypes::bool_}),
       [](RewriteCtx*, const Match& m) { return cflag(m["c"]) ? m["x"] : m["c"]; }},
      {UPat::op(Ops::OR, {x, c}).with_dtypes({dtypes::bool_}),
       [](RewriteCtx*, const Match& m) { return cflag(m["c"]) ? m["c"] : m["x"]; }},
      keep(not_(not_(x)), "x", x_is_bool),
      keep(alu(Ops::CMPNE, {x, bfalse}), "x", x_is_bool),
      keep(alu(Ops::CMPEQ, {x, btrue}), "x", x_is_bool),
      to_not(alu(Ops::CMPEQ, {x, bfalse})),
      // C's bool arithmetic: + and max are OR, * is AND
      {UPat(OpSet{Ops::ADD, Ops::MAX, Ops::MUL}, {x, y}).with_dtypes({dtypes::bool_}),
       [](RewriteCtx*, const Match& m) { return mk(m.root()->op == Ops::MUL ? Ops::AND : Ops::OR, m["x"], m["y"]); }},
      // ** WHERE **
      {UPat(Ops::WHERE, {c, t, f}), [](RewriteCtx*, const Match& m) { return cflag(m["c"]) ? m["t"] : m["f"]; }},
      keep(UPat(Ops::WHERE, {UPat(), t, t}), "t"),
      keep(UPat(Ops::WHERE, {x, btrue, bfalse}), "x", x_is_bool),
      to_not(UPat(Ops::WHERE, {x, bfalse, btrue})),
      {UPat(Ops::WHERE, {not_(x), t, f}),
       [](RewriteCtx*, const Match& m) { return x_is_bool(m) ? m["x"]->alu(Ops::WHERE, {m["f"], m["t"]}) : UOpRef(); }},
      // ** facts from value ranges **
      on_root(UPat(group::Comparison, {x, y}), decide_compare),
      on_root(UPat(group::ALU | OpSet{Ops::CAST}).any_src(), fold_known_value),
  };
  return PatternMatcher(std::move(rules));
}

PatternMatcher make_symbolic_index() {
  const UPat x = UPat::var("x"), y = UPat::var("y"), c1 = UPat::cvar("c1"), c2 = UPat::cvar("c2");
  std::vector<Rule> rules = {
      // ** canonical order of variable operands (ints): like products and compares meet. ADD is
      // ordered by normalize_sum instead. **
      on_root(UPat(OpSet{Ops::MUL, Ops::MAX, Ops::AND, Ops::OR, Ops::XOR, Ops::CMPNE, Ops::CMPEQ}, {x, y}),
              [](const UOpRef& r) {
                const UOpRef &a = r->src[0], &b = r->src[1];
                if (!is_intlike(a->dtype) || a->op == Ops::CONST || b->op == Ops::CONST) return UOpRef();
                return cmp_node(b.get(), a.get()) < 0 ? r->with_src({b, a}) : UOpRef();
              }),
      // ** sums: combine terms and constants, distribute constant factors, (x//c)*c + x%c -> x **
      on_root(UPat(OpSet{Ops::ADD, Ops::SUB, Ops::NEG, Ops::MUL}).any_src(), normalize_sum),
      // (x*c)*y -> (x*y)*c, so the constant is a coefficient of the product
      {(x * c1) * y,
       [](RewriteCtx*, const Match& m) {
         if (!int_node(m["x"]) || m["y"]->op == Ops::CONST || m["x"]->op == Ops::CONST) return UOpRef();
         return mk(Ops::MUL, mk(Ops::MUL, m["x"], m["y"]), m["c1"]);
       }},
      // (x op c1) op c2 -> x op (c1 op c2) for the other associative int ops
      {UPat(OpSet{Ops::AND, Ops::OR, Ops::XOR, Ops::MAX}, {UPat(OpSet{Ops::AND, Ops::OR, Ops::XOR, Ops::MAX}, {x, c1}).named("in"), c2}),
       [](RewriteCtx*, const Match& m) {
         if (m["in"]->op != m.root()->op || !intbool_node(m["x"])) return UOpRef();
         return m.root()->with_src({m["x"], mk(m.root()->op, m["c1"], m["c2"])});
       }},
      on_root(UPat(Ops::MAX, {x, y}), fold_max_by_range),
      // ** div and mod **
      on_root(UPat(OpSet{Ops::IDIV, Ops::MOD}, {x, y}), fold_divmod),
      // ** comparisons **
      on_root(UPat(Ops::CMPLT, {x, y}), fold_lt),
      {UPat::op(Ops::CMPNE, {UPat(Ops::CMPLT, {x, y}).named("lt"), UPat::cconst(1).with_dtypes({dtypes::bool_})}),
       [](RewriteCtx*, const Match& m) { return negate_lt(m["lt"]); }},
  };
  return PatternMatcher(std::move(rules));
}

}  // namespace

// =============================================================================================

double exec_alu(Ops op, DType dtype, const std::vector<double>& operands) {
  if (arity(op) == 0) throw_error("exec_alu: ", op_name(op), " is not an ALU op");
  if (static_cast<int>(operands.size()) != arity(op))
    throw_error("exec_alu: ", op_name(op), " takes ", arity(op), " operands, got ", operands.size());
  DType d = dtype.base();
  if (d.ptr) throw_error("exec_alu: cannot fold on pointer dtype ", dtype.name());
  if (d.is_float()) return exec_float(op, d, operands);
  if (!is_intlike(d)) cannot_fold(op, dtype);
  std::vector<int64_t> v;
  for (size_t i = 0; i < operands.size(); i++)
    v.push_back(op == Ops::WHERE && i == 0 ? operands[i] != 0 : int_from_double(d, operands[i]));
  int64_t r = exec_int(op, d, v);
  return group::Comparison.has(op) ? static_cast<double>(r) : int_to_double(d, r);
}

const PatternMatcher& symbolic_simple() {
  static const PatternMatcher pm = make_symbolic_simple();
  return pm;
}

const PatternMatcher& symbolic() {
  static const PatternMatcher pm = symbolic_simple() + make_symbolic_index();
  return pm;
}

UOpRef simplify(const UOpRef& u, std::string_view traced_name) {
  static const PatternMatcher pm = symbolic() + simplify_valid_rules();
  return graph_rewrite(u, pm, {.name = traced_name});
}

}  // namespace kiln
