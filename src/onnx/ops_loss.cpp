// Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (which is NLL over LogSoftmax).
#include "onnx/op.h"

namespace kiln::onnx {

namespace {

// -log_prob[n, target, d...] weighted per class; targets equal to ignore_index weigh 0, and "mean"
// divides by the total weight of the targets that count (PyTorch's rule).
Tensor nll(const Node& n, const Tensor& log_prob, const Tensor& target, const std::optional<Tensor>& weight) {
  Tensor t = target.cast(dtypes::int64);
  Tensor counts = n.has("ignore_index") ? t.ne(n.i("ignore_index", 0)) : t.eq(t);
  Tensor safe = counts.where(t, t.zeros_like());  // an ignored target may be out of range
  Tensor picked = log_prob.gather(1, safe.unsqueeze(1)).squeeze(1);
  Tensor w = weight ? weight->index_select(0, safe.reshape({-1})).reshape(safe.shape()) : picked.ones_like();
  w = counts.where(w, w.zeros_like());
  Tensor loss = -picked * w;
  std::string reduction = n.s("reduction", "mean");
  if (reduction == "none") return loss;
  if (reduction == "sum") return loss.sum();
  return loss.sum() / w.sum();
}
void check_reduction(const NodeAttrs& n) { check_string(n, "reduction", "mean", {"none", "sum", "mean"}); }

std::vector<Tensor> nll_loss(const Node& n) { return {nll(n, n.in(0), n.in(1), n.opt(2))}; }

std::vector<Tensor> softmax_cross_entropy(const Node& n) {
  Tensor log_prob = n.in(0).log_softmax(1);
  return {nll(n, log_prob, n.in(1), n.opt(2)), log_prob};
}

}  // namespace

OpTable loss_ops() {
  return {
      {"NegativeLogLikelihoodLoss", nll_loss, check_reduction},
      {"SoftmaxCrossEntropyLoss", softmax_cross_entropy, check_reduction},
  };
}

}  // namespace kiln::onnx
