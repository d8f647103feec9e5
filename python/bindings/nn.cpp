// nn layers and optimizers. Layers expose their tensors as read-write attributes (assigning one
// replaces the handle, as in tinygrad) and their state dict by dotted name (C++ `collect`).
#include <pybind11/stl.h>

#include <kiln/nn/clip_grad.h>
#include <kiln/nn/layers.h>
#include <kiln/nn/optim.h>

#include "bindings.h"

namespace kiln::python {
namespace {

using namespace kiln::nn;

// __call__, state_dict and __copy__, which every layer has (a layer deriving from another names it
// in Bases).
template <class Layer, class... Bases>
py::class_<Layer, Bases...> layer(py::module_& m, const char* name) {
  return py::class_<Layer, Bases...>(m, name)
      .def("__call__", &Layer::operator())
      .def("state_dict", [](const Layer& l) { return get_state_dict(l); })
      // a copy sharing the tensors (handles), which kiln.nn's deepcopy then replaces by copies
      .def("__copy__", [](const Layer& l) { return Layer(l); });
}

void bind_layers(py::module_& m) {
  layer<Linear>(m, "Linear")
      .def(py::init<int64_t, int64_t, bool>())
      .def_readwrite("weight", &Linear::weight)
      .def_readwrite("bias", &Linear::bias);
  layer<Conv2d>(m, "Conv2d")
      .def(py::init<int64_t, int64_t, int64_t, int64_t, int64_t, bool, int64_t, int64_t>())
      .def_readwrite("weight", &Conv2d::weight)
      .def_readwrite("bias", &Conv2d::bias)
      .def_readonly("stride", &Conv2d::stride)
      .def_readonly("padding", &Conv2d::padding)
      .def_readonly("dilation", &Conv2d::dilation)
      .def_readonly("groups", &Conv2d::groups);
  layer<ConvTranspose2d>(m, "ConvTranspose2d")
      .def(py::init<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool, int64_t, int64_t>())
      .def_readwrite("weight", &ConvTranspose2d::weight)
      .def_readwrite("bias", &ConvTranspose2d::bias)
      .def_readonly("stride", &ConvTranspose2d::stride)
      .def_readonly("padding", &ConvTranspose2d::padding)
      .def_readonly("output_padding", &ConvTranspose2d::output_padding)
      .def_readonly("dilation", &ConvTranspose2d::dilation)
      .def_readonly("groups", &ConvTranspose2d::groups);
  layer<BatchNorm>(m, "BatchNorm")
      .def(py::init<int64_t, double, double, bool, bool>())
      .def_readwrite("weight", &BatchNorm::weight)
      .def_readwrite("bias", &BatchNorm::bias)
      .def_readwrite("running_mean", &BatchNorm::running_mean)
      .def_readwrite("running_var", &BatchNorm::running_var)
      .def_readwrite("num_batches_tracked", &BatchNorm::num_batches_tracked)
      .def_readonly("eps", &BatchNorm::eps)
      .def_readonly("momentum", &BatchNorm::momentum)
      .def_readonly("track_running_stats", &BatchNorm::track_running_stats);
  layer<LayerNorm>(m, "LayerNorm")
      .def(py::init<Shape, double, bool>())
      .def_readwrite("weight", &LayerNorm::weight)
      .def_readwrite("bias", &LayerNorm::bias)
      .def_readonly("normalized_shape", &LayerNorm::normalized_shape)
      .def_readonly("eps", &LayerNorm::eps);
  layer<GroupNorm>(m, "GroupNorm")
      .def(py::init<int64_t, int64_t, double, bool>())
      .def_readwrite("weight", &GroupNorm::weight)
      .def_readwrite("bias", &GroupNorm::bias)
      .def_readonly("num_groups", &GroupNorm::num_groups)
      .def_readonly("num_channels", &GroupNorm::num_channels)
      .def_readonly("eps", &GroupNorm::eps);
  layer<InstanceNorm, GroupNorm>(m, "InstanceNorm").def(py::init<int64_t, double, bool>());
  layer<LayerNorm2d, LayerNorm>(m, "LayerNorm2d").def(py::init<Shape, double, bool>());
  layer<LSTMCell>(m, "LSTMCell")
      .def(py::init<int64_t, int64_t, bool>())
      .def_readwrite("weight_ih", &LSTMCell::weight_ih)
      .def_readwrite("weight_hh", &LSTMCell::weight_hh)
      .def_readwrite("bias_ih", &LSTMCell::bias_ih)
      .def_readwrite("bias_hh", &LSTMCell::bias_hh);
  layer<RMSNorm>(m, "RMSNorm")
      .def(py::init<int64_t, double, bool>())
      .def_readwrite("weight", &RMSNorm::weight)
      .def_readonly("eps", &RMSNorm::eps);
  layer<Embedding>(m, "Embedding")
      .def(py::init<int64_t, int64_t>())
      .def_readwrite("weight", &Embedding::weight)
      .def_readonly("vocab_size", &Embedding::vocab_size)
      .def_readonly("dim", &Embedding::dim);

  m.def("load_state_dict_into", &load_state_dict_into);
  m.def("clip_grad_norm_", &clip_grad_norm_);
}

void bind_optimizers(py::module_& m) {
  using namespace kiln::nn::optim;
  py::class_<Optimizer>(m, "Optimizer")
      .def("zero_grad", &Optimizer::zero_grad)
      .def("schedule_step", &Optimizer::schedule_step)
      .def_readonly("params", &Optimizer::params)
      .def_readonly("lr_tensor", &Optimizer::lr_tensor);
  py::class_<SGD, Optimizer>(m, "SGD").def(py::init<std::vector<Tensor>, double, double, double, bool>());
  py::class_<LAMB, Optimizer>(m, "LAMB")
      .def(py::init<std::vector<Tensor>, double, double, double, double, double, bool>())
      .def_readonly("m", &LAMB::m)
      .def_readonly("v", &LAMB::v)
      .def_readonly("b1_t", &LAMB::b1_t)
      .def_readonly("b2_t", &LAMB::b2_t);
  py::class_<Adam, LAMB>(m, "Adam").def(py::init<std::vector<Tensor>, double, double, double, double>());
  py::class_<AdamW, LAMB>(m, "AdamW").def(py::init<std::vector<Tensor>, double, double, double, double, double>());
  py::class_<Muon, Optimizer>(m, "Muon")
      .def(py::init<std::vector<Tensor>, double, double, double, int, std::vector<double>, bool>());
  // Schedules keep a reference to their optimizer (keep_alive), which they set the rate of.
  py::class_<LRScheduler>(m, "LRScheduler")
      .def("step", &LRScheduler::step)
      .def("set_step", &LRScheduler::set_step)
      .def_readonly("epoch_counter", &LRScheduler::epoch_counter);
  py::class_<OneCycleLR, LRScheduler>(m, "OneCycleLR")
      .def(py::init<Optimizer&, double, int64_t, double, double, double>(), py::keep_alive<1, 2>());
  py::class_<CosineAnnealingLR, LRScheduler>(m, "CosineAnnealingLR")
      .def(py::init<Optimizer&, int64_t, double>(), py::keep_alive<1, 2>());
  py::class_<WarmupCosineLR, LRScheduler>(m, "WarmupCosineLR")
      .def(py::init<Optimizer&, int64_t, int64_t, double>(), py::keep_alive<1, 2>());
}

}  // namespace

void bind_nn(py::module_& m) {
  py::module_ nn = m.def_submodule("nn", "layers and optimizers");
  bind_layers(nn);
  bind_optimizers(nn);
}

}  // namespace kiln::python
