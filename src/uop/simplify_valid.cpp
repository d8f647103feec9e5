// Index simplification under a load's validity gate (tinygrad's uop_given_valid). A padded read
// is gated, e.g. `0 < r & r < 41`, and its address was written for every r the loop runs over, so
// it keeps divisions and remainders that only matter where the gate is false: ((r*32-32) % 1280)
// wraps for r = 0 only. Inside the gate each bounded expression X has a narrower range; the
// address is simplified with X replaced by a variable of that range (fresh + lo), then X is put
// back. A gated load whose address becomes linear can then be a vector load.
#include <unordered_map>
#include <vector>

#include "kiln/ir/pattern_matcher.h"
#include "kiln/ir/symbolic.h"

namespace kiln {
namespace {

void clauses_of(const UOpRef& gate, std::vector<UOpRef>& out) {
  if (gate->op == Ops::AND && gate->dtype.is_bool()) {
    for (const UOpRef& s : gate->src) clauses_of(s, out);
  } else {
    out.push_back(gate);
  }
}

int divisions(const UOpRef& u) {
  int n = 0;
  for (const UOp* x : u->toposort()) n += x->op == Ops::IDIV || x->op == Ops::MOD;
  return n;
}

// [lo, hi] of each expression the gate bounds by a constant (X < c, c < X).
std::unordered_map<const UOp*, std::pair<double, double>> bounds_in(const UOpRef& gate) {
  std::vector<UOpRef> clauses;
  clauses_of(gate, clauses);
  std::unordered_map<const UOp*, std::pair<double, double>> out;
  auto bound = [&](const UOpRef& x) -> std::pair<double, double>& {
    return out.try_emplace(x.get(), x->vmin(), x->vmax()).first->second;
  };
  for (const UOpRef& c : clauses) {
    if (c->op != Ops::CMPLT || !c->src[0]->dtype.is_int()) continue;
    const UOpRef &a = c->src[0], &b = c->src[1];
    if (b->op == Ops::CONST && a->op != Ops::CONST) bound(a).second = std::min(bound(a).second, b->const_value() - 1);
    if (a->op == Ops::CONST && b->op != Ops::CONST) bound(b).first = std::max(bound(b).first, a->const_value() + 1);
  }
  return out;
}

// The address with each expression in `narrowed` replaced by a variable of its range inside the
// gate (fresh + lo), simplified, and the expressions put back.
UOpRef simplify_within(const UOpRef& address, const std::vector<std::pair<const UOp*, std::pair<double, double>>>& narrowed) {
  std::unordered_map<const UOp*, UOpRef> to_fresh, back_from_fresh;
  int64_t placeholder = -1;
  for (const auto& [x, range] : narrowed) {
    const auto [lo, hi] = range;
    UOpRef fresh = UOp::make(Ops::RANGE, x->dtype, {UOp::const_(x->dtype, hi - lo + 1)}, RangeArg{placeholder--, AxisType::LOOP});
    to_fresh[x] = fresh + UOp::const_(x->dtype, lo);
    back_from_fresh[fresh.get()] = x->ref() - UOp::const_(x->dtype, lo);
  }
  return simplify(substitute(simplify(substitute(address, to_fresh)), back_from_fresh));
}

// Each bound alone, then all of them together: a padded 2-D read's address ((y*56+x-57) % n) stays
// in range only when both y >= 1 and x >= 1 (then the conv input's padding copy needs no remainder).
UOpRef simplify_given(const UOpRef& address, const UOpRef& gate) {
  std::vector<std::pair<const UOp*, std::pair<double, double>>> narrowed;
  for (const auto& [x, range] : bounds_in(gate)) {
    const auto [lo, hi] = range;
    if (lo > hi || (lo == x->vmin() && hi == x->vmax())) continue;  // never valid, or nothing learned
    narrowed.push_back({x, range});
  }
  UOpRef best = address;
  auto consider = [&](const UOpRef& candidate) {
    if (divisions(candidate) < divisions(best)) best = candidate;
  };
  for (const auto& one : narrowed) consider(simplify_within(best, {one}));
  if (narrowed.size() > 1 && divisions(best) > 0) consider(simplify_within(best, narrowed));
  return best;
}

}  // namespace

std::vector<const UOp*> ranges_pinned_by(const UOpRef& gate) {
  std::vector<const UOp*> out;
  for (const auto& [x, range] : bounds_in(gate))
    if (x->op == Ops::RANGE && range.first == range.second) out.push_back(x);
  return out;
}

const PatternMatcher& simplify_valid_rules() {
  static const PatternMatcher pm{{
      make_rule(UPat(Ops::INDEX).named("i"),
                [](RewriteCtx*, const Match& m) {
                  const UOpRef& idx = m["i"];
                  if (idx->src.size() < 3 || divisions(idx->src[1]) == 0) return UOpRef();
                  UOpRef address = simplify_given(idx->src[1], idx->src[2]);
                  return address == idx->src[1] ? UOpRef() : idx->with_src({idx->src[0], address, idx->src[2]});
                }),
      // A gate that folded to true gates nothing (a PADTO tile's copies short of the loop's end):
      // without it the access is plain, and can be a vector one.
      make_rule(UPat(Ops::INDEX).named("i"),
                [](RewriteCtx*, const Match& m) {
                  const UOpRef& idx = m["i"];
                  if (idx->src.size() < 3 || idx->src[2]->op != Ops::CONST || idx->src[2]->const_value() == 0) return UOpRef();
                  return idx->with_src({idx->src[0], idx->src[1]});
                }),
  }};
  return pm;
}

}  // namespace kiln
