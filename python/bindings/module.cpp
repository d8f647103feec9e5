// The _kiln module: kiln::Error becomes kiln.KilnError (a RuntimeError) carrying kiln's message.
#include "bindings.h"

#include <kiln/error.h>

namespace kiln::python {

PYBIND11_MODULE(_kiln, m) {
  m.doc() = "kiln's C++ engine; use it through the kiln package";
  py::register_exception<Error>(m, "KilnError", PyExc_RuntimeError);
  bind_dtype(m);
  bind_uop(m);
  PyTensor tensor(m, "Tensor");
  bind_tensor(m, tensor);
  bind_tensor_ops(m, tensor);
  bind_tensor_nn_ops(m, tensor);
  bind_nn(m);
  bind_state(m);
  bind_runtime(m);
  bind_jit(m);
}

}  // namespace kiln::python
