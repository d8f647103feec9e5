#include "kiln/ir/pattern_matcher.h"

#include <algorithm>

#include "kiln/error.h"

namespace kiln {

UPat::UPat(OpSet ops, std::vector<UPat> src, SrcMode mode)
    : ops_(ops), mode_(src.empty() ? SrcMode::Any : mode), src_(std::move(src)) {
  if (mode_ == SrcMode::Permutations && src_.size() != 2) throw_error("UPat: permutations need two sources");
}

UPat UPat::var(std::string name, std::vector<DType> dtypes) {
  UPat p;
  p.name_ = std::move(name);
  p.dtypes_ = std::move(dtypes);
  return p;
}

UPat UPat::cvar(std::string name, std::vector<DType> dtypes) {
  UPat p(Ops::CONST);
  p.name_ = std::move(name);
  p.dtypes_ = std::move(dtypes);
  p.mode_ = SrcMode::Any;
  return p;
}

UPat UPat::cconst(double value) {
  UPat p(Ops::CONST);
  p.const_value_ = value;
  p.mode_ = SrcMode::Any;
  return p;
}

UPat UPat::op(OpSet ops, std::vector<UPat> src) {
  bool commutative = src.size() == 2;
  ops.for_each([&](Ops o) { commutative &= group::Commutative.has(o); });
  return UPat(ops, std::move(src), commutative ? SrcMode::Permutations : SrcMode::Exact);
}

UPat UPat::named(std::string name) const {
  UPat p = *this;
  p.name_ = std::move(name);
  return p;
}
UPat UPat::with_dtypes(std::vector<DType> dtypes) const {
  UPat p = *this;
  p.dtypes_ = std::move(dtypes);
  return p;
}
UPat UPat::with_arg(Arg arg) const {
  UPat p = *this;
  p.arg_ = std::move(arg);
  return p;
}
UPat UPat::any_src() const {
  UPat p = *this;
  p.mode_ = SrcMode::Any;
  p.src_.clear();
  return p;
}

const UOpRef& Match::operator[](std::string_view name) const {
  for (const auto& [n, u] : caps_)
    if (n == name) return u;
  throw_error("pattern capture '", name, "' is not in the match");
}

bool Match::has(std::string_view name) const {
  return std::any_of(caps_.begin(), caps_.end(), [&](const auto& c) { return c.first == name; });
}

// Backtracking matcher: captures are pushed as matching proceeds and popped on failure; a name
// bound twice must bind the same node.
class Matcher {
 public:
  explicit Matcher(Match& m) : m_(m) {}

  bool match(const UPat& p, const UOpRef& u) {
    if (!p.ops_.empty() && !p.ops_.has(u->op)) return false;
    if (!p.dtypes_.empty() &&
        std::none_of(p.dtypes_.begin(), p.dtypes_.end(), [&](DType d) { return d.scalar == u->dtype.scalar; }))
      return false;
    if (p.arg_ && !(*p.arg_ == u->arg)) return false;
    if (p.const_value_ && !(u->op == Ops::CONST && u->const_value() == *p.const_value_)) return false;
    size_t mark = m_.caps_.size();
    if (!p.name_.empty()) {
      for (const auto& [n, v] : m_.caps_)
        if (n == p.name_) {
          if (v != u) return false;
          goto bound;
        }
      m_.caps_.emplace_back(p.name_, u);
    }
  bound:
    if (match_src(p, u)) return true;
    m_.caps_.resize(mark);
    return false;
  }

 private:
  bool match_list(const std::vector<UPat>& pats, const std::vector<UOpRef>& src, const int* order) {
    size_t mark = m_.caps_.size();
    for (size_t i = 0; i < pats.size(); i++)
      if (!match(pats[i], src[order ? order[i] : i])) {
        m_.caps_.resize(mark);
        return false;
      }
    return true;
  }

  bool match_src(const UPat& p, const UOpRef& u) {
    switch (p.mode_) {
      case UPat::SrcMode::Any: return true;
      case UPat::SrcMode::Exact: return p.src_.size() == u->src.size() && match_list(p.src_, u->src, nullptr);
      case UPat::SrcMode::AnyLength:
        return p.src_.size() <= u->src.size() && match_list(p.src_, u->src, nullptr);
      case UPat::SrcMode::Permutations: {
        if (u->src.size() != 2) return false;
        static constexpr int fwd[2] = {0, 1}, rev[2] = {1, 0};
        return match_list(p.src_, u->src, fwd) || match_list(p.src_, u->src, rev);
      }
    }
    return false;
  }

  Match& m_;
};

PatternMatcher::PatternMatcher(std::vector<Rule> rules) : rules_(std::move(rules)) { index(); }

void PatternMatcher::index() {
  by_op_.assign(kNumOps, {});
  for (uint32_t i = 0; i < rules_.size(); i++) {
    const OpSet& ops = rules_[i].pat.ops_;
    for (int o = 0; o < kNumOps; o++)
      if (ops.empty() || ops.has(static_cast<Ops>(o))) by_op_[o].push_back(i);
  }
}

UOpRef PatternMatcher::rewrite(const UOpRef& u, RewriteCtx* ctx, SourceLoc* fired) const {
  for (uint32_t i : by_op_[static_cast<int>(u->op)]) {
    Match m;
    m.root_ = u;
    if (!Matcher(m).match(rules_[i].pat, u)) continue;
    UOpRef r = rules_[i].fn(ctx, m);
    if (r && r != u) {
      if (fired) *fired = rules_[i].where;
      return r;
    }
  }
  return {};
}

PatternMatcher operator+(const PatternMatcher& a, const PatternMatcher& b) {
  std::vector<PatternMatcher::Rule> rules = a.rules_;
  rules.insert(rules.end(), b.rules_.begin(), b.rules_.end());
  return PatternMatcher(std::move(rules));
}

}  // namespace kiln
