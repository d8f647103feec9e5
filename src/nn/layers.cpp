// nn layers: parameters initialized as tinygrad's, forward passes built from Tensor ops.
#include "kiln/nn/layers.h"

#include <cmath>
#include <set>

#include "kiln/error.h"
#include "tensor/custom_gradient.h"
#include "tensor/tensor_impl.h"

namespace kiln::nn {
namespace {

Tensor param(Tensor t) { return t.requires_grad_(); }

// U(-1/sqrt(fan_in), 1/sqrt(fan_in)), PyTorch's and tinygrad's default for weights and biases
Tensor bounded_uniform(Shape shape, double fan_in) {
  double bound = 1 / std::sqrt(fan_in);
  return param(Tensor::uniform(std::move(shape), -bound, bound));
}

void check_rank(const Tensor& x, int64_t min_rank, const char* layer, const char* layout) {
  if (x.ndim() < min_rank)
    throw_error(layer, ": expected an input of layout ", layout, ", got shape ", shape_to_string(x.shape()));
}

// Training-mode BatchNorm's gradient, given instead of derived. With g = d loss / d y and
// xhat = (x - mean) * invstd, two sums over the statistics' axes, S1 = sum(g) and
// S2 = sum(g * xhat), give every input's gradient: bias S1, weight S2, and
// x: weight * invstd * (g - (S1 + xhat * S2) / n). Derived from the graph, the same sums came out
// as four reductions (through bias, weight, mean and invstd), each a kernel re-reading g and the
// max-pool backward before it (at the MNIST CNN's first BatchNorm, a large input read four times).
Tensor with_batch_statistics_gradient(const Tensor& y, const Tensor& x, const Tensor& weight, const Tensor& bias,
                                      const Tensor& mean, const Tensor& invstd, const std::vector<int>& axes,
                                      const Shape& stat_shape) {
  UOpRef x_node = x.uop(), w_node = weight.uop(), mean_node = mean.uop(), invstd_node = invstd.uop();
  const DType w_dtype = weight.dtype(), b_dtype = bias.dtype();
  const double n = static_cast<double>(x.numel() / kiln::prod(stat_shape));
  auto backward = [=](const Tensor& g, const std::vector<bool>& wanted) {
    const Tensor scale = Tensor(invstd_node).reshape(stat_shape);
    const Tensor xhat = (Tensor(x_node) - Tensor(mean_node).reshape(stat_shape)) * scale;
    const Tensor s1 = g.sum(axes, true), s2 = (g * xhat).sum(axes, true);
    std::vector<std::optional<Tensor>> grads(3);
    if (wanted[0]) grads[0] = Tensor(w_node).reshape(stat_shape) * scale * (g - (s1 + xhat * s2) / n);
    if (wanted[1]) grads[1] = s2.reshape({stat_shape[1]}).cast(w_dtype);
    if (wanted[2]) grads[2] = s1.reshape({stat_shape[1]}).cast(b_dtype);
    return grads;
  };
  return autograd::set_custom_gradient(y, {x, weight, bias}, backward);
}

}  // namespace

void add_state(StateDict& out, const std::string& prefix, const std::string& name, const Tensor& t) {
  out.insert_or_assign(prefix + name, t);
}
void add_state(StateDict& out, const std::string& prefix, const std::string& name, const std::optional<Tensor>& t) {
  if (t) add_state(out, prefix, name, *t);
}

// ---- Linear

Linear::Linear(int64_t in, int64_t out, bool with_bias)
    : weight(bounded_uniform({out, in}, static_cast<double>(in))) {
  if (with_bias) bias = bounded_uniform({out}, static_cast<double>(in));
}

Tensor Linear::operator()(const Tensor& x) const {
  if (x.ndim() < 1 || x.shape().back() != weight.shape()[1])
    throw_error("Linear: expected inputs (..., ", weight.shape()[1], "), got ", shape_to_string(x.shape()));
  return x.linear(weight, bias);
}

void Linear::collect(StateDict& out, const std::string& prefix) const {
  add_state(out, prefix, "weight", weight);
  add_state(out, prefix, "bias", bias);
}

// ---- convolutions

namespace {

// A convolution layer's weight, (out, in/groups, k...) or transposed (in, out/groups, k...), and
// bias, uniform in +-1/sqrt(fan_in) where fan_in is a weight row's size.
void init_conv(Tensor& weight, std::optional<Tensor>& bias, const char* layer, size_t spatial_dims, int64_t in,
               int64_t out, int64_t k, int64_t groups, bool transposed, bool with_bias) {
  if (groups < 1 || in % groups != 0 || out % groups != 0)
    throw_error(layer, ": channels ", in, " -> ", out, " are not divisible by groups=", groups);
  if (k < 1) throw_error(layer, ": kernel_size must be >= 1, got ", k);
  Shape shape = transposed ? Shape{in, out / groups} : Shape{out, in / groups};
  shape.insert(shape.end(), spatial_dims, k);
  double fan_in = static_cast<double>(kiln::prod(shape) / shape[0]);
  weight = bounded_uniform(shape, fan_in);
  if (with_bias) bias = bounded_uniform({out}, fan_in);
}

// x must have the batch, channel and spatial axes the layer's kernel has.
void check_conv_input(const Tensor& x, const Tensor& weight, bool transposed) {
  const int64_t dims = weight.ndim() - 2;
  const std::string name = std::string(transposed ? "ConvTranspose" : "Conv") + std::to_string(dims) + "d";
  if (x.ndim() != weight.ndim())
    throw_error(name, ": expected an input of layout ", dims == 1 ? "(N, C, L)" : "(N, C, H, W)", ", got shape ",
                shape_to_string(x.shape()));
}

}  // namespace

Conv2d::Conv2d(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t padding, bool with_bias, int64_t dilation,
               int64_t groups)
    : Conv2d(2, in, out, k, stride, padding, with_bias, dilation, groups) {}

Conv2d::Conv2d(size_t spatial_dims, int64_t in, int64_t out, int64_t k, int64_t stride, int64_t padding,
               bool with_bias, int64_t dilation, int64_t groups)
    : weight(Tensor::zeros({1})), stride(stride), padding(padding), dilation(dilation), groups(groups) {
  init_conv(weight, bias, spatial_dims == 1 ? "Conv1d" : "Conv2d", spatial_dims, in, out, k, groups, false, with_bias);
}

Conv1d::Conv1d(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t padding, bool with_bias, int64_t dilation,
               int64_t groups)
    : Conv2d(1, in, out, k, stride, padding, with_bias, dilation, groups) {}

Tensor Conv2d::operator()(const Tensor& x) const {
  check_conv_input(x, weight, false);
  return x.conv2d(weight, bias, static_cast<int>(stride), static_cast<int>(padding), static_cast<int>(dilation),
                  static_cast<int>(groups));
}

void Conv2d::collect(StateDict& out, const std::string& prefix) const {
  add_state(out, prefix, "weight", weight);
  add_state(out, prefix, "bias", bias);
}

ConvTranspose2d::ConvTranspose2d(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t padding,
                                 int64_t output_padding, bool with_bias, int64_t dilation, int64_t groups)
    : ConvTranspose2d(2, in, out, k, stride, padding, output_padding, with_bias, dilation, groups) {}

ConvTranspose2d::ConvTranspose2d(size_t spatial_dims, int64_t in, int64_t out, int64_t k, int64_t stride,
                                 int64_t padding, int64_t output_padding, bool with_bias, int64_t dilation,
                                 int64_t groups)
    : weight(Tensor::zeros({1})), stride(stride), padding(padding), output_padding(output_padding),
      dilation(dilation), groups(groups) {
  init_conv(weight, bias, spatial_dims == 1 ? "ConvTranspose1d" : "ConvTranspose2d", spatial_dims, in, out, k, groups,
            true, with_bias);
}

ConvTranspose1d::ConvTranspose1d(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t padding,
                                 int64_t output_padding, bool with_bias, int64_t dilation, int64_t groups)
    : ConvTranspose2d(1, in, out, k, stride, padding, output_padding, with_bias, dilation, groups) {}

Tensor ConvTranspose2d::operator()(const Tensor& x) const {
  check_conv_input(x, weight, true);
  return x.conv_transpose2d(weight, bias, static_cast<int>(stride), static_cast<int>(padding),
                            static_cast<int>(dilation), static_cast<int>(groups), static_cast<int>(output_padding));
}

void ConvTranspose2d::collect(StateDict& out, const std::string& prefix) const {
  add_state(out, prefix, "weight", weight);
  add_state(out, prefix, "bias", bias);
}

// ---- normalization

BatchNorm::BatchNorm(int64_t features, double eps, double momentum, bool affine, bool track_running_stats)
    : weight(Tensor::ones({features}).contiguous().realize()),
      bias(Tensor::zeros({features}).contiguous().realize()),
      running_mean(Tensor::zeros({features}).contiguous().realize()),
      running_var(Tensor::ones({features}).contiguous().realize()),
      num_batches_tracked(Tensor::zeros({1}, dtypes::int64).contiguous().realize()),  // as tinygrad's
      eps(eps),
      momentum(momentum),
      track_running_stats(track_running_stats) {
  if (affine) {
    weight.requires_grad_();
    bias.requires_grad_();
  }
  // statistics, not parameters: the Python package's backward (every live tensor) leaves them out,
  // as tinygrad's requires_grad=False does
  for (Tensor* stat : {&running_mean, &running_var}) TensorRegistry::impl_of(*stat)->never_needs_grad = true;
}

Tensor BatchNorm::operator()(const Tensor& x) const {
  check_rank(x, 2, "BatchNorm", "(N, C, ...)");
  const int64_t c = running_mean.shape()[0];
  if (x.shape()[1] != c)
    throw_error("BatchNorm: expected ", c, " channels on axis 1, got shape ", shape_to_string(x.shape()));
  if (track_running_stats && !Tensor::training)
    return x.batchnorm(weight, bias, running_mean, (running_var + eps).rsqrt());
  std::vector<int> axes{0};
  for (int i = 2; i < x.ndim(); i++) axes.push_back(i);
  Shape stat_shape(static_cast<size_t>(x.ndim()), 1);
  stat_shape[1] = c;
  Tensor mean = x.mean(axes);
  Tensor centered = x - mean.detach().reshape(stat_shape);  // d var / d mean is 0
  Tensor var = (centered * centered).mean(axes);
  if (track_running_stats) {
    // running statistics: handles share them, so assigning through a const layer is the update
    Tensor rm = running_mean, rv = running_var, nb = num_batches_tracked;
    double n = static_cast<double>(x.numel() / c);
    // (the statistics keep their dtype whatever the input's)
    rm.assign(((1 - momentum) * running_mean + momentum * mean.detach()).cast(rm.dtype()));
    rv.assign(((1 - momentum) * running_var + momentum * n / std::max(1.0, n - 1) * var.detach()).cast(rv.dtype()));
    nb.assign(num_batches_tracked + 1);
  }
  Tensor invstd = (var + eps).rsqrt();
  Tensor y = x.batchnorm(weight, bias, mean, invstd);
  return Tensor::no_grad ? y : with_batch_statistics_gradient(y, x, weight, bias, mean, invstd, axes, stat_shape);
}

void BatchNorm::collect(StateDict& out, const std::string& prefix) const {
  add_state(out, prefix, "weight", weight);
  add_state(out, prefix, "bias", bias);
  if (track_running_stats) {  // unused otherwise, and absent from PyTorch's state dict then
    add_state(out, prefix, "running_mean", running_mean);
    add_state(out, prefix, "running_var", running_var);
  }
  add_state(out, prefix, "num_batches_tracked", num_batches_tracked);
}

LayerNorm::LayerNorm(int64_t features, double eps, bool affine) : LayerNorm(Shape{features}, eps, affine) {}

LayerNorm::LayerNorm(Shape shape, double eps, bool affine) : normalized_shape(std::move(shape)), eps(eps) {
  if (affine) {
    weight = param(Tensor::ones(normalized_shape).contiguous().realize());
    bias = param(Tensor::zeros(normalized_shape).contiguous().realize());
  }
}

Tensor LayerNorm::operator()(const Tensor& x) const {
  const size_t n = normalized_shape.size();
  if (x.shape().size() < n || !std::equal(normalized_shape.begin(), normalized_shape.end(), x.shape().end() - static_cast<int64_t>(n)))
    throw_error("LayerNorm: expected inputs ending in ", shape_to_string(normalized_shape), ", got ",
                shape_to_string(x.shape()));
  std::vector<int> axes;
  for (size_t i = 0; i < n; i++) axes.push_back(-1 - static_cast<int>(i));
  Tensor y = x.layernorm(axes, eps);
  if (weight) y = y * *weight + *bias;
  return y;
}

void LayerNorm::collect(StateDict& out, const std::string& prefix) const {
  add_state(out, prefix, "weight", weight);
  add_state(out, prefix, "bias", bias);
}

GroupNorm::GroupNorm(int64_t groups, int64_t channels, double eps, bool affine)
    : num_groups(groups), num_channels(channels), eps(eps) {
  if (groups < 1 || channels % groups != 0)
    throw_error("GroupNorm: ", channels, " channels are not divisible into ", groups, " groups");
  if (affine) {
    weight = param(Tensor::ones({channels}).contiguous().realize());
    bias = param(Tensor::zeros({channels}).contiguous().realize());
  }
}

Tensor GroupNorm::operator()(const Tensor& x) const {
  check_rank(x, 2, "GroupNorm", "(N, C, ...)");
  if (x.shape()[1] != num_channels)
    throw_error("GroupNorm: expected ", num_channels, " channels on axis 1, got shape ", shape_to_string(x.shape()));
  Tensor y = x.reshape({x.shape()[0], num_groups, -1}).layernorm({-1}, eps).reshape(x.shape());
  if (!weight) return y;
  Shape s(static_cast<size_t>(x.ndim()), 1);
  s[1] = num_channels;
  return y * weight->reshape(s) + bias->reshape(s);
}

void GroupNorm::collect(StateDict& out, const std::string& prefix) const {
  add_state(out, prefix, "weight", weight);
  add_state(out, prefix, "bias", bias);
}

Tensor LayerNorm2d::operator()(const Tensor& x) const {
  if (x.ndim() != 4)
    throw_error("LayerNorm2d: expected an input of layout (N, C, H, W), got shape ", shape_to_string(x.shape()));
  return LayerNorm::operator()(x.permute({0, 2, 3, 1})).permute({0, 3, 1, 2});
}

RMSNorm::RMSNorm(int64_t dim, double eps, bool affine) : eps(eps) {
  if (affine) weight = param(Tensor::ones({dim}).contiguous().realize());
}

Tensor RMSNorm::operator()(const Tensor& x) const {
  Tensor y = x * ((x * x).mean({-1}, true) + eps).rsqrt();
  return weight ? y * *weight : y;
}

void RMSNorm::collect(StateDict& out, const std::string& prefix) const { add_state(out, prefix, "weight", weight); }

// ---- LSTMCell

LSTMCell::LSTMCell(int64_t input_size, int64_t hidden_size, bool bias)
    : weight_ih(bounded_uniform({4 * hidden_size, input_size}, static_cast<double>(hidden_size))),
      weight_hh(bounded_uniform({4 * hidden_size, hidden_size}, static_cast<double>(hidden_size))) {
  if (bias) {
    bias_ih = param(Tensor::zeros({4 * hidden_size}).contiguous().realize());
    bias_hh = param(Tensor::zeros({4 * hidden_size}).contiguous().realize());
  }
}

LSTMCell::State LSTMCell::operator()(const Tensor& x, const std::optional<State>& hc) const {
  const int64_t input_size = weight_ih.shape()[1], hidden_size = weight_hh.shape()[1];
  if (x.ndim() != 2 || x.shape()[1] != input_size)
    throw_error("LSTMCell: expected an input of shape (N, ", input_size, "), got ", shape_to_string(x.shape()));
  const Shape state_shape{x.shape()[0], hidden_size};
  if (hc && (hc->first.shape() != state_shape || hc->second.shape() != state_shape))
    throw_error("LSTMCell: expected h and c of shape ", shape_to_string(state_shape), ", got ",
                shape_to_string(hc->first.shape()), " and ", shape_to_string(hc->second.shape()));
  const Tensor zeros = Tensor::zeros(state_shape, x.dtype());
  const Tensor& h = hc ? hc->first : zeros;
  const Tensor& c = hc ? hc->second : zeros;
  std::vector<Tensor> gates = (x.linear(weight_ih, bias_ih) + h.linear(weight_hh, bias_hh)).chunk(4, 1);
  Tensor next_c = gates[1].sigmoid() * c + gates[0].sigmoid() * gates[2].tanh();
  Tensor next_h = gates[3].sigmoid() * next_c.tanh();
  return {next_h.contiguous(), next_c.contiguous()};
}

void LSTMCell::collect(StateDict& out, const std::string& prefix) const {
  add_state(out, prefix, "weight_ih", weight_ih);
  add_state(out, prefix, "weight_hh", weight_hh);
  add_state(out, prefix, "bias_ih", bias_ih);
  add_state(out, prefix, "bias_hh", bias_hh);
}

// ---- Embedding

Embedding::Embedding(int64_t vocab, int64_t d)
    : vocab_size(vocab), dim(d), weight(param(Tensor::glorot_uniform({vocab, d}))) {}

Tensor Embedding::operator()(const Tensor& idx) const {
  Shape out = idx.shape();
  out.push_back(dim);
  // one-hot rows times the table: (n, vocab) @ (vocab, dim)
  Tensor flat = idx.reshape({-1});
  return flat.one_hot(vocab_size).cast(weight.dtype()).matmul(weight).reshape(out);
}

void Embedding::collect(StateDict& out, const std::string& prefix) const { add_state(out, prefix, "weight", weight); }

// ---- state dicts

std::vector<Tensor> parameters_of(const StateDict& state) {
  std::vector<Tensor> out;
  for (const auto& [name, t] : state)
    if (t.requires_grad()) out.push_back(t);
  return out;
}

namespace {
// Equal shapes, or tinygrad's one exception: a scalar for a one-element vector or back (PyTorch
// saves BatchNorm's num_batches_tracked as a scalar; kiln and tinygrad hold it as (1,)).
bool loadable_shape(const Shape& model, const Shape& given) {
  return model == given || (model.size() + given.size() == 1 && kiln::prod(model) == 1 && kiln::prod(given) == 1);
}
}  // namespace

void load_state_dict_into(const StateDict& model_state, const StateDict& state, bool strict, bool cast) {
  std::string missing, unexpected, mismatched, mistyped;
  for (const auto& [name, t] : model_state) {
    auto it = state.find(name);
    if (it == state.end()) {
      missing += (missing.empty() ? "" : ", ") + name;
    } else if (!loadable_shape(t.shape(), it->second.shape())) {
      mismatched += std::string(mismatched.empty() ? "" : " ") + "Shape mismatch in layer `" + name +
                    "`: Expected shape " + shape_to_string(t.shape()) + ", but found " +
                    shape_to_string(it->second.shape()) + " in state dict.";
    } else if (!cast && it->second.dtype() != t.dtype()) {
      mistyped += (mistyped.empty() ? "" : ", ") + name + " (model " + t.dtype().name() + ", given " +
                  it->second.dtype().name() + ")";
    }
  }
  for (const auto& [name, t] : state)
    if (!model_state.count(name)) unexpected += (unexpected.empty() ? "" : ", ") + name;
  std::string problems;
  auto report = [&](const std::string& what, const std::string& keys) {
    if (!keys.empty()) problems += (problems.empty() ? "" : "; ") + what + keys;
  };
  if (strict) report("missing keys: ", missing);
  if (strict) report("unexpected keys: ", unexpected);
  report("", mismatched);
  report("keys of another dtype: ", mistyped.empty() ? "" : mistyped + " (load with cast to convert them)");
  // mis-shaped tensors are a ValueError, as tinygrad's
  if (!mismatched.empty()) throw_value_error("load_state_dict: ", problems);
  if (!problems.empty()) throw_error("load_state_dict: ", problems);
  std::vector<Tensor> updated;
  for (const auto& [name, t] : model_state) {
    auto it = state.find(name);
    if (it == state.end()) continue;
    Tensor target = t;
    target.assign(it->second.cast(t.dtype()).reshape(t.shape()).contiguous());
    updated.push_back(target);
  }
  Tensor::realize(updated);
}

}  // namespace kiln::nn
