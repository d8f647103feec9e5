// Neural-network ops on Tensor: convolution, pooling, normalization, activations, attention, losses.
#include <pybind11/stl.h>

#include "bindings.h"

namespace kiln::python {

void bind_tensor_nn_ops(py::module_& m, PyTensor& t) {
  using Opt = std::optional<Tensor>;
  // the per-axis overloads (lists), then the one-size ones (ints)
  t.def("conv2d", static_cast<Tensor (Tensor::*)(const Tensor&, Opt, const Shape&, const Pairs&, const Shape&, int)
                                   const>(&Tensor::conv2d))
      .def("conv2d", static_cast<Tensor (Tensor::*)(const Tensor&, Opt, int, int, int, int) const>(&Tensor::conv2d))
      .def("conv_transpose2d",
           static_cast<Tensor (Tensor::*)(const Tensor&, Opt, const Shape&, const Pairs&, const Shape&, int,
                                          const Shape&) const>(&Tensor::conv_transpose2d))
      .def("conv_transpose2d", static_cast<Tensor (Tensor::*)(const Tensor&, Opt, int, int, int, int, int) const>(
                                   &Tensor::conv_transpose2d))
      .def("max_pool2d", static_cast<Tensor (Tensor::*)(const Shape&, const Shape&, const Pairs&, const Shape&, bool)
                                       const>(&Tensor::max_pool2d))
      .def("max_pool2d",
           static_cast<Tensor (Tensor::*)(int, std::optional<int>, int, int, bool) const>(&Tensor::max_pool2d))
      .def("max_pool2d_with_indices", &Tensor::max_pool2d_with_indices)
      .def("max_unpool2d", &Tensor::max_unpool2d)
      .def("interpolate", &Tensor::interpolate)
      .def("avg_pool2d", static_cast<Tensor (Tensor::*)(const Shape&, const Shape&, const Pairs&, const Shape&, bool,
                                                        bool) const>(&Tensor::avg_pool2d))
      .def("avg_pool2d",
           static_cast<Tensor (Tensor::*)(int, std::optional<int>, int, int, bool, bool) const>(&Tensor::avg_pool2d))
      .def("batchnorm", &Tensor::batchnorm)
      .def("layernorm", &Tensor::layernorm)
      .def("dropout", &Tensor::dropout)
      .def("scaled_dot_product_attention", &Tensor::scaled_dot_product_attention);

  // activations
  t.def("gelu", &Tensor::gelu, py::arg("approximate") = "tanh")
      .def("hardsigmoid", &Tensor::hardsigmoid)
      .def("softsign", &Tensor::softsign)
      .def("celu", &Tensor::celu)
      .def("selu", &Tensor::selu)
      .def("logsigmoid", &Tensor::logsigmoid)
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

  // losses
  py::enum_<Reduction>(m, "Reduction")
      .value("none", Reduction::none)
      .value("mean", Reduction::mean)
      .value("sum", Reduction::sum);
  t.def("sparse_categorical_crossentropy", &Tensor::sparse_categorical_crossentropy)
      .def("cross_entropy", &Tensor::cross_entropy)
      .def("nll_loss", &Tensor::nll_loss)
      .def("binary_crossentropy", &Tensor::binary_crossentropy)
      .def("binary_crossentropy_logits", &Tensor::binary_crossentropy_logits);
}

}  // namespace kiln::python
