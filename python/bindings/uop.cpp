// The IR: a tensor's graph (Tensor.uop) and a kernel's AST (ScheduleItem.ast), printed as kiln
// prints graphs (DEBUG=5); and the rewrite engine for hand-built graphs: UOps built by hand, UPat
// patterns, PatternMatcher rules whose functions are Python callables, graph_rewrite and simplify
// (as examples/custom_rule.cpp does in C++).
#include <pybind11/functional.h>
#include <pybind11/operators.h>
#include <pybind11/stl.h>

#include <cstdint>

#include <kiln/error.h>
#include <kiln/ir/pattern_matcher.h>
#include <kiln/ir/symbolic.h>
#include <kiln/schedule_item.h>

#include "bindings.h"

namespace kiln::python {
namespace {

void bind_ops(py::module_& m) {
  py::enum_<Ops> ops(m, "Ops");
#define KILN_X(n) ops.value(#n, Ops::n);
  KILN_OPS(KILN_X)
#undef KILN_X
}

// UOp arithmetic as the C++ index-math builders: another UOp or a Python int on the right.
void bind_uop_arithmetic(py::class_<UOpRef>& u) {
  u.def("__add__", [](const UOpRef& a, const UOpRef& b) { return a + b; })
      .def("__add__", [](const UOpRef& a, int64_t b) { return a + b; })
      .def("__sub__", [](const UOpRef& a, const UOpRef& b) { return a - b; })
      .def("__sub__", [](const UOpRef& a, int64_t b) { return a - b; })
      .def("__mul__", [](const UOpRef& a, const UOpRef& b) { return a * b; })
      .def("__mul__", [](const UOpRef& a, int64_t b) { return a * b; })
      .def("__floordiv__", [](const UOpRef& a, const UOpRef& b) { return a / b; })  // IDIV: C's truncation
      .def("__floordiv__", [](const UOpRef& a, int64_t b) { return a / b; })
      .def("__mod__", [](const UOpRef& a, const UOpRef& b) { return a % b; })
      .def("__mod__", [](const UOpRef& a, int64_t b) { return a % b; })
      .def("__lt__", [](const UOpRef& a, const UOpRef& b) { return a < b; })
      .def("__lt__", [](const UOpRef& a, int64_t b) { return a < b; });
}

// u op others..., with the operand count checked (the C++ builder trusts its callers).
UOpRef checked_alu(const UOpRef& u, Ops op, std::vector<UOpRef> others) {
  const size_t wanted = group::Unary.has(op) ? 0 : group::Binary.has(op) ? 1 : group::Ternary.has(op) ? 2 : SIZE_MAX;
  if (wanted == SIZE_MAX) throw_error("UOp.alu: ", op_name(op), " is not an elementwise op");
  if (others.size() != wanted)
    throw_error("UOp.alu: ", op_name(op), " takes ", wanted, " operand(s) besides this one, got ", others.size());
  return u->alu(op, std::move(others));
}

void bind_patterns(py::module_& m) {
  py::class_<UPat> upat(m, "UPat");
  upat.def(py::init<>())
      .def_static("any", &UPat::any, py::arg("name") = "")
      .def_static("var", &UPat::var, py::arg("name"), py::arg("dtypes") = std::vector<DType>{})
      .def_static("cvar", &UPat::cvar, py::arg("name") = "", py::arg("dtypes") = std::vector<DType>{})
      .def_static("cconst", &UPat::cconst)
      // one op or several; commutative ops match their sources in any order
      .def_static("op", [](Ops op, std::vector<UPat> src) { return UPat::op(OpSet(op), std::move(src)); },
                  py::arg("op"), py::arg("src") = std::vector<UPat>{})
      .def_static("op", [](const std::vector<Ops>& ops, std::vector<UPat> src) {
        OpSet set;
        for (Ops o : ops) set = set | OpSet(o);
        return UPat::op(set, std::move(src));
      }, py::arg("ops"), py::arg("src") = std::vector<UPat>{})
      .def("named", &UPat::named)
      .def(py::self + py::self)
      .def(py::self * py::self)
      .def(py::self / py::self)
      .def(py::self % py::self)
      .def(py::self < py::self);

  py::class_<Match>(m, "Match")
      .def("__getitem__", [](const Match& mt, const std::string& name) { return mt[name]; })
      .def("__contains__", [](const Match& mt, const std::string& name) { return mt.has(name); })
      .def_property_readonly("root", &Match::root);

  // rules: (UPat, fn) with fn(match) -> UOp, or None for "no rewrite"
  py::class_<PatternMatcher>(m, "PatternMatcher")
      .def(py::init([](const std::vector<std::pair<UPat, std::function<std::optional<UOpRef>(const Match&)>>>& rules) {
        std::vector<PatternMatcher::Rule> out;
        for (const auto& [pat, fn] : rules)
          out.push_back({pat, [fn](RewriteCtx*, const Match& mt) { return fn(mt).value_or(UOpRef()); }});
        return PatternMatcher(std::move(out));
      }))
      .def("__add__", [](const PatternMatcher& a, const PatternMatcher& b) { return a + b; })
      .def("__len__", &PatternMatcher::size);

  m.def("graph_rewrite", [](const UOpRef& root, const PatternMatcher& pm, bool bottom_up) {
    return graph_rewrite(root, pm, {.bottom_up = bottom_up});
  }, py::arg("root"), py::arg("pm"), py::arg("bottom_up") = false);
  m.def("simplify", [](const UOpRef& u) { return simplify(u); }, "kiln's symbolic simplifier (index math)");
  m.def("render_expr", &render_expr, "a small graph as one expression");
}

}  // namespace

void bind_uop(py::module_& m) {
  bind_ops(m);
  py::class_<UOpRef> uop(m, "UOp");
  uop.def_property_readonly("op", [](const UOpRef& u) { return u->op; })
      .def_property_readonly("dtype", [](const UOpRef& u) { return u->dtype; })
      .def_property_readonly("shape", [](const UOpRef& u) -> std::optional<py::tuple> {
        if (!u->shape()) return std::nullopt;
        return py::tuple(py::cast(*u->shape()));
      })
      .def_property_readonly("src", [](const UOpRef& u) { return u->src; })
      .def_property_readonly("arg", [](const UOpRef& u) { return arg_to_string(u->arg); })
      .def("__eq__", [](const UOpRef& a, const UOpRef& b) { return a == b; })  // hash-consed: same node
      .def("__hash__", [](const UOpRef& u) { return u->hash(); })
      .def("__repr__", [](const UOpRef& u) { return print_graph(u); })
      // building by hand
      .def_static("const", &UOp::const_, py::arg("dtype"), py::arg("value"))
      .def_static("range", [](int64_t end, int64_t id) {
        return UOp::make(Ops::RANGE, dtypes::int32, {UOp::const_(dtypes::int32, static_cast<double>(end))},
                         RangeArg{id, AxisType::LOOP});
      }, py::arg("end"), py::arg("id") = 0, "a loop variable 0..end-1 (int32)")
      .def("alu", &checked_alu, py::arg("op"), py::arg("others") = std::vector<UOpRef>{})
      .def("cast", [](const UOpRef& u, DType to) { return u->cast(to); })
      .def("const_like", [](const UOpRef& u, double v) { return u->const_like(v); });
  bind_uop_arithmetic(uop);
  bind_patterns(m);

  py::class_<ScheduleItem>(m, "ScheduleItem")
      .def_readonly("name", &ScheduleItem::name)
      .def_readonly("ast", &ScheduleItem::ast)
      .def_readonly("buffers", &ScheduleItem::buffers)
      .def("__str__", &ScheduleItem::str)
      .def("__repr__", [](const ScheduleItem& s) { return "<ScheduleItem " + s.name + ">"; });
}

}  // namespace kiln::python
