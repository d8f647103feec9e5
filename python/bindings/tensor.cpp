// Tensor core: creation, properties, NumPy in and out, realize/schedule, autograd.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "runtime/device.h"
#include "tensor/tensor_impl.h"

namespace kiln::python {
namespace {

// Whether the interpreter can still take references back (not while it shuts down).
bool python_alive() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

// The array's memory itself when it is aligned and the default device computes on host memory
// (the CPU): kiln only ever reads a tensor's input buffer, and the tensor holds a reference to the
// array until kiln is done with the memory. Like torch.from_numpy, later changes to the array show
// in the tensor. Otherwise a copy of the bytes in a new device buffer. The package hands over
// C-ordered arrays in native byte order.
Tensor from_numpy(const py::array& array) {
  if (!(array.flags() & py::array::c_style)) throw_error("from_numpy: expected a C-contiguous array");
  const std::string name = py::str(array.dtype().attr("name"));
  std::optional<DType> dtype = dtypes::from_name(name);
  if (!dtype) throw_error("Tensor: NumPy arrays of dtype ", name, " have no kiln dtype");
  Shape shape(array.shape(), array.shape() + array.ndim());
  const bool shared = array.nbytes() > 0 && array.attr("flags").attr("aligned").cast<bool>() &&
                      runtime::get_device(runtime::default_device()).allocator().host_memory();
  if (!shared) return tensor_from_bytes(array.data(), static_cast<size_t>(array.nbytes()), *dtype, std::move(shape));
  PyObject* owner = array.ptr();
  Py_INCREF(owner);
  auto give_back = [owner] {
    if (!python_alive()) return;  // the interpreter and the array are gone already
    py::gil_scoped_acquire gil;
    Py_DECREF(owner);
  };
  try {
    return tensor_over_host_memory(const_cast<void*>(array.data()), *dtype, std::move(shape), give_back);
  } catch (...) {
    Py_DECREF(owner);
    throw;
  }
}

// Realizes the tensor and copies it into a new array of the same shape (bfloat16 and fp8s, which NumPy
// lacks, are cast by the package first).
py::array to_numpy(const Tensor& t) {
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  py::array out(py::dtype(t.dtype().name()), shape);
  if (out.nbytes() > 0) tensor_to_bytes(t, out.mutable_data(), static_cast<size_t>(out.nbytes()));
  return out;
}

}  // namespace

void bind_tensor(py::module_& m, PyTensor& tensor) {
  m.def("get_training", [] { return Tensor::training; });
  m.def("set_training", [](bool on) { Tensor::training = on; });
  m.def("get_no_grad", [] { return Tensor::no_grad; });
  m.def("set_no_grad", [](bool on) { Tensor::no_grad = on; });

  tensor
      // ---- creation
      .def_static("from_numpy", &from_numpy)
      // Python ints first, exactly (a double rounds above 2^53); floats take the last overload
      .def_static("full", static_cast<Tensor (*)(Shape, int64_t, DType)>(&Tensor::full))
      .def_static("full", static_cast<Tensor (*)(Shape, uint64_t, DType)>(&Tensor::full<uint64_t>))
      .def_static("full", static_cast<Tensor (*)(Shape, double, DType)>(&Tensor::full))
      .def_static("empty", &Tensor::empty)
      // an address as a Python int (numpy's arr.ctypes.data)
      .def_static("from_blob", [](uintptr_t ptr, Shape shape, DType dtype) {
        return Tensor::from_blob(reinterpret_cast<const void*>(ptr), std::move(shape), dtype);
      })
      .def_static("arange", static_cast<Tensor (*)(double, double, double, std::optional<DType>)>(&Tensor::arange))
      .def_static("eye", &Tensor::eye)
      .def_static("rand", &Tensor::rand)
      .def_static("randn", &Tensor::randn)
      .def_static("uniform", &Tensor::uniform)
      .def_static("randint", &Tensor::randint)
      .def_static("normal", &Tensor::normal)
      .def_static("kaiming_uniform", &Tensor::kaiming_uniform)
      .def_static("kaiming_normal", &Tensor::kaiming_normal)
      .def_static("glorot_uniform", &Tensor::glorot_uniform)
      .def_static("scaled_uniform", &Tensor::scaled_uniform)
      .def_static("manual_seed", &Tensor::manual_seed)
      // ---- properties
      .def_property_readonly("shape", [](const Tensor& t) { return py::tuple(py::cast(t.shape())); })
      .def_property_readonly("dtype", &Tensor::dtype)
      .def_property_readonly("device", &Tensor::device)
      .def("numel", &Tensor::numel)
      .def_property_readonly("ndim", &Tensor::ndim)
      // ---- execution and data
      .def_static("realize_all", py::overload_cast<const std::vector<Tensor>&>(&Tensor::realize))
      // one tensor without building a list, and returning nothing: the cheapest call for the hot path
      .def("realize", [](Tensor& t) { t.realize(); })
      .def("numpy", &to_numpy)
      .def("contiguous", &Tensor::contiguous)
      .def("cast", &Tensor::cast)
      .def("bitcast", &Tensor::bitcast)
      .def("to", &Tensor::to)
      .def("to_", &Tensor::to_)
      .def("schedule", &Tensor::schedule)
      .def_property_readonly("uop", &Tensor::uop)
      // ---- autograd
      .def_property_readonly("requires_grad", &Tensor::requires_grad)
      // None: off, but backward(every_live=True) may fill it; False: never (tinygrad's three states)
      .def("requires_grad_",
           [](Tensor& t, std::optional<bool> on) {
             TensorRegistry::impl_of(t)->never_needs_grad = on == false;
             return t.requires_grad_(on.value_or(false));
           })
      .def_property("grad", &Tensor::grad, [](Tensor& t, std::optional<Tensor> g) { t.set_grad(std::move(g)); })
      .def(
          "backward",
          [](Tensor& t, std::optional<Tensor> gradient, bool every_live) {
            if (every_live) backward_live(t, std::move(gradient));
            else t.backward(std::move(gradient));
          },
          py::arg("gradient") = py::none(), py::arg("every_live") = false)
      .def("gradient", &Tensor::gradient)
      .def("detach", &Tensor::detach)
      .def("assign", [](Tensor& t, const Tensor& value) { return t.assign(value); });
}

}  // namespace kiln::python
