// A loaded GGUF file: the parsed header over the mapped bytes, and tensors made from them: without a
// copy where the device computes on host memory, and never as float32.
#include "kiln/device.h"
#include "kiln/error.h"
#include "kiln/nn/gguf.h"
#include "support/mapped_file.h"
#include "tensor/tensor_impl.h"

namespace kiln::nn::state {
namespace {

// A tensor over `data` (elements of `dtype`): the mapped bytes themselves when the default device
// computes on host memory and they are aligned for the dtype (kiln never writes a tensor's input
// buffer, so a read-only mapping can back it; `owner` keeps it mapped), else a copy on the device.
Tensor tensor_over(std::span<const uint8_t> data, DType dtype, Shape shape, const std::shared_ptr<const void>& owner) {
  const bool aligned = reinterpret_cast<uintptr_t>(data.data()) % static_cast<uintptr_t>(dtype.itemsize()) == 0;
  if (data.empty() || !aligned || !runtime::get_device(runtime::default_device()).allocator().host_memory())
    return tensor_from_bytes(data.data(), data.size(), dtype, std::move(shape));
  return tensor_over_host_memory(const_cast<uint8_t*>(data.data()), dtype, std::move(shape), [owner] {});
}

}  // namespace

GGUFFile::GGUFFile(GGUFHeader header, std::shared_ptr<const void> owner, std::span<const uint8_t> file)
    : header_(std::move(header)), owner_(std::move(owner)), file_(file) {
  for (size_t i = 0; i < header_.tensors.size(); ++i) index_.emplace(header_.tensors[i].name, i);
}

const GGUFValue* GGUFFile::find(const std::string& key) const {
  for (const auto& [k, v] : header_.metadata)
    if (k == key) return &v;
  return nullptr;
}

const GGUFValue& GGUFFile::get(const std::string& key) const {
  if (const GGUFValue* v = find(key)) return *v;
  throw_error("GGUF: no metadata key \"", key, "\"");
}

const GGUFTensorInfo& GGUFFile::info(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) throw_error("GGUF: no tensor \"", name, "\" among its ", header_.tensors.size(), " tensors");
  return header_.tensors[it->second];
}

std::span<const uint8_t> GGUFFile::bytes(const std::string& name) const {
  const GGUFTensorInfo& t = info(name);
  return file_.subspan(header_.data_offset + t.offset, t.nbytes);  // gguf_parse checked the range
}

Tensor GGUFFile::tensor(const std::string& name) const {
  const GGUFTensorInfo& t = info(name);
  const GGMLTypeTraits& traits = ggml_traits(t.type);
  if (traits.quantized())
    throw_error("GGUF: tensor \"", name, "\" is stored as ", traits.name, " blocks; use quantized() for its bytes or "
                "dequantized() for floats");
  return tensor_over(bytes(name), traits.dtype, t.shape, owner_);
}

QuantizedTensor GGUFFile::quantized(const std::string& name) const {
  const GGUFTensorInfo& t = info(name);
  std::span<const uint8_t> data = bytes(name);
  return {t.type, t.shape, tensor_over(data, dtypes::uint8, {static_cast<int64_t>(data.size())}, owner_)};
}

std::vector<float> GGUFFile::dequantized(const std::string& name) const {
  const GGUFTensorInfo& t = info(name);
  return dequantize(t.type, bytes(name), kiln::prod(t.shape));
}

Tensor GGUFFile::lazy(const std::string& name) const {
  return ggml_traits(info(name).type).quantized() ? dequantize_lazy(quantized(name)) : tensor(name);
}

GGUFFile gguf_open(const std::string& path) {
  try {
    auto file = std::make_shared<const MappedFile>(path);
    return GGUFFile(gguf_parse(file->bytes()), file, file->bytes());
  } catch (const Error& e) {
    throw_error("gguf_open: ", path, ": ", e.what());
  }
}

}  // namespace kiln::nn::state
