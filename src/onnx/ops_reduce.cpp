// Reductions: ReduceX over axes (an attribute, or since opset 13/18 an input), ArgMax/ArgMin, CumSum.
#include <algorithm>

#include "onnx/op.h"

namespace kiln::onnx {

namespace {

// The axes to reduce: an attribute until `input_since`, then the optional input 1. Empty means all
// axes, or no reduction at all with noop_with_empty_axes.
std::optional<std::vector<int>> reduce_axes(const Node& n, int input_since) {
  std::vector<int64_t> axes = n.ints("axes");
  if (n.opset() >= input_since) axes = n.opt(1) ? n.ints_of(1) : std::vector<int64_t>{};
  if (axes.empty() && n.i("noop_with_empty_axes", 0)) return std::nullopt;
  std::vector<int> out;
  int64_t ndim = n.in(0).ndim();
  for (auto a : axes) out.push_back(axis_of(n, a, ndim));
  if (out.empty())
    for (int d = 0; d < ndim; d++) out.push_back(d);
  return out;
}

// A reduction as a function of (x, axes, keepdim); the result keeps x's dtype, as ONNX's do.
using ReduceFn = Tensor (*)(const Tensor&, const std::vector<int>&, bool);
OpFn reduce(ReduceFn f, int input_since = 18) {
  return [f, input_since](const Node& n) {
    const Tensor& x = n.in(0);
    auto axes = reduce_axes(n, input_since);
    if (!axes) return std::vector<Tensor>{x};
    Tensor r = f(x, *axes, n.i("keepdims", 1) != 0);
    return std::vector<Tensor>{r.dtype() == x.dtype() ? r : r.cast(x.dtype())};
  };
}

Tensor log_sum_exp(const Tensor& x, const std::vector<int>& axes, bool keep) {
  Tensor m = x.max(axes, true);
  m = m.isinf().where(m.zeros_like(), m);  // all -inf (or +inf) stays finite in the shift
  Tensor r = (x - m).exp().sum(axes, true).log() + m;
  if (keep) return r;
  std::vector<int> sorted = axes;
  std::sort(sorted.rbegin(), sorted.rend());
  for (int a : sorted) r = r.squeeze(a);
  return r;
}

std::vector<Tensor> arg_reduce(const Node& n, bool is_max) {
  const Tensor& x = n.in(0);
  int axis = axis_of(n, n.i("axis", 0), x.ndim());
  bool keep = n.i("keepdims", 1) != 0, last = n.i("select_last_index", 0) != 0;
  Tensor src = last ? x.flip({axis}) : x;
  Tensor idx = (is_max ? src.argmax(axis, keep) : src.argmin(axis, keep)).cast(dtypes::int64);
  if (last) idx = idx.const_like(static_cast<double>(x.shape()[axis] - 1)) - idx;
  return {idx};
}

std::vector<Tensor> cumsum(const Node& n) {
  Tensor x = n.in(0);
  auto axis_values = n.ints_of(1);
  if (axis_values.size() != 1) n.fail("axis must be one value");
  int axis = axis_of(n, axis_values[0], x.ndim());
  bool reverse = n.i("reverse", 0) != 0;
  if (reverse) x = x.flip({axis});
  Tensor r = x.cumsum(axis);
  if (r.dtype() != x.dtype()) r = r.cast(x.dtype());
  if (n.i("exclusive", 0)) r = r - x;
  return {reverse ? r.flip({axis}) : r};
}

}  // namespace

OpTable reduce_ops() {
  return {
      {"ReduceSum", reduce([](const Tensor& x, const std::vector<int>& a, bool k) { return x.sum(a, k); }, 13)},
      {"ReduceMean", reduce([](const Tensor& x, const std::vector<int>& a, bool k) { return x.mean(a, k); })},
      {"ReduceMax", reduce([](const Tensor& x, const std::vector<int>& a, bool k) { return x.max(a, k); })},
      {"ReduceMin", reduce([](const Tensor& x, const std::vector<int>& a, bool k) { return x.min(a, k); })},
      {"ReduceProd", reduce([](const Tensor& x, const std::vector<int>& a, bool k) { return x.prod(a, k); })},
      {"ReduceL1", reduce([](const Tensor& x, const std::vector<int>& a, bool k) { return x.abs().sum(a, k); })},
      {"ReduceL2",
       reduce([](const Tensor& x, const std::vector<int>& a, bool k) { return (x * x).sum(a, k).sqrt(); })},
      {"ReduceSumSquare", reduce([](const Tensor& x, const std::vector<int>& a, bool k) { return (x * x).sum(a, k); })},
      {"ReduceLogSum", reduce([](const Tensor& x, const std::vector<int>& a, bool k) { return x.sum(a, k).log(); })},
      {"ReduceLogSumExp", reduce(log_sum_exp)},
      {"ArgMax", [](const Node& n) { return arg_reduce(n, true); }},
      {"ArgMin", [](const Node& n) { return arg_reduce(n, false); }},
      {"CumSum", cumsum},
  };
}

}  // namespace kiln::onnx
