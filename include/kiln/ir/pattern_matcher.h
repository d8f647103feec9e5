#pragma once
// Patterns over UOps and the rewrite engine. Every stage of kiln is a list of (UPat, rewrite fn)
// rules applied by graph_rewrite: simplification, lowering, codegen, rendering decisions.
//
//   const UPat x = UPat::var("x");
//   PatternMatcher pm{{make_rule(x + UPat::cconst(0), [](RewriteCtx*, const Match& m) { return m["x"]; })}};
//   UOpRef simpler = graph_rewrite(sink, pm);
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kiln/ir/uop.h"

namespace kiln {

// Where a rule was written (std::source_location is missing from clang 14 with libstdc++ 12).
struct SourceLoc {
  const char* file;
  int line;
  static SourceLoc current(const char* file = __builtin_FILE(), int line = __builtin_LINE()) { return {file, line}; }
};

class UPat {
 public:
  enum class SrcMode : uint8_t { Any, Exact, Permutations, AnyLength };

  UPat() = default;  // matches anything
  // Match `ops` whose sources match `src` in order (Permutations: in any order for two sources).
  // Without `src`, any sources match.
  UPat(OpSet ops, std::vector<UPat> src = {}, SrcMode mode = SrcMode::Exact);

  static UPat any(std::string name = "") { return UPat().named(std::move(name)); }
  static UPat var(std::string name, std::vector<DType> dtypes = {});
  static UPat cvar(std::string name = "", std::vector<DType> dtypes = {});  // any CONST
  static UPat cconst(double value);                                          // CONST equal to value
  static UPat op(OpSet ops, std::vector<UPat> src = {});                     // commutative ops: any order

  UPat named(std::string name) const;
  UPat with_dtypes(std::vector<DType> dtypes) const;
  UPat with_arg(Arg arg) const;
  UPat any_src() const;  // keep the op test, ignore sources

  // Builders that read like the expressions they match.
  UPat operator+(const UPat& o) const { return op(Ops::ADD, {*this, o}); }
  UPat operator*(const UPat& o) const { return op(Ops::MUL, {*this, o}); }
  UPat operator/(const UPat& o) const { return op(Ops::IDIV, {*this, o}); }
  UPat operator%(const UPat& o) const { return op(Ops::MOD, {*this, o}); }
  UPat operator<(const UPat& o) const { return op(Ops::CMPLT, {*this, o}); }

 private:
  friend class Matcher;
  friend class PatternMatcher;
  OpSet ops_;  // empty: any op
  std::vector<DType> dtypes_;  // empty: any dtype (compared on the scalar type)
  std::optional<Arg> arg_;
  std::optional<double> const_value_;
  std::string name_;
  SrcMode mode_ = SrcMode::Any;
  std::vector<UPat> src_;
};

// The captures of one successful match: m["x"].
class Match {
 public:
  const UOpRef& operator[](std::string_view name) const;
  const UOpRef& root() const { return root_; }
  bool has(std::string_view name) const;

 private:
  friend class Matcher;
  friend class PatternMatcher;
  UOpRef root_;
  std::vector<std::pair<std::string_view, UOpRef>> caps_;
};

// Context handed to rewrite functions that need state (e.g. the scheduler's range map).
struct RewriteCtx {
  virtual ~RewriteCtx() = default;
  template <class T>
  T& as() {
    return dynamic_cast<T&>(*this);
  }
};

// Returns the replacement, or a null UOpRef for "no rewrite".
using RewriteFn = std::function<UOpRef(RewriteCtx* ctx, const Match& m)>;

class PatternMatcher {
 public:
  struct Rule {
    UPat pat;
    RewriteFn fn;
    // Where the rule was written, shown by VIZ. GCC gives every rule of a braced list the line the
    // list ends on; make_rule() records the rule's own line with every compiler.
    SourceLoc where = SourceLoc::current();
  };
  PatternMatcher() = default;
  PatternMatcher(std::vector<Rule> rules);
  // First rule whose pattern matches and whose function returns a node different from `u`;
  // `fired`, when given, is set to where that rule was written.
  UOpRef rewrite(const UOpRef& u, RewriteCtx* ctx = nullptr, SourceLoc* fired = nullptr) const;
  friend PatternMatcher operator+(const PatternMatcher& a, const PatternMatcher& b);
  size_t size() const { return rules_.size(); }

 private:
  void index();
  std::vector<Rule> rules_;
  std::vector<std::vector<uint32_t>> by_op_;  // rule indices per op (rules with any op are in all)
};

// A rule that records the line it is written on.
inline PatternMatcher::Rule make_rule(UPat pat, RewriteFn fn, SourceLoc where = SourceLoc::current()) {
  return {std::move(pat), std::move(fn), where};
}

struct RewriteOpts {
  RewriteCtx* ctx = nullptr;
  // Bottom-up: rewrite a node before its sources (its sources are then rewritten too).
  bool bottom_up = false;
  std::string_view name = {};  // VIZ=1 records the rewrites that have a name (rewrite_trace.h)
};

// Rewrites every node of the graph under `root` to a fixed point (sources first, memoized).
UOpRef graph_rewrite(const UOpRef& root, const PatternMatcher& pm, RewriteOpts opts = {});
// The same rewrite (not bottom-up), answering what each node under `root` became (tinygrad's
// graph_rewrite_map): keys point into root's graph, which the caller keeps alive.
std::unordered_map<const UOp*, UOpRef> graph_rewrite_map(const UOpRef& root, const PatternMatcher& pm,
                                                         RewriteOpts opts = {});
// Replaces nodes by the map (and rebuilds their users); replaced nodes are not descended into.
UOpRef substitute(const UOpRef& root, const std::unordered_map<const UOp*, UOpRef>& map);

// Readable printing of a graph: one numbered line per node, sources by number.
std::string print_graph(const UOpRef& root);
// One node as an expression when it is small (index math), else its op name.
std::string render_expr(const UOpRef& u);
// A kernel's name from its ranges, as tinygrad names kernels: "r_16_16" (E_ when nothing reduces);
// `colored` colors each axis by kind with ANSI codes (blue thread, cyan loop, red reduce).
std::string kernel_name(const UOpRef& kernel_ast, bool colored = false);

}  // namespace kiln
