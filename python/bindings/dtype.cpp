// DType: the scalar types, their names and sizes, and the promotion lattice.
#include <pybind11/operators.h>
#include <pybind11/stl.h>

#include <functional>
#include <kiln/dtype.h>

#include "bindings.h"

namespace kiln::python {
namespace {

// The smallest or largest value of `d`: for bool and the integers an exact Python int, as tinygrad's
// (a double rounds int64's and uint64's limits up to 2**63 and 2**64, which the dtypes cannot hold).
py::object limit(const DType& d, bool largest) {
  if (d.is_bool()) return py::int_(largest ? 1 : 0);
  if (!d.is_int()) return py::float_(largest ? d.max_value() : d.min_value());
  const int bits = 8 * d.itemsize();
  const uint64_t top = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;  // all bits set
  if (d.is_unsigned()) return largest ? py::int_(top) : py::int_(0);
  const auto max = static_cast<int64_t>(top >> 1);
  return py::int_(largest ? max : -max - 1);
}

}  // namespace

void bind_dtype(py::module_& m) {
  py::class_<DType>(m, "DType")
      .def_property_readonly("name", &DType::name)
      .def_property_readonly("itemsize", &DType::itemsize)
      .def_property_readonly("is_float", &DType::is_float)
      .def_property_readonly("is_int", &DType::is_int)
      .def_property_readonly("is_unsigned", &DType::is_unsigned)
      .def_property_readonly("is_bool", &DType::is_bool)
      .def_property_readonly("min", [](const DType& d) { return limit(d, false); })
      .def_property_readonly("max", [](const DType& d) { return limit(d, true); })
      .def(py::self == py::self)
      .def("__hash__", [](const DType& d) { return std::hash<std::string>()(d.name()); })
      .def("__repr__", [](const DType& d) { return "dtypes." + d.name(); });
  m.def("all_dtypes", &dtypes::all, "every scalar dtype, bool first");
  m.def("dtype_from_name", &dtypes::from_name, "the dtype called `name` (\"float32\", \"int8\", ...), or None");
  m.def("least_upper_dtype", &dtypes::least_upper, "the dtype both convert to without loss (tinygrad's lattice)");
  m.def("finfo", &dtypes::finfo, "(exponent bits, mantissa bits) of a float dtype");
}

}  // namespace kiln::python
