// Model::from_gguf: a llama.cpp GGUF file as a kiln::llm::Model. The file stays mapped; its tensors keep
// their stored type, quantized ones as lazy dequantizing graphs over their raw blocks, so each kernel
// that reads a weight decodes the blocks it needs instead of reading a float32 copy.
#include "kiln/llm.h"
#include "kiln/nn/gguf.h"
#include "llm/model_impl.h"

namespace kiln::llm {

Model Model::from_gguf(const std::string& path) {
  const nn::state::GGUFFile file = nn::state::gguf_open(path);
  Config config = config_from_gguf(file, path);
  // Every tensor the file has (each lazy tensor keeps the mapping alive), and the quantized ones' blocks;
  // the ones the model does not name (rope_freqs.weight, read into the config) are dropped with the maps.
  std::map<std::string, Tensor> tensors;
  std::map<std::string, nn::state::QuantizedTensor> blocks;
  for (const nn::state::GGUFTensorInfo& info : file.tensor_infos()) {
    tensors.emplace(info.name, file.lazy(info.name));
    if (nn::state::ggml_traits(info.type).quantized()) blocks.emplace(info.name, file.quantized(info.name));
  }
  Weights weights = weights_from_gguf(config, tensors, blocks, path);
  return Model(std::make_shared<Impl>(std::move(config), std::move(weights)));
}

}  // namespace kiln::llm
