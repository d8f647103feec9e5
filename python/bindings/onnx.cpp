// kiln.nn.onnx: ONNX models (kiln/onnx.h) as the submodule _kiln.onnx; built where kiln_onnx is
// (the ONNX protobuf classes found).
#include <pybind11/stl.h>

#include <kiln/onnx.h>

#include "bindings.h"

namespace kiln::python {

void bind_onnx(py::module_& m) {
  namespace kx = kiln::onnx;
  py::module_ o = m.def_submodule("onnx", "ONNX models run as kiln graphs");
  py::class_<kx::ValueInfo>(o, "ValueInfo")
      .def_readonly("name", &kx::ValueInfo::name)
      .def_readonly("dtype", &kx::ValueInfo::dtype)
      .def_readonly("shape", &kx::ValueInfo::shape)
      .def("__repr__", [](const kx::ValueInfo& v) { return "<ValueInfo " + v.name + " " + v.dtype.name() + ">"; });
  py::class_<kx::Model>(o, "Model")
      .def_static("load", &kx::Model::load, py::arg("path"))
      .def_property_readonly("inputs", &kx::Model::inputs)
      .def_property_readonly("outputs", &kx::Model::outputs)
      .def("run", &kx::Model::run, py::arg("inputs"));
}

}  // namespace kiln::python
