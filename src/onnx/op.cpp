// NodeAttrs / Node accessors and the op registry, which joins the op families' tables.
#include "onnx/op.h"

#include <unordered_map>

namespace kiln::onnx {

const ::onnx::AttributeProto* NodeAttrs::find(std::string_view name) const {
  for (const auto& a : proto_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

std::string NodeAttrs::where() const {
  std::string name = proto_.name().empty() ? (proto_.output_size() ? proto_.output(0) : "?") : proto_.name();
  return "onnx node '" + name + "' (op " + proto_.op_type() + ", opset " + std::to_string(opset_) + ")";
}

int64_t NodeAttrs::i(std::string_view name, int64_t def) const {
  const auto* a = find(name);
  return a ? a->i() : def;
}
double NodeAttrs::f(std::string_view name, double def) const {
  const auto* a = find(name);
  return a ? a->f() : def;
}
std::string NodeAttrs::s(std::string_view name, std::string def) const {
  const auto* a = find(name);
  return a ? a->s() : def;
}
std::vector<int64_t> NodeAttrs::ints(std::string_view name, std::vector<int64_t> def) const {
  const auto* a = find(name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : def;
}
std::vector<float> NodeAttrs::floats(std::string_view name, std::vector<float> def) const {
  const auto* a = find(name);
  return a ? std::vector<float>(a->floats().begin(), a->floats().end()) : def;
}
std::vector<std::string> NodeAttrs::strings(std::string_view name, std::vector<std::string> def) const {
  const auto* a = find(name);
  return a ? std::vector<std::string>(a->strings().begin(), a->strings().end()) : def;
}
const ::onnx::TensorProto* NodeAttrs::tensor(std::string_view name) const {
  const auto* a = find(name);
  return a && a->has_t() ? &a->t() : nullptr;
}

const ::onnx::GraphProto* NodeAttrs::graph(std::string_view name) const {
  const auto* a = find(name);
  return a && a->has_g() ? &a->g() : nullptr;
}

const Tensor& Node::in(int k) const {
  if (k >= count() || !inputs_[k]) fail("input ", k, " is required");
  return *inputs_[k];
}
std::optional<Tensor> Node::opt(int k) const { return k < count() ? inputs_[k] : std::nullopt; }

std::vector<int64_t> Node::ints_of(int k) const {
  const Tensor& t = in(k);
  if (!t.dtype().is_int()) fail("input ", k, " must be integers, got ", t.dtype().name());
  return t.cast(dtypes::int64).reshape({-1}).to_vector<int64_t>();
}
double Node::scalar_of(int k) const {
  const Tensor& t = in(k);
  if (t.numel() != 1) fail("input ", k, " must be one value, got shape ", shape_to_string(t.shape()));
  return t.cast(dtypes::float64).reshape({1}).to_vector<double>()[0];
}

int axis_of(const NodeAttrs& node, int64_t axis, int64_t ndim) {
  if (axis < -ndim || axis >= ndim) node.fail("axis ", axis, " is out of range for rank ", ndim);
  return static_cast<int>(axis < 0 ? axis + ndim : axis);
}

void check_string(const NodeAttrs& node, std::string_view name, std::string_view def,
                  std::initializer_list<std::string_view> allowed) {
  std::string v = node.s(name, std::string(def));
  for (auto a : allowed)
    if (v == a) return;
  node.fail("attribute ", name, "='", v, "' is not supported");
}

const OpDef* find_op(std::string_view op_type) {
  static const auto table = [] {
    std::unordered_map<std::string_view, OpDef> t;
    for (auto family : {elementwise_ops, reduce_ops, shape_ops, index_ops, conv_ops, nn_ops, loss_ops, resize_ops,
                        control_ops, rnn_ops})
      for (auto& def : family()) t.emplace(def.name, def);
    return t;
  }();
  auto it = table.find(op_type);
  return it == table.end() ? nullptr : &it->second;
}

}  // namespace kiln::onnx
