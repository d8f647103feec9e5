// Statistics and normalization: variance, batch and layer norm, dropout, attention.
#include <cmath>

#include "kiln/error.h"
#include "tensor/tensor_impl.h"

namespace kiln {

Tensor Tensor::var(std::vector<int> axes, bool keepdim, double correction) const {
  axes = reduce_axes(*this, axes, "var");
  Tensor x = dtype().is_float() ? *this : cast(dtypes::default_float);
  Tensor squares = (x - x.mean(axes, true)).square();
  Tensor sum = squares.sum(axes, keepdim);
  int64_t n = sum.numel() == 0 ? 0 : numel() / sum.numel();
  return sum / std::max(0.0, static_cast<double>(n) - correction);
}

Tensor Tensor::std(std::vector<int> axes, bool keepdim, double correction) const {
  return var(reduce_axes(*this, axes, "std"), keepdim, correction).sqrt();
}

std::pair<Tensor, Tensor> Tensor::var_mean(std::vector<int> axes, bool keepdim, double correction) const {
  return {var(axes, keepdim, correction), mean(axes, keepdim)};
}
std::pair<Tensor, Tensor> Tensor::std_mean(std::vector<int> axes, bool keepdim, double correction) const {
  return {std(axes, keepdim, correction), mean(axes, keepdim)};
}

Tensor Tensor::normalize(double p, int dim, double eps) const {
  int d = normalize_axis(dim, "normalize");
  // p = 0 counts the nonzero elements (tinygrad's and PyTorch's "norm")
  Tensor norm = p == 0 ? ne(0).sum({d}, true) : abs().pow(p).sum({d}, true).pow(1 / p);
  return *this / norm.maximum(eps);
}

Tensor Tensor::batchnorm(const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, const Tensor& mean,
                         const Tensor& invstd, std::vector<int> axes) const {
  // statistics of shape (C,) broadcast along `axes` of this
  Shape s(static_cast<size_t>(ndim()), 1);
  for (int a : axes) {
    int axis = normalize_axis(a, "batchnorm");
    s[axis] = shape()[axis];
  }
  auto shaped = [&](const Tensor& t, const char* what) {
    if (t.numel() != kiln::prod(s))
      throw_error("batchnorm: ", what, " has shape ", shape_to_string(t.shape()), ", expected ", kiln::prod(s),
                  " elements for input ", shape_to_string(shape()));
    return t.reshape(s);
  };
  Tensor x = *this - shaped(mean, "mean");
  if (weight) x = x * shaped(*weight, "weight");
  x = x * shaped(invstd, "invstd");
  return bias ? x + shaped(*bias, "bias") : x;
}

Tensor Tensor::layernorm(std::vector<int> axes, double eps) const {
  axes = reduce_axes(*this, axes, "layernorm");
  Tensor y = *this - mean(axes, true);
  return y * ((y * y).mean(axes, true) + eps).rsqrt();
}

Tensor Tensor::dropout(double p) const {
  if (p < 0 || p > 1) throw_error("dropout: p must be in [0, 1], got ", p);
  if (!training || p == 0) return *this;
  if (p == 1) return zeros_like();
  Tensor keep = rand(shape()).ge(p);
  return keep.where(*this, const_like(0)) * (1.0 / (1.0 - p));
}

Tensor Tensor::scaled_dot_product_attention(const Tensor& key, const Tensor& value, std::optional<Tensor> attn_mask,
                                            bool is_causal) const {
  if (ndim() < 2) throw_error("scaled_dot_product_attention: query needs at least 2 dims, got ", shape_to_string(shape()));
  Tensor qk = matmul(key.transpose(-2, -1)) / std::sqrt(static_cast<double>(shape().back()));
  if (is_causal) {
    if (attn_mask) throw_error("scaled_dot_product_attention: give attn_mask or is_causal, not both");
    attn_mask = Tensor::ones(qk.shape(), dtypes::bool_).tril();
  }
  if (attn_mask) qk = attn_mask->dtype().is_bool() ? attn_mask->where(qk, -INFINITY) : qk + *attn_mask;
  return qk.softmax(-1).matmul(value);
}

}  // namespace kiln
