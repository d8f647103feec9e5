// kiln::onnx::Model: parse a ModelProto, check every node against the op table at load time, and
// run the graph as one lazy kiln graph that is realized once, at the end.
#include <algorithm>
#include <climits>
#include <fstream>
#include <iterator>

#include "kiln/onnx.h"
#include "onnx/graph.h"
#include "onnx/op.h"
#include "onnx/tensor_proto.h"

namespace kiln::onnx {

struct Model::Impl {
  ::onnx::ModelProto proto;
  int opset = 1;  // of the default domain
  std::vector<ValueInfo> inputs, outputs;
  std::map<std::string, Tensor> initializers;
  std::string folder;  // of the model file: external data is read relative to it
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
  std::ifstream file(path, std::ios::binary);
  if (!file) throw_error("onnx: cannot open ", path);
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  auto slash = path.find_last_of('/');
  return load_bytes(bytes, slash == std::string::npos ? "." : path.substr(0, slash));
}

Model Model::load_bytes(std::string_view bytes, const std::string& folder) {
  auto impl = std::make_unique<Impl>();
  if (bytes.size() > INT_MAX || !impl->proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw_error("onnx: the file is not an ONNX model (ModelProto) of at most 2 GiB");
  auto opsets = opset_imports(impl->proto);
  impl->opset = opsets[""];
  impl->folder = folder;
  const auto& graph = impl->proto.graph();
  check_graph(graph, opsets);
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
    auto it = std::find_if(impl_->inputs.begin(), impl_->inputs.end(), [&n = name](auto& v) { return v.name == n; });
    if (it == impl_->inputs.end() && !values.count(name))
      throw_error("onnx: the model has no input named '", name, "'");
    if (it != impl_->inputs.end() && it->dtype != dtypes::void_ && it->dtype != t.dtype())
      throw_error("onnx: input '", name, "' must be ", it->dtype.name(), ", got ", t.dtype().name());
    values.insert_or_assign(name, t);
  }
  Scope scope(impl_->folder);
  for (const auto& [name, t] : values) scope.set(name, t);
  for (const auto& v : impl_->inputs)
    if (!scope.find(v.name)) throw_error("onnx: input '", v.name, "' is missing");
  std::vector<Tensor> outs = run_graph(impl_->proto.graph(), scope, impl_->opset);

  std::map<std::string, Tensor> result;
  std::vector<Tensor> to_realize;
  for (size_t k = 0; k < outs.size(); k++) {
    result.insert_or_assign(impl_->outputs[k].name, outs[k].contiguous());
    to_realize.push_back(result.at(impl_->outputs[k].name));
  }
  Tensor::realize(to_realize);
  return result;
}

}  // namespace kiln::onnx
