// Loss functions, built on log_softmax and one-hot masks, with tinygrad's (and PyTorch's) reductions.
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

Tensor apply_reduction(const Tensor& per_item, Reduction reduction) {
  switch (reduction) {
    case Reduction::none: return per_item;
    case Reduction::sum: return per_item.sum();
    case Reduction::mean: break;
  }
  return per_item.mean();
}

}  // namespace

Tensor Tensor::sparse_categorical_crossentropy(const Tensor& labels, int64_t ignore_index, double label_smoothing,
                                               Reduction reduction) const {
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
  Tensor per_item = -((1 - label_smoothing) * (log_probs * y).sum({-1}) + smoothing);
  // the mean is over the labels that count, not the batch
  return reduction == Reduction::mean ? per_item.sum() / mask.sum() : apply_reduction(per_item, reduction);
}

Tensor Tensor::cross_entropy(const Tensor& target, double label_smoothing, Reduction reduction) const {
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
  return apply_reduction(-(log_softmax(classes_axis) * y).sum({classes_axis}), reduction);
}

Tensor Tensor::nll_loss(const Tensor& target, int64_t ignore_index, Reduction reduction,
                        std::optional<Tensor> weight) const {
  if (ndim() < 1 || target.ndim() + 1 != ndim())
    throw_error("nll_loss: input ", shape_to_string(shape()), " needs a target with one dim less, got ",
                shape_to_string(target.shape()));
  const int classes_axis = ndim() == 1 ? 0 : 1;
  const int64_t classes = shape()[classes_axis];
  if (weight && weight->shape() != Shape{classes})
    throw_error("nll_loss: expected a weight per class, shape (", classes, "), got ", shape_to_string(weight->shape()));
  Tensor keep = target.ne(static_cast<int32_t>(ignore_index));
  Tensor safe_target = keep.where(target, target.zeros_like());  // ignored labels read class 0, weighted 0
  Tensor item_weight = keep.cast(dtype());
  if (weight) item_weight = item_weight * (one_hot_like(safe_target, *this, classes) * weight->cast(dtype())).sum({-1});
  Tensor picked = ndim() == 1 ? (one_hot_like(safe_target.unsqueeze(0), *this, classes).squeeze(0) * *this).sum()
                              : gather(classes_axis, safe_target.unsqueeze(classes_axis)).squeeze(classes_axis);
  Tensor per_item = -picked * item_weight;
  // the mean is weighted: PyTorch's and tinygrad's sum(w * loss) / sum(w)
  return reduction == Reduction::mean ? per_item.sum() / item_weight.sum() : apply_reduction(per_item, reduction);
}

Tensor Tensor::binary_crossentropy(const Tensor& target, Reduction reduction) const {
  Tensor y = target.cast(dtype());
  return apply_reduction(-y * log() - (1.0 - y) * (1.0 - *this).log(), reduction);
}

Tensor Tensor::binary_crossentropy_logits(const Tensor& target, Reduction reduction,
                                          std::optional<Tensor> pos_weight) const {
  Tensor y = target.cast(dtype());
  // log(sigmoid(x)) = -(relu(-x) + log(1 + exp(-|x|))), stable for large |x|
  Tensor log_p = -((-*this).relu() + (1.0 + (-abs()).exp()).log());
  Tensor positive = pos_weight ? pos_weight->cast(dtype()) * y : y;
  return apply_reduction(-(positive * log_p + (1.0 - y) * (log_p - *this)), reduction);
}

}  // namespace kiln
