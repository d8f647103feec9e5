// Control flow: If, Loop and Scan, whose bodies are graph attributes run as subgraphs (they see the
// values of the graphs around them). Conditions and trip counts are realized to decide what runs.
#include <algorithm>

#include "onnx/op.h"

namespace kiln::onnx {

namespace {

// x[..., at, ...] along `axis`, that axis removed.
Tensor take(const Tensor& x, int axis, int64_t at) {
  std::vector<std::pair<int64_t, int64_t>> bounds;
  for (int d = 0; d < x.ndim(); d++) bounds.emplace_back(d == axis ? at : 0, d == axis ? at + 1 : x.shape()[d]);
  return x.shrink(bounds).squeeze(axis);
}

bool truth_of(const Node& n, const Tensor& cond) {
  if (cond.numel() != 1) n.fail("a condition must be one value, got shape ", shape_to_string(cond.shape()));
  return cond.cast(dtypes::float64).reshape({1}).to_vector<double>()[0] != 0;
}

// Stacks one scan output's per-iteration values along `axis` of the result (ONNX counts a negative
// axis from the end of the result's rank).
Tensor stack_scan(const Node& n, const std::vector<Tensor>& steps, int64_t axis, bool reverse) {
  if (steps.empty()) n.fail("a scan output of zero iterations (its shape is unknown) is not supported");
  std::vector<Tensor> ordered(steps);
  if (reverse) std::reverse(ordered.begin(), ordered.end());
  return Tensor::stack(ordered, axis_of(n, axis, steps[0].ndim() + 1));
}

std::vector<Tensor> if_op(const Node& n) {
  return n.run_subgraph(truth_of(n, n.in(0)) ? "then_branch" : "else_branch", {});
}
void check_if(const NodeAttrs& n) {
  if (!n.graph("then_branch") || !n.graph("else_branch"))
    n.fail("graph attributes then_branch and else_branch are required");
}

// Loop: inputs (max trip count M, condition, N loop-carried values); the body maps (iteration,
// condition, N values) to (condition, N values, K scan outputs). The carried values are realized after
// every iteration so that the lazy graph does not grow with the trip count.
std::vector<Tensor> loop(const Node& n) {
  const ::onnx::GraphProto& body = *n.graph("body");
  std::optional<int64_t> trips;
  if (n.opt(0)) {
    std::vector<int64_t> m = n.ints_of(0);
    if (m.size() != 1) n.fail("the trip count must be one value, got ", m.size());
    trips = m[0];
  }
  bool cond = n.opt(1) ? truth_of(n, *n.opt(1)) : true;
  std::vector<Tensor> carried;
  for (int k = 2; k < n.count(); k++) carried.push_back(n.in(k));
  const size_t num_carried = carried.size();
  if (body.output_size() < static_cast<int>(1 + num_carried))
    n.fail("the body has ", body.output_size(), " outputs, expected at least ", 1 + num_carried);
  std::vector<std::vector<Tensor>> scans(body.output_size() - 1 - num_carried);
  for (int64_t i = 0; cond && (!trips || i < *trips); i++) {
    std::vector<Tensor> args{Tensor::full({}, i, dtypes::int64), Tensor::full({}, 1.0, dtypes::bool_)};
    args.insert(args.end(), carried.begin(), carried.end());
    std::vector<Tensor> outs = n.run_subgraph("body", args);
    carried.assign(outs.begin() + 1, outs.begin() + 1 + static_cast<std::ptrdiff_t>(num_carried));
    for (size_t k = 0; k < scans.size(); k++) scans[k].push_back(outs[1 + num_carried + k]);
    Tensor::realize(carried);
    cond = truth_of(n, outs[0]);
  }
  for (auto& steps : scans) carried.push_back(stack_scan(n, steps, 0, false));
  return carried;
}
void check_loop(const NodeAttrs& n) {
  if (!n.graph("body")) n.fail("graph attribute body is required");
}

// Scan (opset 9+): N state values, then M scan inputs iterated along their scan axes; the body maps
// (N states, M slices) to (N states, K slices of the scan outputs).
std::vector<Tensor> scan_over(const Node& n, std::vector<Tensor> states, const std::vector<Tensor>& xs,
                              const std::vector<int64_t>& in_axes, const std::vector<int64_t>& in_dirs,
                              const std::vector<int64_t>& out_axes, const std::vector<int64_t>& out_dirs) {
  const ::onnx::GraphProto& body = *n.graph("body");
  const size_t num_states = states.size();
  if (body.output_size() < static_cast<int>(num_states))
    n.fail("the body has ", body.output_size(), " outputs, expected at least ", num_states);
  std::vector<int> axes;
  int64_t length = -1;
  for (size_t k = 0; k < xs.size(); k++) {
    axes.push_back(axis_of(n, k < in_axes.size() ? in_axes[k] : 0, xs[k].ndim()));
    int64_t len = xs[k].shape()[axes[k]];
    if (length >= 0 && len != length) n.fail("scan inputs have different lengths ", length, " and ", len);
    length = len;
  }
  std::vector<std::vector<Tensor>> scans(body.output_size() - num_states);
  for (int64_t t = 0; t < length; t++) {
    std::vector<Tensor> args = states;
    for (size_t k = 0; k < xs.size(); k++) {
      args.push_back(take(xs[k], axes[k], k < in_dirs.size() && in_dirs[k] ? length - 1 - t : t));
    }
    std::vector<Tensor> outs = n.run_subgraph("body", args);
    states.assign(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(num_states));
    for (size_t k = 0; k < scans.size(); k++) scans[k].push_back(outs[num_states + k]);
  }
  for (size_t k = 0; k < scans.size(); k++) {
    bool reverse = k < out_dirs.size() && out_dirs[k];
    states.push_back(stack_scan(n, scans[k], k < out_axes.size() ? out_axes[k] : 0, reverse));
  }
  return states;
}

std::vector<Tensor> scan(const Node& n) {
  const int64_t num_scan = n.i("num_scan_inputs", 0);
  if (n.opset() >= 9) {
    const int64_t num_states = n.count() - num_scan;
    if (num_scan < 1 || num_states < 0) n.fail("num_scan_inputs=", num_scan, " does not fit ", n.count(), " inputs");
    std::vector<Tensor> states, xs;
    for (int k = 0; k < n.count(); k++) (k < num_states ? states : xs).push_back(n.in(k));
    return scan_over(n, states, xs, n.ints("scan_input_axes"), n.ints("scan_input_directions"),
                     n.ints("scan_output_axes"), n.ints("scan_output_directions"));
  }
  // Opset 8: input 0 is sequence_lens (only full lengths are supported), every value has a batch axis
  // 0 and the scan axis is 1: each batch element is scanned on its own.
  const int64_t num_states = n.count() - 1 - num_scan;
  if (num_scan < 1 || num_states < 0) n.fail("num_scan_inputs=", num_scan, " does not fit ", n.count(), " inputs");
  if (n.opt(0)) n.fail("sequence_lens is not supported");
  const int64_t batch = n.in(1).ndim() ? n.in(1).shape()[0] : 0;
  if (batch < 1) n.fail("input 1 must have a batch axis of at least one element");
  for (int k = 1; k < n.count(); k++)
    if (n.in(k).ndim() < 1 || n.in(k).shape()[0] != batch) n.fail("input ", k, " does not have the batch size ", batch);
  std::vector<std::vector<Tensor>> per_batch;
  for (int64_t b = 0; b < batch; b++) {
    std::vector<Tensor> states, xs;
    for (int k = 1; k < n.count(); k++) (k <= num_states ? states : xs).push_back(take(n.in(k), 0, b));
    per_batch.push_back(scan_over(n, states, xs, {}, n.ints("directions"), {}, {}));
  }
  std::vector<Tensor> outs;
  for (size_t k = 0; k < per_batch[0].size(); k++) {
    std::vector<Tensor> parts;
    for (auto& p : per_batch) parts.push_back(p[k]);
    outs.push_back(Tensor::stack(parts, 0));
  }
  return outs;
}
void check_scan(const NodeAttrs& n) {
  if (!n.graph("body")) n.fail("graph attribute body is required");
  if (!n.has("num_scan_inputs")) n.fail("attribute num_scan_inputs is required");
}

}  // namespace

OpTable control_ops() {
  return {
      {"If", if_op, check_if},
      {"Loop", loop, check_loop},
      {"Scan", scan, check_scan},
  };
}

}  // namespace kiln::onnx
