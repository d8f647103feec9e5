// The _kiln module: kiln::Error becomes kiln.KilnError (a RuntimeError) carrying kiln's message; its kinds
// (IndexError, ValueError, ...) become subclasses that are also the matching Python built-in.
#include "bindings.h"

#include <kiln/error.h>

namespace kiln::python {

PYBIND11_MODULE(_kiln, m) {
  m.doc() = "kiln's C++ engine; use it through the kiln package";
  static py::exception<Error> kiln_error(m, "KilnError", PyExc_RuntimeError);
  // Each kind is also the built-in Python raises for it, so `except IndexError` and `except KilnError` both work.
  auto kind = [&](const char* name, PyObject* builtin) {
    py::dict namespace_;
    namespace_["__module__"] = "kiln";
    py::object cls = py::module_::import("builtins").attr("type")(name, py::make_tuple(kiln_error, py::handle(builtin)),
                                                                   namespace_);
    m.attr(name) = cls;
    return cls.release().ptr();
  };
  static PyObject* const index_error = kind("KilnIndexError", PyExc_IndexError);
  static PyObject* const value_error = kind("KilnValueError", PyExc_ValueError);
  static PyObject* const type_error = kind("KilnTypeError", PyExc_TypeError);
  static PyObject* const not_implemented = kind("KilnNotImplementedError", PyExc_NotImplementedError);
  // The message decoded with backslash escapes for bytes that are not UTF-8 (a tensor name read
  // from a file): pybind11's plain translation would drop the whole message.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      const std::string what = e.what();
      py::object message = py::reinterpret_steal<py::object>(
          PyUnicode_DecodeUTF8(what.data(), static_cast<py::ssize_t>(what.size()), "backslashreplace"));
      PyObject* cls = kiln_error.ptr();
      if (dynamic_cast<const IndexError*>(&e)) cls = index_error;
      else if (dynamic_cast<const ValueError*>(&e)) cls = value_error;
      else if (dynamic_cast<const TypeError*>(&e)) cls = type_error;
      else if (dynamic_cast<const NotImplementedError*>(&e)) cls = not_implemented;
      PyErr_SetObject(cls, message.ptr());
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
  bind_llm_tokenizer(m);
  bind_llm(m);
#ifdef KILN_DISTRIBUTED
  bind_distributed(m);
#endif
#ifdef KILN_ONNX
  bind_onnx(m);
#endif
}

}  // namespace kiln::python
