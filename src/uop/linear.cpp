// Facts about nodes and the Linear normal form of index arithmetic (see linear.h).
#include "uop/linear.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <tuple>
#include <unordered_set>

namespace kiln::sym {

// =============================================================================================
// Facts about nodes

namespace {

Interval range_of(const UOp* u) { return {u->vmin(), u->vmax()}; }

}  // namespace

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

namespace {

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

}  // namespace

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

// =============================================================================================
// Linear

void Linear::add(const UOpRef& root, int64_t k) {
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

std::vector<Linear::Term> Linear::terms() const {
  std::vector<Term> t;
  for (const Term& x : terms_)
    if (x.coef != 0) t.push_back(x);
  std::sort(t.begin(), t.end(), [](const Term& a, const Term& b) { return cmp_node(a.node.get(), b.node.get()) < 0; });
  return t;
}

Interval Linear::range() const {
  Interval r{value(constant_), value(constant_)};
  for (const Term& t : terms_) {
    if (t.coef == 0) continue;
    double c = value(t.coef), a = c * t.node->vmin(), b = c * t.node->vmax();
    r.lo += std::min(a, b);
    r.hi += std::max(a, b);
  }
  return r;
}

UOpRef Linear::build() const {
  UOpRef acc;
  for (const Term& t : terms()) {
    UOpRef x = t.coef == 1 ? t.node : mk(Ops::MUL, t.node, iconst(d_, t.coef));
    acc = acc ? mk(Ops::ADD, acc, x) : x;
  }
  if (!acc) return iconst(d_, constant_);
  return constant_ == 0 ? acc : mk(Ops::ADD, acc, iconst(d_, constant_));
}

std::optional<Linear> exact_linear(const UOpRef& u) {
  if (!is_index_int(u->dtype) || !trusted(u)) return std::nullopt;
  Linear l = Linear::of(u);
  if (!l.range().within(u->dtype)) return std::nullopt;
  return l;
}

namespace {

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

}  // namespace

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

}  // namespace kiln::sym
