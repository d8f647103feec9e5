// Named tensors on disk (safetensors) and the datasets kiln reads (idx, Fashion-MNIST).
#include <pybind11/stl.h>

#include <kiln/nn/datasets.h>
#include <kiln/nn/gguf.h>
#include <kiln/nn/state.h>

#include "bindings.h"

namespace kiln::python {
namespace {

// A GGUF metadata value as tinygrad's gguf_load gives it: a number, bool, str (bytes if it is not
// UTF-8) or list.
py::object gguf_value_to_python(const nn::state::GGUFValue& value) {
  return std::visit(
      [](const auto& v) -> py::object {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, nn::state::GGUFArray>) {
          py::list list;
          for (const nn::state::GGUFValue& e : v.values) list.append(gguf_value_to_python(e));
          return list;
        } else if constexpr (std::is_same_v<T, std::string>) {
          PyObject* text = PyUnicode_DecodeUTF8(v.data(), static_cast<Py_ssize_t>(v.size()), "strict");
          if (text) return py::reinterpret_steal<py::object>(text);
          PyErr_Clear();
          return py::bytes(v);
        } else {
          return py::cast(v);
        }
      },
      value.variant());
}

}  // namespace

void bind_state(py::module_& m) {
  m.def("safe_save", &nn::state::safe_save);
  m.def("safe_load", &nn::state::safe_load);
  m.def("safe_load_metadata", &nn::state::safe_load_metadata);
  // (metadata, tensors): plain tensors in their stored dtype, quantized ones as lazy float32 dequantizations.
  m.def("gguf_load", [](const std::string& path) {
    const nn::state::GGUFFile gguf = nn::state::gguf_open(path);
    py::dict metadata, tensors;
    for (const auto& [key, value] : gguf.metadata()) metadata[py::str(key)] = gguf_value_to_python(value);
    for (const nn::state::GGUFTensorInfo& t : gguf.tensor_infos()) tensors[py::str(t.name)] = gguf.lazy(t.name);
    return py::make_tuple(metadata, tensors);
  });

  m.def("load_idx", &nn::datasets::load_idx);
  m.def("fashion_mnist", [](const std::string& dir) {
    nn::datasets::Mnist d = nn::datasets::fashion_mnist(dir);
    return py::make_tuple(d.X_train, d.Y_train, d.X_test, d.Y_test);
  });
}

}  // namespace kiln::python
