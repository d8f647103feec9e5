// The one printer of UOp graphs, used by DEBUG output, tests and (later) VIZ.
#include <algorithm>
#include <set>
#include <sstream>
#include <unordered_map>

#include "kiln/ir/pattern_matcher.h"

namespace kiln {

std::string print_graph(const UOpRef& root) {
  std::unordered_map<const UOp*, size_t> index;
  std::ostringstream os;
  for (const UOp* u : root->toposort()) {
    size_t i = index.size();
    index[u] = i;
    os.width(4);
    os << i << ' ' << op_name(u->op);
    os << std::string(std::max<int>(1, 12 - static_cast<int>(op_name(u->op).size())), ' ') << u->dtype.name();
    if (u->shape() && u->op != Ops::CONST) os << ' ' << shape_to_string(*u->shape());
    os << " src=(";
    for (size_t j = 0; j < u->src.size(); j++) os << (j ? "," : "") << index.at(u->src[j].get());
    os << ")";
    if (!std::holds_alternative<std::monostate>(u->arg)) os << ' ' << arg_to_string(u->arg);
    os << '\n';
  }
  return os.str();
}

namespace {
std::string infix(Ops op) {
  switch (op) {
    case Ops::ADD: return "+";
    case Ops::SUB: return "-";
    case Ops::MUL: return "*";
    case Ops::IDIV: return "//";
    case Ops::MOD: return "%";
    case Ops::CMPLT: return "<";
    case Ops::CMPNE: return "!=";
    case Ops::CMPEQ: return "==";
    case Ops::AND: return "&";
    case Ops::OR: return "|";
    case Ops::XOR: return "^";
    case Ops::SHL: return "<<";
    case Ops::SHR: return ">>";
    default: return "";
  }
}
}  // namespace

// Index math as text, e.g. "((r0*16)+r1)"; ranges print as r<id>.
std::string render_expr(const UOpRef& u) {
  switch (u->op) {
    case Ops::CONST: {
      std::ostringstream os;
      os << u->const_value();
      return os.str();
    }
    case Ops::RANGE: return "r" + std::to_string(u->arg_as<RangeArg>().id);
    case Ops::WHERE: return "(" + render_expr(u->src[0]) + "?" + render_expr(u->src[1]) + ":" + render_expr(u->src[2]) + ")";
    case Ops::MAX: return "max(" + render_expr(u->src[0]) + "," + render_expr(u->src[1]) + ")";
    case Ops::NEG: return "(-" + render_expr(u->src[0]) + ")";
    case Ops::CAST: return "(" + u->dtype.name() + ")" + render_expr(u->src[0]);
    default: break;
  }
  if (std::string op = infix(u->op); !op.empty() && u->src.size() == 2)
    return "(" + render_expr(u->src[0]) + op + render_expr(u->src[1]) + ")";
  return std::string(op_name(u->op));
}

namespace {

const char* axis_color(AxisType t) {
  switch (t) {
    case AxisType::THREAD: return "\033[34m";  // blue: parallel over cores
    case AxisType::LOOP: return "\033[36m";    // cyan: a plain loop
    case AxisType::REDUCE: return "\033[31m";  // red: reduction
    case AxisType::UPCAST: return "\033[33m";  // yellow: vectorized
    case AxisType::UNROLL: return "\033[35m";  // magenta: unrolled reduction
    case AxisType::LOCAL: return "\033[32m";   // green: work-items of a group
    case AxisType::GROUP_REDUCE: return "\033[92m";  // bright green: reduced by a group's work-items
  }
  return "";
}

}  // namespace

std::string kernel_name(const UOpRef& ast, bool colored) {
  std::vector<const UOp*> ranges;
  for (const UOp* u : ast->toposort())
    if (u->op == Ops::RANGE) ranges.push_back(u);
  std::stable_sort(ranges.begin(), ranges.end(), [](const UOp* a, const UOp* b) {
    return a->arg_as<RangeArg>().id < b->arg_as<RangeArg>().id;
  });
  bool reduces = std::any_of(ranges.begin(), ranges.end(), [](const UOp* r) { return r->arg_as<RangeArg>().reduces(); });
  std::string name = reduces ? "r" : "E";
  std::set<int64_t> seen;
  for (const UOp* r : ranges) {
    if (!seen.insert(r->arg_as<RangeArg>().id).second) continue;  // a reopened loop appears once
    std::string size = std::to_string(static_cast<int64_t>(r->src[0]->const_value()));
    name += "_";
    name += colored ? axis_color(r->arg_as<RangeArg>().type) + size + "\033[0m" : size;
  }
  if (ranges.empty()) name += "_1";
  return name;
}

}  // namespace kiln
