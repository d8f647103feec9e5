// A read-only view of the IR: a tensor's graph (Tensor.uop) and a kernel's AST (ScheduleItem.ast),
// printed as kiln prints graphs (DEBUG=5).
#include <pybind11/stl.h>

#include <kiln/ir/pattern_matcher.h>
#include <kiln/schedule_item.h>

#include "bindings.h"

namespace kiln::python {

void bind_uop(py::module_& m) {
  py::class_<UOpRef>(m, "UOp")
      .def_property_readonly("op", [](const UOpRef& u) { return std::string(op_name(u->op)); })
      .def_property_readonly("dtype", [](const UOpRef& u) { return u->dtype; })
      .def_property_readonly("shape", [](const UOpRef& u) -> std::optional<py::tuple> {
        if (!u->shape()) return std::nullopt;
        return py::tuple(py::cast(*u->shape()));
      })
      .def_property_readonly("src", [](const UOpRef& u) { return u->src; })
      .def_property_readonly("arg", [](const UOpRef& u) { return arg_to_string(u->arg); })
      .def("__eq__", [](const UOpRef& a, const UOpRef& b) { return a == b; })  // hash-consed: same node
      .def("__hash__", [](const UOpRef& u) { return u->hash(); })
      .def("__repr__", [](const UOpRef& u) { return print_graph(u); });

  py::class_<ScheduleItem>(m, "ScheduleItem")
      .def_readonly("name", &ScheduleItem::name)
      .def_readonly("ast", &ScheduleItem::ast)
      .def_readonly("buffers", &ScheduleItem::buffers)
      .def("__str__", &ScheduleItem::str)
      .def("__repr__", [](const ScheduleItem& s) { return "<ScheduleItem " + s.name + ">"; });
}

}  // namespace kiln::python
