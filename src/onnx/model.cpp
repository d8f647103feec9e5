// kiln::onnx::Model: parse a ModelProto, check every node against the op table at load time, and
// run the graph as one lazy kiln graph that is realized once, at the end.
#include <algorithm>
#include <fstream>

#include "kiln/onnx.h"
#include "onnx/op.h"
#include "onnx/tensor_proto.h"

namespace kiln::onnx {

struct Model::Impl {
  ::onnx::ModelProto proto;
  int opset = 1;  // of the default domain
  std::vector<ValueInfo> inputs, outputs;
  std::map<std::string, Tensor> initializers;
};

namespace {

ValueInfo value_info(const ::onnx::ValueInfoProto& v) {
  ValueInfo info{v.name(), dtypes::void_, {}};
  if (!v.type().has_tensor_type()) return info;
  const auto& tt = v.type().tensor_type();
  if (auto dt = dtype_from_onnx(tt.elem_type())) info.dtype = *dt;
  for (const auto& d : tt.shape().dim())
    info.shape.push_back(d.has_dim_value() ? std::to_string(d.dim_value()) : d.dim_param());
  return info;
}

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

// Graph inputs and outputs must be tensors (sequences, maps and optionals are not supported).
void check_tensor_value(const ::onnx::ValueInfoProto& v, const char* what) {
  if (!v.type().has_tensor_type())
    throw_error("onnx: graph ", what, " '", v.name(),
                "' is not a tensor (sequences, maps and optionals are not supported)");
  if (!dtype_from_onnx(v.type().tensor_type().elem_type()))
    throw_error("onnx: graph ", what, " '", v.name(), "' has element type ",
                onnx_type_name(v.type().tensor_type().elem_type()), ", which is not supported");
}

}  // namespace

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::~Model() = default;
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;

Model Model::load(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  std::ifstream file(path, std::ios::binary);
  if (!file) throw_error("onnx: cannot open ", path);
  if (!impl->proto.ParseFromIstream(&file)) throw_error("onnx: ", path, " is not an ONNX model (ModelProto)");
  std::map<std::string, int> opsets;
  for (const auto& o : impl->proto.opset_import())
    opsets[default_domain(o.domain()) ? "" : o.domain()] = static_cast<int>(o.version());
  opsets.emplace("", 1);  // a model that imports no default-domain opset has none of its ops anyway
  impl->opset = opsets[""];
  auto slash = path.find_last_of('/');
  std::string folder = slash == std::string::npos ? "." : path.substr(0, slash);
  const auto& graph = impl->proto.graph();
  for (const auto& node : graph.node()) check_node(node, opsets);
  for (const auto& init : graph.initializer()) impl->initializers.emplace(init.name(), tensor_from_proto(init, folder));
  for (const auto& v : graph.input())
    if (!impl->initializers.count(v.name())) {
      check_tensor_value(v, "input");
      impl->inputs.push_back(value_info(v));
    }
  for (const auto& v : graph.output()) {
    check_tensor_value(v, "output");
    impl->outputs.push_back(value_info(v));
  }
  return Model(std::move(impl));
}

const std::vector<ValueInfo>& Model::inputs() const { return impl_->inputs; }
const std::vector<ValueInfo>& Model::outputs() const { return impl_->outputs; }

std::map<std::string, Tensor> Model::run(const std::map<std::string, Tensor>& inputs) {
  std::map<std::string, Tensor> values = impl_->initializers;
  for (const auto& [name, t] : inputs) {
    auto it = std::find_if(impl_->inputs.begin(), impl_->inputs.end(), [&](auto& v) { return v.name == name; });
    if (it == impl_->inputs.end() && !values.count(name))
      throw_error("onnx: the model has no input named '", name, "'");
    if (it != impl_->inputs.end() && it->dtype != dtypes::void_ && it->dtype != t.dtype())
      throw_error("onnx: input '", name, "' must be ", it->dtype.name(), ", got ", t.dtype().name());
    values.insert_or_assign(name, t);
  }
  for (const auto& v : impl_->inputs)
    if (!values.count(v.name)) throw_error("onnx: input '", v.name, "' is missing");

  for (const auto& proto : impl_->proto.graph().node()) {
    std::vector<std::optional<Tensor>> args;
    for (const auto& name : proto.input()) {
      if (name.empty()) { args.emplace_back(); continue; }
      auto it = values.find(name);
      if (it == values.end()) NodeAttrs(proto, impl_->opset).fail("input '", name, "' is not computed before it");
      args.emplace_back(it->second);
    }
    Node node(proto, impl_->opset, std::move(args));
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
      values.insert_or_assign(proto.output(k), outs[k]);
    }
  }

  std::map<std::string, Tensor> result;
  std::vector<Tensor> to_realize;
  for (const auto& v : impl_->outputs) {
    auto it = values.find(v.name);
    if (it == values.end()) throw_error("onnx: graph output '", v.name, "' is not computed");
    result.emplace(v.name, it->second.contiguous());
    to_realize.push_back(result.at(v.name));
  }
  Tensor::realize(to_realize);
  return result;
}

}  // namespace kiln::onnx
