#pragma once
// The op table: each ONNX op is a function from one node's attributes and input tensors (and the
// model's opset) to its output tensors. Op families live in ops_*.cpp, each exporting its table.
#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h

#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/error.h"
#include "kiln/tensor.h"

namespace kiln::onnx {

class Scope;

// One node's attributes with the defaults the operator docs state, and where errors point.
class NodeAttrs {
 public:
  NodeAttrs(const ::onnx::NodeProto& proto, int opset) : proto_(proto), opset_(opset) {}
  int opset() const { return opset_; }
  const ::onnx::NodeProto& proto() const { return proto_; }
  bool has(std::string_view name) const { return find(name) != nullptr; }
  int64_t i(std::string_view name, int64_t def) const;
  double f(std::string_view name, double def) const;
  std::string s(std::string_view name, std::string def) const;
  std::vector<int64_t> ints(std::string_view name, std::vector<int64_t> def = {}) const;
  std::vector<float> floats(std::string_view name, std::vector<float> def = {}) const;
  std::vector<std::string> strings(std::string_view name, std::vector<std::string> def = {}) const;
  const ::onnx::TensorProto* tensor(std::string_view name) const;
  const ::onnx::GraphProto* graph(std::string_view name) const;
  // Inputs named in the node (an empty name is an omitted optional input).
  int num_inputs() const { return proto_.input_size(); }
  bool input_given(int k) const { return k < proto_.input_size() && !proto_.input(k).empty(); }
  int num_outputs() const { return proto_.output_size(); }
  bool output_wanted(int k) const { return k < proto_.output_size() && !proto_.output(k).empty(); }

  // Throws kiln::Error naming the node, its op and the opset, then the parts.
  template <class... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    std::ostringstream os;
    ((os << parts), ...);
    throw_error(where(), ": ", os.str());
  }
  std::string where() const;

 private:
  const ::onnx::AttributeProto* find(std::string_view name) const;
  const ::onnx::NodeProto& proto_;
  int opset_;
};

// A node at run time: its attributes, its input tensors and the scope it runs in.
class Node : public NodeAttrs {
 public:
  Node(const ::onnx::NodeProto& proto, int opset, std::vector<std::optional<Tensor>> inputs, const Scope* scope)
      : NodeAttrs(proto, opset), inputs_(std::move(inputs)), scope_(scope) {}
  const Tensor& in(int k) const;                  // a required input
  std::optional<Tensor> opt(int k) const;         // an optional input, nullopt when omitted
  int count() const { return static_cast<int>(inputs_.size()); }
  const std::vector<std::optional<Tensor>>& all() const { return inputs_; }
  // The values of a shape-like input (realized if needed: shapes must be concrete ints).
  std::vector<int64_t> ints_of(int k) const;
  double scalar_of(int k) const;
  // Runs the graph attribute `attr` on `inputs` (bound to its inputs in order) in a scope nested in
  // this node's, so it also sees the enclosing graphs' values; returns its outputs.
  std::vector<Tensor> run_subgraph(std::string_view attr, const std::vector<Tensor>& inputs) const;

 private:
  std::vector<std::optional<Tensor>> inputs_;
  const Scope* scope_;
};

using OpFn = std::function<std::vector<Tensor>(const Node&)>;
// A load-time check of attribute values the op does not support; throws with node.fail(...).
using CheckFn = void (*)(const NodeAttrs&);

struct OpDef {
  std::string_view name;
  OpFn run;
  CheckFn check = nullptr;
};
using OpTable = std::vector<OpDef>;

OpTable elementwise_ops();
OpTable reduce_ops();
OpTable shape_ops();
OpTable index_ops();
OpTable conv_ops();
OpTable nn_ops();
OpTable loss_ops();
OpTable resize_ops();
OpTable control_ops();
OpTable rnn_ops();

// The op named `op_type` in the default domain, or null.
const OpDef* find_op(std::string_view op_type);

// ---- helpers shared by the op families
// An axis attribute/value normalized against `ndim` (negative counts from the end), checked.
int axis_of(const NodeAttrs& node, int64_t axis, int64_t ndim);
// Fails at load time unless attribute `name` is one of `allowed` (its default `def` when absent).
void check_string(const NodeAttrs& node, std::string_view name, std::string_view def,
                  std::initializer_list<std::string_view> allowed);

}  // namespace kiln::onnx
