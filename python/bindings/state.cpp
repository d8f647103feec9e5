// Named tensors on disk (safetensors) and the datasets kiln reads (idx, Fashion-MNIST).
#include <pybind11/stl.h>

#include <kiln/nn/datasets.h>
#include <kiln/nn/state.h>

#include "bindings.h"

namespace kiln::python {

void bind_state(py::module_& m) {
  m.def("safe_save", &nn::state::safe_save);
  m.def("safe_load", &nn::state::safe_load);
  m.def("safe_load_metadata", &nn::state::safe_load_metadata);

  m.def("load_idx", &nn::datasets::load_idx);
  m.def("fashion_mnist", [](const std::string& dir) {
    nn::datasets::Mnist d = nn::datasets::fashion_mnist(dir);
    return py::make_tuple(d.X_train, d.Y_train, d.X_test, d.Y_test);
  });
}

}  // namespace kiln::python
