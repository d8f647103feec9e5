// Neural-network ops on Tensor: convolution, pooling, normalization, activations, attention, losses.
#include <pybind11/stl.h>

#include "bindings.h"

namespace kiln::python {

void bind_tensor_nn_ops(PyTensor& t) {
  t.def("conv2d", &Tensor::conv2d)
      .def("conv_transpose2d", &Tensor::conv_transpose2d)
      .def("max_pool2d", &Tensor::max_pool2d)
      .def("avg_pool2d", &Tensor::avg_pool2d)
      .def("batchnorm", &Tensor::batchnorm)
      .def("layernorm", &Tensor::layernorm)
      .def("dropout", &Tensor::dropout)
      .def("scaled_dot_product_attention", &Tensor::scaled_dot_product_attention);

  // activations
  t.def("gelu", &Tensor::gelu)
      .def("quick_gelu", &Tensor::quick_gelu)
      .def("silu", &Tensor::silu)
      .def("swish", &Tensor::swish)
      .def("relu6", &Tensor::relu6)
      .def("hardswish", &Tensor::hardswish)
      .def("mish", &Tensor::mish)
      .def("erf", &Tensor::erf)
      .def("softplus", &Tensor::softplus)
      .def("elu", &Tensor::elu)
      .def("leaky_relu", &Tensor::leaky_relu)
      .def("hardtanh", &Tensor::hardtanh);

  // losses (mean over the batch)
  t.def("sparse_categorical_crossentropy", &Tensor::sparse_categorical_crossentropy)
      .def("cross_entropy", &Tensor::cross_entropy)
      .def("nll_loss", &Tensor::nll_loss)
      .def("binary_crossentropy", &Tensor::binary_crossentropy)
      .def("binary_crossentropy_logits", &Tensor::binary_crossentropy_logits);
}

}  // namespace kiln::python
