// Symbolic simplification (see kiln/ir/symbolic.h): the rewrite rules and the two PatternMatchers.
//
// Layout:
//   const_eval.h/.cpp  constant evaluation (exec_alu): C semantics per dtype
//   linear.h/.cpp      facts about nodes (trusted value ranges, a deterministic structural order)
//                      and Linear: integer sums Σ coef·term + const, the normal form of index arithmetic
//   this file          1. rewrite functions for the bigger rules (sums, div/mod, comparisons)
//                      2. the two PatternMatchers
//
// Integer identities that only reorder + and * (combining terms, distributing constants) hold
// modulo 2^width, so they are valid even when the arithmetic wraps. Everything that reasons with
// value ranges (div/mod folding, comparisons, min==max) first checks that the ranges are facts:
// see range_trusted (linear.h).
#include "kiln/ir/symbolic.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <vector>

#include "kiln/error.h"
#include "uop/linear.h"

namespace kiln {
namespace sym {
namespace {

// =============================================================================================
// 1. Rewrite functions

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
  auto mant = [](DType d) { return d.is_float() ? dtypes::finfo(d).second + 1 : 0; };  // significand bits
  if (from.is_int() && to.is_float()) return std::max(-from.min_value(), from.max_value()) <= std::ldexp(1.0, mant(to));
  // fp8s differ in range, infinities and NaNs: none holds another, every wider float holds them all
  if (from.is_fp8() || to.is_fp8()) return from.is_fp8() && to.is_float() && !to.is_fp8();
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
    auto at = [&, f = f](double v) {  // clang before 16 cannot capture a structured binding implicitly
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
// 2. Pattern matchers

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
      // (x + 0.0) + 0.0 == x + 0.0: a stacked piece among the zeros of the others (cat sums them)
      {UPat::op(Ops::ADD, {UPat::op(Ops::ADD, {x, c}).named("in"), UPat::cvar("d")}),
       [](RewriteCtx*, const Match& m) { return m["c"]->is_const(0) && m["d"]->is_const(0) ? m["in"] : UOpRef(); }},
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
}  // namespace sym

// =============================================================================================

const PatternMatcher& symbolic_simple() {
  static const PatternMatcher pm = sym::make_symbolic_simple();
  return pm;
}

const PatternMatcher& symbolic() {
  static const PatternMatcher pm = symbolic_simple() + sym::make_symbolic_index();
  return pm;
}

UOpRef simplify(const UOpRef& u, std::string_view traced_name) {
  static const PatternMatcher pm = symbolic() + simplify_valid_rules();
  return graph_rewrite(u, pm, {.name = traced_name});
}

}  // namespace kiln
