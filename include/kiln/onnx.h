#pragma once
// ONNX models on kiln: a model file's graph becomes one lazy kiln graph per run (src/onnx/, library
// kiln_onnx, which needs the ONNX project's protobuf classes).
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::onnx {

// A graph input or output: its element type and shape, each dim a number or a symbol's name.
struct ValueInfo {
  std::string name;
  DType dtype;
  std::vector<std::string> shape;
};

class Model {
 public:
  // Parses the file (external data relative to its folder) and checks every node: an op or an
  // attribute value kiln does not support is an error naming the node, the op and the opset.
  static Model load(const std::string& path);
  // The same for a model file's bytes held in memory; external data is read relative to `folder`.
  static Model load_bytes(std::string_view bytes, const std::string& folder);
  const std::vector<ValueInfo>& inputs() const;
  const std::vector<ValueInfo>& outputs() const;
  // Runs the graph on the inputs given by name (initializers need not be given); the outputs come back realized.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs);

  ~Model();
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;

 private:
  struct Impl;
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::onnx
