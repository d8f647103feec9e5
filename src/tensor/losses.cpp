// Loss functions (mean over the batch), built on log_softmax and one-hot masks.
#include "kiln/error.h"
#include "tensor/tensor_impl.h"

namespace kiln {
namespace {

void check_smoothing(double s) {
  if (s < 0 || s > 1) throw_error("label_smoothing must be in [0, 1], got ", s);
}

// labels == arange(classes) along a new last axis, as the logits' dtype
Tensor one_hot_like(const Tensor& labels, const Tensor& logits, int64_t classes) {
  if (labels.dtype().is_float() || labels.dtype().is_bool())
    throw_error("class labels must be integers, got ", labels.dtype().name());
  return labels.one_hot(classes).cast(logits.dtype());
}

}  // namespace

Tensor Tensor::sparse_categorical_crossentropy(const Tensor& labels, int64_t ignore_index, double label_smoothing) const {
  check_smoothing(label_smoothing);
  if (ndim() < 1) throw_error("sparse_categorical_crossentropy: expected logits (..., classes), got a scalar");
  Shape batch(shape().begin(), shape().end() - 1);
  if (labels.shape() != batch)
    throw_error("sparse_categorical_crossentropy: logits ", shape_to_string(shape()), " need labels of shape ",
                shape_to_string(batch), ", got ", shape_to_string(labels.shape()));
  Tensor log_probs = log_softmax(-1);
  Tensor mask = (ignore_index == -1 ? labels.ones_like().cast(dtypes::bool_) : labels.ne(static_cast<int32_t>(ignore_index)))
                    .cast(log_probs.dtype());
  Tensor y = one_hot_like(labels, log_probs, shape().back()) * mask.unsqueeze(-1);
  Tensor smoothing = label_smoothing * (log_probs.mean({-1}) * mask);
  Tensor per_item = (1 - label_smoothing) * (log_probs * y).sum({-1}) + smoothing;
  return -(per_item.sum() / mask.sum());
}

Tensor Tensor::cross_entropy(const Tensor& target, double label_smoothing) const {
  check_smoothing(label_smoothing);
  const int classes_axis = ndim() == 1 ? 0 : 1;
  Tensor y = target;
  if (target.shape() != shape()) {
    Shape without = shape();
    without.erase(without.begin() + classes_axis);
    if (target.shape() != without)
      throw_error("cross_entropy: input ", shape_to_string(shape()), " needs a target of the same shape (probabilities) or ",
                  shape_to_string(without), " (class indices), got ", shape_to_string(target.shape()));
    y = one_hot_like(target, *this, shape()[classes_axis]);  // classes last: move them to axis 1
    if (ndim() > 2) {
      std::vector<int> order{0, static_cast<int>(ndim()) - 1};
      for (int i = 1; i + 1 < ndim(); i++) order.push_back(i);
      y = y.permute(order);
    }
  }
  y = (1 - label_smoothing) * y.cast(dtype()) + label_smoothing / static_cast<double>(shape()[classes_axis]);
  return (-(log_softmax(classes_axis) * y).sum({classes_axis})).mean();
}

Tensor Tensor::nll_loss(const Tensor& target, int64_t ignore_index) const {
  if (ndim() < 1 || target.ndim() + 1 != ndim())
    throw_error("nll_loss: input ", shape_to_string(shape()), " needs a target with one dim less, got ",
                shape_to_string(target.shape()));
  const int classes_axis = ndim() == 1 ? 0 : 1;
  Tensor weight = target.ne(static_cast<int32_t>(ignore_index)).cast(dtype());
  Tensor picked = ndim() == 1 ? (one_hot_like(target.unsqueeze(0), *this, shape()[0]).squeeze(0) * *this).sum()
                              : gather(classes_axis, target.unsqueeze(classes_axis)).squeeze(classes_axis);
  return -(picked * weight).sum() / weight.sum();
}

Tensor Tensor::binary_crossentropy(const Tensor& target) const {
  Tensor y = target.cast(dtype());
  return (-y * log() - (1.0 - y) * (1.0 - *this).log()).mean();
}

Tensor Tensor::binary_crossentropy_logits(const Tensor& target) const {
  Tensor y = target.cast(dtype());
  return (relu() - y * *this + (1.0 + (-abs()).exp()).log()).mean();
}

}  // namespace kiln
