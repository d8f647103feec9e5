// Sorting and rearranging: sort, topk, randperm, multinomial; roll, repeat_interleave, diag(onal),
// meshgrid, unfold and rearrange.
#include <pybind11/stl.h>

#include "bindings.h"

namespace kiln::python {

void bind_tensor_sort(py::module_&, PyTensor& t) {
  t.def("sort", &Tensor::sort)
      .def("argsort", &Tensor::argsort)
      .def("topk", &Tensor::topk)
      .def_static("randperm", &Tensor::randperm)
      .def("multinomial", &Tensor::multinomial);
  t.def("roll", &Tensor::roll)
      .def("repeat_interleave", &Tensor::repeat_interleave)
      .def("diag", &Tensor::diag)
      .def("diagonal", &Tensor::diagonal)
      .def_static("meshgrid", &Tensor::meshgrid)
      .def("unfold", &Tensor::unfold)
      .def("rearrange", &Tensor::rearrange);
}

}  // namespace kiln::python
