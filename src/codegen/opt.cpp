// Applying kernel optimizations (opt.h): each is a split or a retyping of one RANGE, checked for
// legality first so that any sequence of legal opts computes the same values.
#include "codegen/opt.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "codegen/codegen.h"
#include "kiln/error.h"
#include "kiln/ir/pattern_matcher.h"
#include "kiln/ir/symbolic.h"

namespace kiln::codegen {
namespace {

// Copies of the body a kernel may have (the product of its UPCAST and UNROLL sizes): more would
// only grow the code past the instruction cache and the registers.
constexpr int64_t kMaxExpansion = 512;

constexpr const char* kOpNames[] = {"THREAD", "UPCAST", "UNROLL", "SWAP", "LOCAL", "GROUP", "PADTO"};

// OpenCL and CUDA launch at most 3 dimensions of work-items, and CUDA at most 64 along the third.
constexpr size_t kMaxLocalDims = 3;
constexpr int64_t kMaxThirdLocalDim = 64;

const UOp* find_range(const UOpRef& ast, int64_t id) {
  for (const UOp* r : ranges_of(ast))
    if (axis_id(r) == id) return r;
  return nullptr;
}

// Copies of the body: per store and reduction, the product of the UPCAST and UNROLL loops it
// varies with (with `r` split by `amt` more), the most of any. Copies follow data: a fused
// softmax's row max and sum are not copied along the row loop its output stores UPCAST, nor the
// store along the loops they reduce. (Bit i of a node's mask: it varies with copying loop i.)
int64_t expansion(const UOpRef& ast, const UOp* r = nullptr, int64_t amt = 1) {
  std::vector<const UOp*> copying;
  for (const UOp* c : ranges_of(ast))
    if (c == r || axis_type(c) == AxisType::UPCAST || axis_type(c) == AxisType::UNROLL) copying.push_back(c);
  // each copying loop at least doubles the copies: past 63 of them no kernel is small enough
  if (copying.size() > 63) return std::numeric_limits<int64_t>::max();
  const auto sizes = [&](uint64_t mask) {
    int64_t copies = 1;
    for (size_t i = 0; i < copying.size(); i++)
      if (mask >> i & 1) copies *= copying[i] == r ? amt : range_size(copying[i]);
    return copies;
  };
  std::unordered_map<const UOp*, uint64_t> copied_by;
  int64_t most = 1;
  for (const UOp* u : ast->toposort()) {
    uint64_t mine = 0;
    for (const UOpRef& s : u->src) mine |= copied_by[s.get()];
    if (u->op == Ops::RANGE) {
      const auto at = std::find(copying.begin(), copying.end(), u);
      if (at != copying.end()) mine |= uint64_t{1} << (at - copying.begin());
    }
    if (u->op == Ops::STORE || u->op == Ops::REDUCE) most = std::max(most, sizes(mine));
    if (u->op == Ops::REDUCE)  // its value no longer varies with the loops it reduces
      for (size_t i = 1; i < u->src.size(); i++) mine &= ~copied_by[u->src[i].get()];
    copied_by[u] = mine;
  }
  return most;
}

// Whether a reduction over r already has an unrolled loop (one vector axis per reduction).
bool unrolled_with(const UOpRef& ast, const UOp* r) {
  for (const UOp* u : ast->toposort())
    if (reduces_over(u, r))
      for (size_t i = 1; i < u->src.size(); i++)
        if (axis_type(u->src[i].get()) == AxisType::UNROLL) return true;
  return false;
}

bool has_axis_type(const UOpRef& ast, AxisType type) {
  const auto ranges = ranges_of(ast);
  return std::any_of(ranges.begin(), ranges.end(), [&](const UOp* r) { return axis_type(r) == type; });
}

// Work-items per work-group: the product of the LOCAL and GROUP_REDUCE sizes.
int64_t local_threads(const UOpRef& ast) {
  int64_t n = 1;
  for (const UOp* r : local_axes(ast)) n *= range_size(r);
  return n;
}

// Local memory a GROUP over `r` needs with `threads` work-items per group: a slot per work-item for
// each reduction over r and each copy of it the UPCASTs and UNROLLs make (group_reduce.cpp).
int64_t group_memory_bytes(const UOpRef& ast, const UOp* r, int64_t threads) {
  int64_t bytes = 0;
  for (const UOp* u : ast->toposort())
    if (reduces_over(u, r)) bytes += u->dtype.itemsize() * u->dtype.count * threads;
  return bytes * expansion(ast);
}

const UOp* group_axis(const UOpRef& ast) {
  for (const UOp* r : ranges_of(ast))
    if (axis_type(r) == AxisType::GROUP_REDUCE) return r;
  return nullptr;
}

// Whether a new work-item axis of `amt` fits the target's work-groups (and, with a GROUP axis, its
// local memory).
bool local_axis_fits(const UOpRef& ast, int64_t amt, const Target& target, const UOp* grouped) {
  const size_t dims = local_axes(ast).size();
  const int64_t threads = local_threads(ast) * amt;
  if (target.max_local_size < 2 || dims >= kMaxLocalDims || threads > target.max_local_size) return false;
  if (dims == kMaxLocalDims - 1 && amt > kMaxThirdLocalDim) return false;
  return !grouped || group_memory_bytes(ast, grouped, threads) <= target.local_memory_bytes;
}

// A GROUP splits reductions whose loops are their own: none runs inside another reduction's loop
// (its partials would meet once per iteration of a loop the other work-items may not be in step with).
bool groupable(const UOpRef& ast, const UOp* r) {
  // the ranges each node's value varies with: a REDUCE's own ranges end at it
  std::unordered_map<const UOp*, std::set<const UOp*>> varies;
  for (const UOp* u : ast->toposort()) {
    std::set<const UOp*>& mine = varies[u];
    for (const UOpRef& s : u->src) mine.insert(varies[s.get()].begin(), varies[s.get()].end());
    if (u->op == Ops::RANGE) mine.insert(u);
    if (u->op != Ops::REDUCE) continue;
    for (size_t i = 1; i < u->src.size(); i++) mine.erase(u->src[i].get());
    if (!reduces_over(u, r)) continue;
    for (const UOp* v : varies[u->src[0].get()])
      if (axis_type(v) == AxisType::REDUCE && !reduces_over(u, v))
        return false;
  }
  return true;
}

// Whether every reduction over `r` accumulates in vectors (float sums and maxima): the others
// cannot be summed in SIMD lanes.
bool reductions_vectorize(const UOpRef& ast, const UOp* r) {
  for (const UOp* u : ast->toposort()) {
    if (!reduces_over(u, r)) continue;
    const Ops op = u->arg_as<ReduceArg>().op;
    const bool is_float = u->dtype.scalar == ScalarType::Float32 || u->dtype.scalar == ScalarType::Float64;
    if (!is_float || u->dtype.count != 1 || (op != Ops::ADD && op != Ops::MAX)) return false;
  }
  return true;
}

// r (size n) → r_outer*amt + r_inner, with r_outer keeping r's id and kind (no r_outer when amt is n).
UOpRef split_range(const UOpRef& ast, const UOp* r, int64_t amt, AxisType inner_type) {
  const auto ranges = ranges_of(ast);
  const int64_t inner_id = axis_id(ranges.back()) + 1;
  const bool whole = range_size(r) == amt;
  UOpRef outer = UOp::make(Ops::RANGE, r->dtype, {UOp::const_(r->dtype, double(range_size(r) / amt))}, r->arg);
  UOpRef inner = UOp::make(Ops::RANGE, r->dtype, {UOp::const_(r->dtype, double(amt))}, RangeArg{inner_id, inner_type});
  // An END closing r now closes both new loops, a REDUCE over r reduces over both; everywhere else
  // r becomes the expression.
  std::unordered_map<const UOp*, UOpRef> ends;
  for (const UOp* u : ast->toposort()) {
    if ((u->op != Ops::END && u->op != Ops::REDUCE) || std::find(u->src.begin() + 1, u->src.end(), r->ref()) == u->src.end())
      continue;
    std::vector<UOpRef> src{u->src[0]};
    for (size_t i = 1; i < u->src.size(); i++) {
      if (u->src[i].get() != r) src.push_back(u->src[i]);
      else if (whole) src.push_back(inner);
      else src.insert(src.end(), {outer, inner});
    }
    ends[u] = u->with_src(std::move(src));
  }
  return simplify(substitute(substitute(ast, ends), {{r, whole ? inner : outer * amt + inner}}), "simplify split");
}

// r (size n) -> a loop of n rounded up to a multiple of amt whose extra iterations do nothing: the
// buffer accesses that vary with it are gated by r < n (a gated load reads element 0 and gives 0,
// a gated store writes nothing), and a reduction over it takes its identity instead of the value.
UOpRef pad_range(const UOpRef& ast, const UOp* r, int64_t amt) {
  const int64_t n = range_size(r);
  UOpRef wide = UOp::make(Ops::RANGE, r->dtype, {UOp::const_(r->dtype, double((n + amt - 1) / amt * amt))}, r->arg);
  const UOpRef valid = wide < n;
  const UOpRef padded = substitute(ast, {{r, wide}});
  std::unordered_map<const UOp*, UOpRef> gated;
  for (const UOp* u : padded->toposort()) {
    if (u->op != Ops::INDEX || u->src[0]->op != Ops::PARAM || !ranges_below(u->src[1].get()).count(wide.get())) continue;
    std::vector<UOpRef> src = u->src;
    if (src.size() > 2) src[2] = src[2] & valid;
    else src.push_back(valid);
    gated[u] = u->with_src(std::move(src));
  }
  const UOpRef accessed = substitute(padded, gated);
  std::unordered_map<const UOp*, UOpRef> identities;
  for (const UOp* u : accessed->toposort()) {
    if (!reduces_over(u, wide.get())) continue;
    const UOpRef& value = u->src[0];
    const UOpRef identity = UOp::const_(value->dtype, reduce_identity(u->arg_as<ReduceArg>().op, value->dtype));
    std::vector<UOpRef> src = u->src;
    src[0] = UOp::make(Ops::WHERE, value->dtype, {valid, value, identity});
    identities[u] = u->with_src(std::move(src));
  }
  return simplify(substitute(accessed, identities), "simplify padto");
}

// Reads `literal` then an integer at `pos` of `line`; false if either is not there.
bool read_field(std::string_view line, size_t& pos, std::string_view literal, int64_t& value) {
  if (line.substr(pos, literal.size()) != literal) return false;
  pos += literal.size();
  const auto [end, error] = std::from_chars(line.data() + pos, line.data() + line.size(), value);
  if (error != std::errc()) return false;
  pos = static_cast<size_t>(end - line.data());
  return true;
}

}  // namespace

std::vector<const UOp*> ranges_of(const UOpRef& ast) {
  std::vector<const UOp*> out;
  for (const UOp* u : ast->toposort())
    if (u->op == Ops::RANGE) out.push_back(u);
  std::sort(out.begin(), out.end(), [](const UOp* a, const UOp* b) { return axis_id(a) < axis_id(b); });
  return out;
}

std::unordered_set<const UOp*> stacked_ranges(const UOpRef& ast) {
  std::unordered_set<const UOp*> out;
  for (const UOp* u : ast->toposort())
    if (u->op == Ops::INDEX && u->src.size() > 2)
      for (const UOp* r : ranges_pinned_by(u->src[2])) out.insert(r);
  return out;
}

bool reduces_over(const UOp* reduce, const UOp* r) {
  return reduce->op == Ops::REDUCE && std::find(reduce->src.begin() + 1, reduce->src.end(), r->ref()) != reduce->src.end();
}

std::unordered_set<const UOp*> ranges_below(const UOp* u) {
  std::unordered_set<const UOp*> out;
  for (const UOp* r : u->toposort())
    if (r->op == Ops::RANGE) out.insert(r);
  return out;
}

std::unordered_set<const UOp*> ranges_under_reductions(const UOpRef& ast) {
  std::unordered_set<const UOp*> out;
  for (const UOp* u : ast->toposort())
    if (u->op == Ops::REDUCE) out.merge(ranges_below(u));
  return out;
}

int64_t range_size(const UOp* r) { return static_cast<int64_t>(r->src[0]->const_value()); }
AxisType axis_type(const UOp* r) { return r->arg_as<RangeArg>().type; }
int64_t axis_id(const UOp* r) { return r->arg_as<RangeArg>().id; }

std::string Opt::str() const {
  return std::string(kOpNames[static_cast<int>(op)]) + "(axis=" + std::to_string(axis) + ", amt=" + std::to_string(amt) + ")";
}

std::string opts_to_string(const std::vector<Opt>& opts) {
  std::string s;
  for (const Opt& o : opts) s += o.str() + "\n";
  return s;
}

std::vector<Opt> parse_opts(const std::string& text) {
  std::vector<Opt> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const size_t open = line.find('(');
    const auto* name = std::find(std::begin(kOpNames), std::end(kOpNames), line.substr(0, open));
    Opt o{};
    size_t pos = open;
    if (open == std::string::npos || name == std::end(kOpNames) || !read_field(line, pos, "(axis=", o.axis) ||
        !read_field(line, pos, ", amt=", o.amt) || line.substr(pos) != ")")
      throw_error("parse_opts: expected a line like 'UPCAST(axis=1, amt=4)', got '", line, "'");
    o.op = static_cast<OptOp>(name - std::begin(kOpNames));
    out.push_back(o);
  }
  return out;
}

bool opt_applies(const UOpRef& ast, const Opt& opt, const Target& target) {
  const UOp* r = find_range(ast, opt.axis);
  if (!r) return false;
  const AxisType type = axis_type(r);
  auto output = [](AxisType t) { return t == AxisType::LOOP || t == AxisType::THREAD; };
  switch (opt.op) {
    case OptOp::THREAD:
      // with work-groups, a grid of groups as big as the loop (each group one iteration, as GPUs run)
      return type == AxisType::LOOP && opt.amt >= 2 && (opt.amt <= target.max_threads || target.max_local_size > 1) &&
             opt.amt <= range_size(r) &&
             !has_axis_type(ast, AxisType::THREAD);
    case OptOp::UPCAST:
    case OptOp::UNROLL: {
      if (opt.amt < 2 || range_size(r) % opt.amt != 0 || expansion(ast, r, opt.amt) > kMaxExpansion) return false;
      if (opt.op == OptOp::UPCAST) return output(type);
      return type == AxisType::REDUCE && !unrolled_with(ast, r) && !group_axis(ast) && reductions_vectorize(ast, r);
    }
    case OptOp::LOCAL:
      return output(type) && opt.amt >= 2 && range_size(r) % opt.amt == 0 && local_axis_fits(ast, opt.amt, target, group_axis(ast));
    case OptOp::GROUP:
      return type == AxisType::REDUCE && opt.amt >= 2 && range_size(r) % opt.amt == 0 && !group_axis(ast) &&
             !has_axis_type(ast, AxisType::UNROLL) && groupable(ast, r) && local_axis_fits(ast, opt.amt, target, r);
    case OptOp::SWAP: {
      const UOp* other = find_range(ast, opt.amt);
      return other && other != r && output(type) && output(axis_type(other));
    }
    case OptOp::PADTO:  // to a multiple no tile could use past kMaxExpansion (and no overflow rounding up)
      return (output(type) || type == AxisType::REDUCE) && opt.amt >= 2 && opt.amt <= kMaxExpansion &&
             range_size(r) % opt.amt != 0;
  }
  return false;
}

UOpRef apply_opt(const UOpRef& ast, const Opt& opt, const Target& target) {
  if (!opt_applies(ast, opt, target)) return {};
  const UOp* r = find_range(ast, opt.axis);
  switch (opt.op) {
    case OptOp::THREAD: return substitute(ast, {{r, r->with_arg(RangeArg{opt.axis, AxisType::THREAD})}});
    case OptOp::UPCAST: return split_range(ast, r, opt.amt, AxisType::UPCAST);
    case OptOp::UNROLL: return split_range(ast, r, opt.amt, AxisType::UNROLL);
    case OptOp::LOCAL: return split_range(ast, r, opt.amt, AxisType::LOCAL);
    case OptOp::GROUP: return split_range(ast, r, opt.amt, AxisType::GROUP_REDUCE);
    case OptOp::PADTO: return pad_range(ast, r, opt.amt);
    case OptOp::SWAP: {
      const UOp* other = find_range(ast, opt.amt);
      return substitute(ast, {{r, r->with_arg(RangeArg{opt.amt, axis_type(r)})},
                              {other, other->with_arg(RangeArg{opt.axis, axis_type(other)})}});
    }
  }
  return {};
}

UOpRef apply_opts(const UOpRef& ast, const std::vector<Opt>& opts, const Target& target) {
  UOpRef k = ast;
  for (const Opt& o : opts) {
    UOpRef next = apply_opt(k, o, target);
    if (!next && (o.op == OptOp::LOCAL || o.op == OptOp::GROUP) && target.max_local_size < 2)
      throw_error("apply_opts: ", o.str(), " needs a device with work-groups (OpenCL, CUDA); the ",
                  target.renderer->language(), " target has none");
    if (!next) throw_error("apply_opts: ", o.str(), " does not apply to kernel ", kernel_name(k));
    k = next;
  }
  return k;
}

std::vector<Opt> possible_opts(const UOpRef& ast, const Target& target) {
  static constexpr int64_t kAmounts[] = {2, 3, 4, 5, 8, 16, 32};
  static constexpr int64_t kPadAmounts[] = {4, 8, 16};  // vector widths and register tiles
  static constexpr int64_t kLocalAmounts[] = {2, 3, 4, 8, 16, 32, 64, 128, 256};
  std::vector<Opt> candidates;
  const auto ranges = ranges_of(ast);
  for (const UOp* r : ranges) {
    const AxisType type = axis_type(r);
    if (type == AxisType::LOOP) candidates.push_back({OptOp::THREAD, axis_id(r), std::min<int64_t>(target.max_threads, range_size(r))});
    for (int64_t amt : kPadAmounts) {
      const int64_t n = range_size(r), extra = (n + amt - 1) / amt * amt - n;
      if (extra * 4 <= n) candidates.push_back({OptOp::PADTO, axis_id(r), amt});  // at most a quarter more work
    }
    for (int64_t amt : kAmounts) {
      if (type == AxisType::LOOP || type == AxisType::THREAD) candidates.push_back({OptOp::UPCAST, axis_id(r), amt});
      if (type == AxisType::REDUCE) candidates.push_back({OptOp::UNROLL, axis_id(r), amt});
    }
    for (int64_t amt : kLocalAmounts) {
      if (target.max_local_size < 2) break;
      if (type == AxisType::LOOP || type == AxisType::THREAD) candidates.push_back({OptOp::LOCAL, axis_id(r), amt});
      if (type == AxisType::REDUCE) candidates.push_back({OptOp::GROUP, axis_id(r), amt});
    }
    for (const UOp* other : ranges)
      if (axis_id(other) > axis_id(r)) candidates.push_back({OptOp::SWAP, axis_id(r), axis_id(other)});
  }
  std::vector<Opt> legal;
  for (const Opt& o : candidates)
    if (opt_applies(ast, o, target)) legal.push_back(o);
  return legal;
}

std::vector<const UOp*> local_axes(const UOpRef& ast) {
  std::vector<const UOp*> out = ranges_of(ast);
  std::erase_if(out, [](const UOp* r) { return axis_type(r) != AxisType::LOCAL && axis_type(r) != AxisType::GROUP_REDUCE; });
  return out;
}

int64_t thread_count(const std::vector<Opt>& opts) {
  for (const Opt& o : opts)
    if (o.op == OptOp::THREAD) return o.amt;
  return 1;
}

}  // namespace kiln::codegen
