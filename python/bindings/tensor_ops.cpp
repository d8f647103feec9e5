// Tensor ops that are not neural-network specific: elementwise, reductions, movement, matrix
// products, combining and indexing. Binary ops take tensors; the package turns Python scalars into
// tensors with tinygrad's dtype rule first.
#include <pybind11/stl.h>

#include "bindings.h"

namespace kiln::python {

void bind_tensor_ops(py::module_& m, PyTensor& t) {
  py::enum_<PadMode>(m, "PadMode")
      .value("constant", PadMode::constant)
      .value("reflect", PadMode::reflect)
      .value("replicate", PadMode::replicate)
      .value("circular", PadMode::circular);
  using Binary = Tensor (Tensor::*)(const Tensor&) const;
  // ---- elementwise
  t.def("add", &Tensor::add)
      .def("sub", &Tensor::sub)
      .def("mul", &Tensor::mul)
      .def("div", static_cast<Binary>(&Tensor::div))
      .def("div", static_cast<Tensor (Tensor::*)(const Tensor&, std::string_view) const>(&Tensor::div))
      .def("fmod", static_cast<Binary>(&Tensor::fmod))
      .def("copysign", static_cast<Binary>(&Tensor::copysign))
      .def("logaddexp", static_cast<Binary>(&Tensor::logaddexp))
      .def("lerp", static_cast<Tensor (Tensor::*)(const Tensor&, const Tensor&) const>(&Tensor::lerp))
      .def("lerp", static_cast<Tensor (Tensor::*)(const Tensor&, double) const>(&Tensor::lerp))
      .def("isclose", &Tensor::isclose)
      .def("allclose", &Tensor::allclose)
      .def("pow", static_cast<Binary>(&Tensor::pow))
      .def("pow", static_cast<Tensor (Tensor::*)(double) const>(&Tensor::pow))
      .def("maximum", static_cast<Binary>(&Tensor::maximum))
      .def("minimum", static_cast<Binary>(&Tensor::minimum))
      .def("clip", &Tensor::clip)
      .def("lt", static_cast<Binary>(&Tensor::lt))
      .def("gt", static_cast<Binary>(&Tensor::gt))
      .def("le", static_cast<Binary>(&Tensor::le))
      .def("ge", static_cast<Binary>(&Tensor::ge))
      .def("eq", static_cast<Binary>(&Tensor::eq))
      .def("ne", static_cast<Binary>(&Tensor::ne))
      .def("idiv", static_cast<Binary>(&Tensor::idiv))
      .def("mod", static_cast<Binary>(&Tensor::mod))
      .def("isnan", &Tensor::isnan)
      .def("isinf", &Tensor::isinf)
      .def("isfinite", &Tensor::isfinite)
      .def("bitwise_and", &Tensor::bitwise_and)
      .def("bitwise_or", &Tensor::bitwise_or)
      .def("bitwise_xor", &Tensor::bitwise_xor)
      .def("bitwise_not", &Tensor::bitwise_not)
      .def("lshift", static_cast<Tensor (Tensor::*)(int) const>(&Tensor::lshift))
      .def("lshift", static_cast<Binary>(&Tensor::lshift))
      .def("rshift", static_cast<Tensor (Tensor::*)(int) const>(&Tensor::rshift))
      .def("rshift", static_cast<Binary>(&Tensor::rshift))
      .def("where", static_cast<Tensor (Tensor::*)(const Tensor&, const Tensor&) const>(&Tensor::where))
      .def("neg", &Tensor::neg)
      .def("logical_not", &Tensor::logical_not)
      .def("relu", &Tensor::relu)
      .def("exp", &Tensor::exp)
      .def("exp2", &Tensor::exp2)
      .def("log", &Tensor::log)
      .def("log2", &Tensor::log2)
      .def("sqrt", &Tensor::sqrt)
      .def("rsqrt", &Tensor::rsqrt)
      .def("sin", &Tensor::sin)
      .def("cos", &Tensor::cos)
      .def("tan", &Tensor::tan)
      .def("tanh", &Tensor::tanh)
      .def("sigmoid", &Tensor::sigmoid)
      .def("abs", &Tensor::abs)
      .def("reciprocal", &Tensor::reciprocal)
      .def("square", &Tensor::square)
      .def("sign", &Tensor::sign)
      .def("trunc", &Tensor::trunc)
      .def("floor", &Tensor::floor)
      .def("ceil", &Tensor::ceil)
      .def("round", &Tensor::round)
      .def("log10", &Tensor::log10)
      .def("sinh", &Tensor::sinh)
      .def("cosh", &Tensor::cosh)
      .def("asinh", &Tensor::asinh)
      .def("acosh", &Tensor::acosh)
      .def("atanh", &Tensor::atanh)
      .def("asin", &Tensor::asin)
      .def("acos", &Tensor::acos)
      .def("atan", &Tensor::atan);

  // ---- reductions (an empty axis list reduces every axis)
  t.def("sum", static_cast<Tensor (Tensor::*)(std::vector<int>, bool) const>(&Tensor::sum))
      .def("prod", static_cast<Tensor (Tensor::*)(std::vector<int>, bool) const>(&Tensor::prod))
      .def("max", static_cast<Tensor (Tensor::*)(std::vector<int>, bool) const>(&Tensor::max))
      .def("min", static_cast<Tensor (Tensor::*)(std::vector<int>, bool) const>(&Tensor::min))
      .def("any", &Tensor::any)
      .def("all", &Tensor::all)
      .def("mean", static_cast<Tensor (Tensor::*)(std::vector<int>, bool) const>(&Tensor::mean))
      .def("var", static_cast<Tensor (Tensor::*)(std::vector<int>, bool, double) const>(&Tensor::var))
      .def("std", static_cast<Tensor (Tensor::*)(std::vector<int>, bool, double) const>(&Tensor::std))
      .def("var_mean", &Tensor::var_mean)
      .def("std_mean", &Tensor::std_mean)
      .def("normalize", &Tensor::normalize)
      .def("newton_schulz", &Tensor::newton_schulz)
      .def("argmax", &Tensor::argmax)
      .def("argmin", &Tensor::argmin)
      .def("softmax", &Tensor::softmax)
      .def("softmin", &Tensor::softmin)
      .def("log_softmax", &Tensor::log_softmax)
      .def("logsumexp", &Tensor::logsumexp);

  // ---- movement
  t.def("reshape", &Tensor::reshape)
      .def("permute", &Tensor::permute)
      .def("expand", &Tensor::expand)
      .def("pad", static_cast<Tensor (Tensor::*)(Pairs) const>(&Tensor::pad))
      .def("pad", static_cast<Tensor (Tensor::*)(const Pairs&, PadMode, double) const>(&Tensor::pad))
      .def("shrink", &Tensor::shrink)
      .def("shrink_to", &Tensor::shrink_to)
      .def("pad_to", &Tensor::pad_to)
      .def("flip", &Tensor::flip)
      .def("transpose", &Tensor::transpose)
      .def("flatten", &Tensor::flatten)
      .def("squeeze", &Tensor::squeeze)
      .def("unsqueeze", &Tensor::unsqueeze);

  // ---- matrix products
  t.def("matmul", &Tensor::matmul)
      .def("linear", &Tensor::linear)
      .def_static("einsum", &Tensor::einsum);

  // ---- combining and splitting
  t.def_static("cat", &Tensor::cat)
      .def_static("stack", &Tensor::stack)
      .def("repeat", &Tensor::repeat)
      .def("split", static_cast<std::vector<Tensor> (Tensor::*)(std::vector<int64_t>, int) const>(&Tensor::split))
      .def("split", static_cast<std::vector<Tensor> (Tensor::*)(int64_t, int) const>(&Tensor::split))
      .def("chunk", &Tensor::chunk);

  // ---- indexing
  t.def("gather", &Tensor::gather)
      .def("scatter", static_cast<Tensor (Tensor::*)(int, const Tensor&, const Tensor&) const>(&Tensor::scatter))
      .def("scatter", static_cast<Tensor (Tensor::*)(int, const Tensor&, const Tensor&, std::string_view) const>(
                          &Tensor::scatter))
      .def("scatter_reduce", &Tensor::scatter_reduce)
      .def("masked_select", &Tensor::masked_select)
      .def("nonzero", &Tensor::nonzero)
      .def("index_select", &Tensor::index_select)
      .def("masked_fill", static_cast<Tensor (Tensor::*)(const Tensor&, const Tensor&) const>(&Tensor::masked_fill))
      .def("masked_fill", static_cast<Tensor (Tensor::*)(const Tensor&, double) const>(&Tensor::masked_fill))
      .def("one_hot", &Tensor::one_hot)
      .def("cumsum", &Tensor::cumsum)
      .def("cumprod", &Tensor::cumprod)
      .def("cummax", &Tensor::cummax)
      .def("cummin", &Tensor::cummin)
      .def("logcumsumexp", &Tensor::logcumsumexp)
      .def("tril", &Tensor::tril)
      .def("triu", &Tensor::triu);
}

}  // namespace kiln::python
