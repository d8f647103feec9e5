// DType: the scalar types, their names and sizes, and the promotion lattice.
#include <pybind11/operators.h>
#include <pybind11/stl.h>

#include <functional>
#include <kiln/dtype.h>

#include "bindings.h"

namespace kiln::python {

void bind_dtype(py::module_& m) {
  py::class_<DType>(m, "DType")
      .def_property_readonly("name", &DType::name)
      .def_property_readonly("itemsize", &DType::itemsize)
      .def_property_readonly("is_float", &DType::is_float)
      .def_property_readonly("is_int", &DType::is_int)
      .def_property_readonly("is_unsigned", &DType::is_unsigned)
      .def_property_readonly("is_bool", &DType::is_bool)
      .def_property_readonly("min", &DType::min_value)
      .def_property_readonly("max", &DType::max_value)
      .def(py::self == py::self)
      .def("__hash__", [](const DType& d) { return std::hash<std::string>()(d.name()); })
      .def("__repr__", [](const DType& d) { return "dtypes." + d.name(); });
  m.def("all_dtypes", &dtypes::all, "every scalar dtype, bool first");
  m.def("dtype_from_name", &dtypes::from_name, "the dtype called `name` (\"float32\", \"int8\", ...), or None");
  m.def("least_upper_dtype", &dtypes::least_upper, "the dtype both convert to without loss (tinygrad's lattice)");
  m.def("finfo", &dtypes::finfo, "(exponent bits, mantissa bits) of a float dtype");
}

}  // namespace kiln::python
