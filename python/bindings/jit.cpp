// TinyJit's capture/replay core (include/kiln/jit.h): the Python TinyJit drives it as the C++
// template does, around a Python function.
#include "bindings.h"

#include <kiln/jit.h>
#include <pybind11/stl.h>

namespace kiln::python {

void bind_jit(py::module_& m) {
  py::class_<jit::Core>(m, "JitCore")
      .def(py::init<>())
      .def_static("enabled", &jit::Core::enabled)
      .def_property_readonly("calls", &jit::Core::calls)
      .def("count_call", &jit::Core::count_call)
      .def("begin_capture", &jit::Core::begin_capture)
      .def("end_capture", &jit::Core::end_capture)
      .def("abort_capture", &jit::Core::abort_capture)
      .def("replay", &jit::Core::replay)
      .def("kernels", &jit::Core::kernels);
}

}  // namespace kiln::python
