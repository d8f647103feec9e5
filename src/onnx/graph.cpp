// Running a graph node by node over a scope of named values, subgraphs included, and the load-time
// check of every node against the op table.
#include "onnx/graph.h"

#include "onnx/op.h"
#include "onnx/tensor_proto.h"

namespace kiln::onnx {

namespace {

bool default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

// Each node is checked against the opset of its domain (errors name that version).
void check_node(const ::onnx::NodeProto& node, const std::map<std::string, int>& opsets) {
  std::string domain = default_domain(node.domain()) ? "" : node.domain();
  auto it = opsets.find(domain);
  NodeAttrs attrs(node, it == opsets.end() ? 0 : it->second);
  if (!domain.empty()) attrs.fail("ops of domain '", domain, "' are not supported");
  const OpDef* def = find_op(node.op_type());
  if (!def) attrs.fail("this op is not supported");
  if (def->check) def->check(attrs);
}

}  // namespace

std::map<std::string, int> opset_imports(const ::onnx::ModelProto& model) {
  std::map<std::string, int> opsets;
  for (const auto& o : model.opset_import())
    opsets[default_domain(o.domain()) ? "" : o.domain()] = static_cast<int>(o.version());
  opsets.emplace("", 1);  // a model that imports no default-domain opset has none of its ops anyway
  return opsets;
}

const Tensor* Scope::find(const std::string& name) const {
  for (const Scope* s = this; s; s = s->outer_) {
    auto it = s->values_.find(name);
    if (it != s->values_.end()) return &it->second;
  }
  return nullptr;
}

void check_graph(const ::onnx::GraphProto& graph, const std::map<std::string, int>& opsets) {
  for (const auto& node : graph.node()) {
    check_node(node, opsets);
    for (const auto& a : node.attribute()) {
      if (a.has_g()) check_graph(a.g(), opsets);
      for (const auto& g : a.graphs()) check_graph(g, opsets);
    }
  }
}

std::vector<Tensor> run_graph(const ::onnx::GraphProto& graph, Scope& scope, int opset) {
  for (const auto& proto : graph.node()) {
    std::vector<std::optional<Tensor>> args;
    for (const auto& name : proto.input()) {
      if (name.empty()) {
        args.emplace_back();
        continue;
      }
      const Tensor* value = scope.find(name);
      if (!value) NodeAttrs(proto, opset).fail("input '", name, "' is not computed before it");
      args.emplace_back(*value);
    }
    Node node(proto, opset, std::move(args), &scope);
    std::vector<Tensor> outs;
    try {
      outs = find_op(proto.op_type())->run(node);
    } catch (const Error& e) {
      if (std::string_view(e.what()).starts_with("onnx node")) throw;
      node.fail(e.what());
    }
    for (int k = 0; k < proto.output_size(); k++) {
      if (proto.output(k).empty()) continue;
      if (k >= static_cast<int>(outs.size())) node.fail("output ", k, " is not supported");
      scope.set(proto.output(k), outs[k]);
    }
  }
  std::vector<Tensor> outputs;
  for (const auto& v : graph.output()) {
    const Tensor* value = scope.find(v.name());
    if (!value) throw_error("onnx: graph output '", v.name(), "' is not computed");
    outputs.push_back(*value);
  }
  return outputs;
}

std::vector<Tensor> Node::run_subgraph(std::string_view attr, const std::vector<Tensor>& inputs) const {
  const ::onnx::GraphProto* body = graph(attr);
  if (!body) fail("attribute ", attr, " (a graph) is required");
  if (body->input_size() != static_cast<int>(inputs.size()))
    fail("subgraph ", attr, " takes ", body->input_size(), " inputs, given ", inputs.size());
  Scope inner(*scope_);
  for (const auto& init : body->initializer()) inner.set(init.name(), tensor_from_proto(init, scope_->folder()));
  for (size_t k = 0; k < inputs.size(); k++) inner.set(body->input(static_cast<int>(k)).name(), inputs[k]);
  return run_graph(*body, inner, opset());
}

}  // namespace kiln::onnx
