#pragma once
// nn layers, as tinygrad's: plain structs of tensors whose parameters require gradients from
// creation. A model lists its tensors by dotted name through `collect`, which get_state_dict,
// get_parameters and load_state_dict use.
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::nn {

using StateDict = std::map<std::string, Tensor>;

// Adds `t` to `out` under prefix + name.
void add_state(StateDict& out, const std::string& prefix, const std::string& name, const Tensor& t);
void add_state(StateDict& out, const std::string& prefix, const std::string& name, const std::optional<Tensor>& t);

struct Linear {
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor operator()(const Tensor& x) const;
  void collect(StateDict& out, const std::string& prefix = "") const;
  Tensor weight;
  std::optional<Tensor> bias;
};

struct Conv2d {
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride = 1, int64_t padding = 0,
         bool bias = true, int64_t dilation = 1, int64_t groups = 1);
  Tensor operator()(const Tensor& x) const;
  void collect(StateDict& out, const std::string& prefix = "") const;
  Tensor weight;
  std::optional<Tensor> bias;
  int64_t stride, padding, dilation, groups;

 protected:
  // a kernel of `spatial_dims` axes, each kernel_size long (Conv1d's one axis)
  Conv2d(size_t spatial_dims, int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride,
         int64_t padding, bool bias, int64_t dilation, int64_t groups);
};

// (N, C, L) inputs, weight (out_channels, in_channels/groups, kernel_size): as tinygrad's, a Conv2d
// with a one-axis kernel.
struct Conv1d : Conv2d {
  Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride = 1, int64_t padding = 0,
         bool bias = true, int64_t dilation = 1, int64_t groups = 1);
};

struct ConvTranspose2d {
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride = 1,
                  int64_t padding = 0, int64_t output_padding = 0, bool bias = true, int64_t dilation = 1,
                  int64_t groups = 1);
  Tensor operator()(const Tensor& x) const;
  void collect(StateDict& out, const std::string& prefix = "") const;
  Tensor weight;
  std::optional<Tensor> bias;
  int64_t stride, padding, output_padding, dilation, groups;

 protected:
  ConvTranspose2d(size_t spatial_dims, int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride,
                  int64_t padding, int64_t output_padding, bool bias, int64_t dilation, int64_t groups);
};

// (N, C, L) inputs, weight (in_channels, out_channels/groups, kernel_size)
struct ConvTranspose1d : ConvTranspose2d {
  ConvTranspose1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride = 1,
                  int64_t padding = 0, int64_t output_padding = 0, bool bias = true, int64_t dilation = 1,
                  int64_t groups = 1);
};

// Batch statistics while Tensor::training (and the running statistics are updated), the running
// statistics otherwise. Normalizes axis 1 of (N, C, ...) inputs. Without `affine`, weight and bias
// stay ones and zeros and are not parameters.
struct BatchNorm {
  BatchNorm(int64_t features, double eps = 1e-5, double momentum = 0.1, bool affine = true,
            bool track_running_stats = true);
  Tensor operator()(const Tensor& x) const;
  void collect(StateDict& out, const std::string& prefix = "") const;
  Tensor weight, bias;
  Tensor running_mean, running_var, num_batches_tracked;
  double eps, momentum;
  bool track_running_stats;
};
using BatchNorm2d = BatchNorm;

struct LayerNorm {
  LayerNorm(int64_t features, double eps = 1e-5, bool elementwise_affine = true);
  LayerNorm(Shape normalized_shape, double eps = 1e-5, bool elementwise_affine = true);
  Tensor operator()(const Tensor& x) const;
  void collect(StateDict& out, const std::string& prefix = "") const;
  Shape normalized_shape;
  std::optional<Tensor> weight, bias;
  double eps;
};

struct GroupNorm {
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
  Tensor operator()(const Tensor& x) const;
  void collect(StateDict& out, const std::string& prefix = "") const;
  int64_t num_groups, num_channels;
  std::optional<Tensor> weight, bias;
  double eps;
};

// A GroupNorm of one channel per group, as tinygrad's: each sample's channel is normalized over its
// other axes, (N, C, ...) inputs.
struct InstanceNorm : GroupNorm {
  InstanceNorm(int64_t num_features, double eps = 1e-5, bool affine = true)
      : GroupNorm(num_features, num_features, eps, affine) {}
};

// LayerNorm over the channel axis of (N, C, H, W) inputs.
struct LayerNorm2d : LayerNorm {
  using LayerNorm::LayerNorm;
  Tensor operator()(const Tensor& x) const;
};

// One step of an LSTM, as PyTorch's and tinygrad's: the gates (input, forget, cell, output) are the
// rows of weight_ih (4 hidden, input) and weight_hh (4 hidden, hidden), in that order.
struct LSTMCell {
  using State = std::pair<Tensor, Tensor>;  // (h, c), each (N, hidden_size)
  LSTMCell(int64_t input_size, int64_t hidden_size, bool bias = true);
  // The next (h, c) from x (N, input_size) and the previous state (zeros when absent).
  State operator()(const Tensor& x, const std::optional<State>& hc = std::nullopt) const;
  void collect(StateDict& out, const std::string& prefix = "") const;
  Tensor weight_ih, weight_hh;
  std::optional<Tensor> bias_ih, bias_hh;
};

struct RMSNorm {
  RMSNorm(int64_t dim, double eps = 1e-6, bool elementwise_affine = true);
  Tensor operator()(const Tensor& x) const;
  void collect(StateDict& out, const std::string& prefix = "") const;
  std::optional<Tensor> weight;
  double eps;
};

struct Embedding {
  Embedding(int64_t vocab_size, int64_t dim);
  Tensor operator()(const Tensor& idx) const;  // integer indices (...) -> (..., dim)
  void collect(StateDict& out, const std::string& prefix = "") const;
  int64_t vocab_size, dim;
  Tensor weight;
};

// A model's tensors by dotted name: any type with `void collect(StateDict&, const std::string&) const`.
template <class Model>
StateDict get_state_dict(const Model& model) {
  StateDict out;
  model.collect(out, "");
  return out;
}

// The tensors of a state dict that require gradients (running statistics do not).
std::vector<Tensor> parameters_of(const StateDict& state);
template <class Model>
std::vector<Tensor> get_parameters(const Model& model) {
  return parameters_of(get_state_dict(model));
}

// Copies `state` into the model's tensors. Missing, unexpected or mis-shaped keys are an error
// that names them all (strict), or are skipped (not strict, mis-shapes are still errors). A tensor
// whose dtype differs from the model's is an error too (it names the key and both dtypes), unless
// `cast` asks to convert it to the model's dtype.
void load_state_dict_into(const StateDict& model_state, const StateDict& state, bool strict = true,
                          bool cast = false);
template <class Model>
void load_state_dict(Model& model, const StateDict& state, bool strict = true, bool cast = false) {
  load_state_dict_into(get_state_dict(model), state, strict, cast);
}

// Applies each layer in turn (tinygrad's Tensor.sequential).
template <class... Layers>
Tensor sequential(Tensor x, const Layers&... layers) {
  ((x = layers(x)), ...);
  return x;
}

}  // namespace kiln::nn
