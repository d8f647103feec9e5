#pragma once
// The normal form of index arithmetic for the symbolic simplifier (kiln/ir/symbolic.h): facts about
// nodes (trusted value ranges, a deterministic structural order), then Linear, integer sums
// Σ coef·term + const, with the digit merging that turns (x//c)*c + x%c back into x.
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "kiln/ir/uop.h"
#include "uop/const_eval.h"

namespace kiln::sym {

// =============================================================================================
// Facts about nodes

inline bool is_iconst(const UOp* u) { return u->op == Ops::CONST && std::holds_alternative<int64_t>(u->arg); }
inline int64_t ival(const UOp* u) { return std::get<int64_t>(u->arg); }
inline UOpRef iconst(DType d, int64_t v) { return UOp::make(Ops::CONST, d, {}, wrap(d, v)); }
// A CONST divisor/factor > 0 of an index dtype, else 0.
inline int64_t pos_const(const UOpRef& u) { return is_iconst(u.get()) && ival(u.get()) > 0 ? ival(u.get()) : 0; }

// The bounds used to check for overflow (64-bit types keep a margin: doubles are inexact there).
inline double lo_bound(DType d) { return d.itemsize() == 8 && !d.is_unsigned() ? -4.6e18 : d.min_value(); }
inline double hi_bound(DType d) { return d.itemsize() == 8 ? 4.6e18 : d.max_value(); }

struct Interval {
  double lo, hi;
  bool within(DType d) const { return lo >= lo_bound(d) && hi <= hi_bound(d); }
};

// compute_range clamps a result to its dtype instead of modelling wraparound (e.g. uint8 x-1 with x
// in [0,1] gets [0,0], but x=0 gives 255), and a wrong range spreads to every user. So a node's
// vmin/vmax are only used as facts after checking that no integer node they were computed from can
// leave its dtype. Checks the node and, through the sources compute_range reads, everything below.
// Nodes whose range is the whole dtype (LOAD, SHL, ...) are facts without looking further.
bool range_trusted(const UOp* root);
inline bool trusted(const UOpRef& u) { return range_trusted(u.get()); }
inline bool trusted_value(const UOpRef& u) { return is_intlike(u->dtype) && range_trusted(u.get()); }

// A total order on nodes by structure (op, dtype, arg, sources), independent of addresses, so sums
// are rebuilt the same way in every run. Hash-consing makes distinct nodes structurally distinct, so
// the first differing source pair decides and the walk is a single path down the graph.
int cmp_node(const UOp* a, const UOp* b);

inline size_t node_count(const UOpRef& u) { return u->toposort().size(); }

// Integer helpers for c > 0.
inline int64_t floordiv(int64_t a, int64_t c) { return a / c - (a % c != 0 && a < 0); }
inline int64_t floormod(int64_t a, int64_t c) { return a - floordiv(a, c) * c; }
inline int64_t ceildiv(int64_t a, int64_t c) { return -floordiv(-a, c); }
// Truncating (C) division and modulo for any nonzero c.
inline int64_t cdiv(int64_t a, int64_t c) { return a / c; }
inline int64_t cmod(int64_t a, int64_t c) { return a % c; }
inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline UOpRef mk(Ops op, const UOpRef& a, const UOpRef& b) { return a->alu(op, {b}); }
inline UOpRef mk_not(const UOpRef& b) { return mk(Ops::CMPNE, b, UOp::const_(b->dtype, 1)); }

// =============================================================================================
// Linear: Σ coef·term + constant over one integer dtype, coefficients wrapped to that dtype.
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
  void add(const UOpRef& root, int64_t k);
  void add_const(int64_t k) { constant_ = wrap(d_, static_cast<uint64_t>(constant_) + static_cast<uint64_t>(k)); }
  void remove(const UOpRef& term) {
    if (auto it = index_.find(term.get()); it != index_.end()) terms_[it->second].coef = 0;
  }

  DType dtype() const { return d_; }
  int64_t constant() const { return constant_; }
  // Nonzero terms in canonical order.
  std::vector<Term> terms() const;
  // Range of the exact (unwrapped) sum, from the terms' ranges.
  Interval range() const;
  UOpRef build() const;

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
std::optional<Linear> exact_linear(const UOpRef& u);

// Joins two adjacent digits of the same number: k·((z//a)%n1) + k·n1·((z//(a·n1))%n2) = k·((z//a)%(n1·n2))
// (n2 absent: k·(z//a)). This is (x//c)*c + x%c -> x in general form. C's truncating division keeps
// x == (x/c)*c + x%c and (x/a)/b == x/(a*b) for every sign, so no range condition is needed.
bool merge_digit_pair(Linear& l);

}  // namespace kiln::sym
