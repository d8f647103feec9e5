#pragma once
// Running an ONNX graph: its nodes in order over a scope of named values. A subgraph (the body of
// If, Loop, Scan) runs in a scope of its own whose lookups fall back to the enclosing graph's.
#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h

#include <map>
#include <string>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::onnx {

class Scope {
 public:
  // The model's top-level scope: external data of initializers is read relative to `folder`.
  explicit Scope(std::string folder) : folder_(std::move(folder)) {}
  explicit Scope(const Scope& outer) : outer_(&outer), folder_(outer.folder_) {}
  const Tensor* find(const std::string& name) const;
  void set(const std::string& name, Tensor value) { values_.insert_or_assign(name, std::move(value)); }
  const std::string& folder() const { return folder_; }

 private:
  const Scope* outer_ = nullptr;
  std::string folder_;
  std::map<std::string, Tensor> values_;
};

// Runs every node of `graph` in `scope` (which holds its inputs) and returns its outputs, in order.
std::vector<Tensor> run_graph(const ::onnx::GraphProto& graph, Scope& scope, int opset);
// The opset each domain imports ("" for the default domain, ai.onnx).
std::map<std::string, int> opset_imports(const ::onnx::ModelProto& model);
// Load-time check of every node of `graph` and of its subgraphs against the op table, each at the
// opset its domain imports.
void check_graph(const ::onnx::GraphProto& graph, const std::map<std::string, int>& opsets);

}  // namespace kiln::onnx
