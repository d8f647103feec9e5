// The _kiln module: kiln::Error becomes kiln.KilnError (a RuntimeError) carrying kiln's message.
#include "bindings.h"

#include <kiln/error.h>

namespace kiln::python {

PYBIND11_MODULE(_kiln, m) {
  m.doc() = "kiln's C++ engine; use it through the kiln package";
  static py::exception<Error> kiln_error(m, "KilnError", PyExc_RuntimeError);
  // The message decoded with backslash escapes for bytes that are not UTF-8 (a tensor name read
  // from a file): pybind11's plain translation would drop the whole message.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      const std::string what = e.what();
      py::object message = py::reinterpret_steal<py::object>(
          PyUnicode_DecodeUTF8(what.data(), static_cast<py::ssize_t>(what.size()), "backslashreplace"));
      PyErr_SetObject(kiln_error.ptr(), message.ptr());
    }
  });
  bind_dtype(m);
  bind_uop(m);
  PyTensor tensor(m, "Tensor");
  bind_tensor(m, tensor);
  bind_tensor_ops(m, tensor);
  bind_tensor_nn_ops(m, tensor);
  bind_tensor_sort(m, tensor);
  bind_nn(m);
  bind_state(m);
  bind_runtime(m);
  bind_jit(m);
}

}  // namespace kiln::python
