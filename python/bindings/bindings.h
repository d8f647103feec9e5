#pragma once
// The _kiln extension: one bind_* function per area, each in its own file. The bindings mirror
// the C++ API (names, argument order); Python's argument forms (*args shapes, scalars, tinygrad's
// defaults) are handled by the pure-Python package in python/kiln/.
#include <pybind11/pybind11.h>

#include <kiln/tensor.h>

namespace kiln::python {

namespace py = pybind11;
using PyTensor = py::class_<Tensor>;

void bind_dtype(py::module_& m);
void bind_uop(py::module_& m);                       // read-only IR views: UOp, ScheduleItem
void bind_tensor(py::module_& m, PyTensor& tensor);  // creation, properties, data, autograd
void bind_tensor_ops(py::module_& m, PyTensor& tensor);     // elementwise, reduce, movement, indexing
void bind_tensor_nn_ops(py::module_& m, PyTensor& tensor);  // conv, pooling, normalization, activations, losses
void bind_tensor_sort(py::module_& m, PyTensor& tensor);    // sort, topk, sampling; roll, diagonal, rearrange
void bind_nn(py::module_& m);                        // layers and optimizers
void bind_state(py::module_& m);                     // safetensors and datasets
void bind_runtime(py::module_& m);                   // counters, devices, settings
void bind_jit(py::module_& m);                       // TinyJit's capture and replay
void bind_llm_tokenizer(py::module_& m);             // language models' tokenizers
void bind_llm(py::module_& m);                       // language models: the model, its KV cache, generation
void bind_distributed(py::module_& m);               // collectives over MPI (built with KILN_DISTRIBUTED)
void bind_onnx(py::module_& m);                       // ONNX models (built with KILN_ONNX)

}  // namespace kiln::python
