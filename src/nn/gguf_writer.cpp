// Writing GGUF v3: header, metadata, tensor infos, then each tensor's bytes at an aligned offset.
#include <set>

#include "kiln/error.h"
#include "kiln/nn/gguf.h"
#include "kiln/nn/gguf_json.h"
#include "support/atomic_file.h"
#include "tensor/tensor_impl.h"

namespace kiln::nn::state {
namespace {

using Sink = std::function<void(const void*, size_t)>;

constexpr uint32_t kVersion = 3;
constexpr uint64_t kDefaultAlignment = 32;
constexpr size_t kMaxDims = 4;  // GGML_MAX_DIMS
constexpr GGMLType kPlainTypes[] = {GGMLType::F32, GGMLType::F16, GGMLType::BF16, GGMLType::F64,
                                    GGMLType::I8,  GGMLType::I16, GGMLType::I32,  GGMLType::I64};

template <class T>
void put(const Sink& sink, T v) {
  sink(&v, sizeof(T));
}

void put_string(const Sink& sink, const std::string& s) {
  put<uint64_t>(sink, s.size());
  sink(s.data(), s.size());
}

// The value without its kind (an array's elements are written so).
void put_value(const Sink& sink, const GGUFValue& value) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          put_string(sink, v);
        } else if constexpr (std::is_same_v<T, GGUFArray>) {
          put<uint32_t>(sink, uint32_t(v.type));
          put<uint64_t>(sink, v.values.size());
          for (const GGUFValue& e : v.values) put_value(sink, e);
        } else if constexpr (std::is_same_v<T, bool>) {
          put<uint8_t>(sink, v ? 1 : 0);
        } else {
          put<T>(sink, v);
        }
      },
      value.variant());
}

// Arrays built by hand (not by GGUFValue::array) might mix kinds, which the file cannot say.
void check_array_kinds(const std::string& key, const GGUFValue& value) {
  if (value.type() != GGUFValueType::ARRAY) return;
  const GGUFArray& array = value.as_array();
  for (const GGUFValue& e : array.values) {
    if (e.type() != array.type)
      throw_error("metadata \"", key, "\": an array of ", gguf_type_name(array.type), " holds a ",
                  gguf_type_name(e.type()));
    check_array_kinds(key, e);
  }
}

uint64_t alignment_of(const GGUFMetadata& metadata) {
  for (const auto& [key, value] : metadata) {
    if (key != "general.alignment") continue;
    if (value.type() != GGUFValueType::UINT32)
      throw_error("general.alignment: expected a uint32, got a ", gguf_type_name(value.type()));
    if (!std::has_single_bit(value.as<uint32_t>()))
      throw_error("general.alignment: expected a power of two, got ", value.as<uint32_t>());
    return value.as<uint32_t>();
  }
  return kDefaultAlignment;
}

uint64_t align_up(uint64_t n, uint64_t alignment) { return (n + alignment - 1) / alignment * alignment; }

void put_padding(const Sink& sink, uint64_t from, uint64_t to) {
  static constexpr uint8_t kZeros[256] = {};
  for (uint64_t n = to - from; n > 0;) {
    const size_t chunk = std::min<uint64_t>(n, sizeof kZeros);
    sink(kZeros, chunk);
    n -= chunk;
  }
}

GGMLType plain_type_of(DType dtype) {
  for (GGMLType t : kPlainTypes)
    if (ggml_traits(t).dtype == dtype) return t;
  throw_error("GGUF has no tensor type for ", dtype.name());
}

std::vector<uint8_t> bytes_of(const Tensor& t) {
  std::vector<uint8_t> bytes(static_cast<size_t>(t.nbytes()));
  tensor_to_bytes(t, bytes.data(), bytes.size());
  return bytes;
}

}  // namespace

GGUFWriter::GGUFWriter(GGUFMetadata metadata) : metadata_(std::move(metadata)) {
  std::set<std::string> keys;
  for (const auto& [key, value] : metadata_) {
    if (!keys.insert(key).second) throw_error("GGUFWriter: metadata key \"", key, "\" appears twice");
    check_array_kinds(key, value);
  }
  alignment_of(metadata_);
}

void GGUFWriter::add(const std::string& name, const Tensor& t, GGMLType type) {
  const GGMLTypeTraits& traits = ggml_traits(type);
  std::function<std::vector<uint8_t>()> bytes;
  if (!traits.quantized()) {
    bytes = [t, dtype = traits.dtype] { return bytes_of(t.cast(dtype)); };
  } else if (type == GGMLType::Q8_0 || type == GGMLType::Q4_0) {
    bytes = [t, type] { return quantize(type, t.cast(dtypes::float32).to_vector<float>()); };
  } else {
    throw_error("GGUFWriter: tensor \"", name, "\": kiln quantizes to Q8_0 and Q4_0, not ", traits.name,
                "; add a QuantizedTensor of its blocks instead");
  }
  tensors_.push_back({info_for(name, type, t.shape()), std::move(bytes)});
}

void GGUFWriter::add(const std::string& name, const QuantizedTensor& q) {
  GGUFTensorInfo info = info_for(name, q.type, q.shape);
  if (static_cast<uint64_t>(q.blocks.nbytes()) != info.nbytes)
    throw_error("GGUFWriter: tensor \"", name, "\": ", kiln::prod(q.shape), " values of ", ggml_traits(q.type).name,
                " take ", info.nbytes, " bytes; its blocks have ", q.blocks.nbytes());
  tensors_.push_back({std::move(info), [blocks = q.blocks] { return bytes_of(blocks); }});
}

GGUFTensorInfo GGUFWriter::info_for(const std::string& name, GGMLType type, const Shape& shape) const {
  for (const Entry& e : tensors_)
    if (e.info.name == name) throw_error("GGUFWriter: tensor \"", name, "\" is added twice");
  if (shape.size() > kMaxDims)
    throw_error("GGUFWriter: tensor \"", name, "\" has ", shape.size(), " dimensions; GGUF allows at most ", kMaxDims);
  const GGMLTypeTraits& traits = ggml_traits(type);
  const int64_t row = shape.empty() ? 1 : shape.back();
  if (row % traits.block_size != 0)
    throw_error("GGUFWriter: tensor \"", name, "\" of shape ", shape_to_string(shape), ": ", traits.name,
                " needs rows (the last dimension) of a multiple of ", traits.block_size, " values");
  return GGUFTensorInfo{name, type, shape, 0, ggml_nbytes(type, kiln::prod(shape))};
}

void GGUFWriter::write(const Sink& sink) const {
  const uint64_t alignment = alignment_of(metadata_);
  uint64_t written = 0;
  const Sink counted = [&](const void* data, size_t n) {
    sink(data, n);
    written += n;
  };
  counted("GGUF", 4);
  put<uint32_t>(counted, kVersion);
  put<uint64_t>(counted, tensors_.size());
  put<uint64_t>(counted, metadata_.size());
  for (const auto& [key, value] : metadata_) {
    put_string(counted, key);
    put<uint32_t>(counted, uint32_t(value.type()));
    put_value(counted, value);
  }
  uint64_t offset = 0;
  for (const Entry& e : tensors_) {
    put_string(counted, e.info.name);
    put<uint32_t>(counted, uint32_t(e.info.shape.size()));
    for (auto d = e.info.shape.rbegin(); d != e.info.shape.rend(); ++d) put<uint64_t>(counted, uint64_t(*d));
    put<uint32_t>(counted, uint32_t(e.info.type));
    put<uint64_t>(counted, offset);
    offset = align_up(offset + e.info.nbytes, alignment);
  }
  const uint64_t data_start = align_up(written, alignment);
  put_padding(counted, written, data_start);
  for (const Entry& e : tensors_) {
    const std::vector<uint8_t> bytes = e.bytes();
    if (bytes.size() != e.info.nbytes)
      throw_error("GGUFWriter: tensor \"", e.info.name, "\" gave ", bytes.size(), " bytes; expected ", e.info.nbytes);
    counted(bytes.data(), bytes.size());
    put_padding(counted, written, data_start + align_up(written - data_start, alignment));
  }
}

std::vector<uint8_t> GGUFWriter::to_bytes() const {
  std::vector<uint8_t> out;
  write([&](const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    out.insert(out.end(), p, p + n);
  });
  return out;
}

void GGUFWriter::save(const std::string& path) const {
  try {
    AtomicFile file(path);
    write([&](const void* data, size_t n) { file.write(data, n); });
    file.commit();
  } catch (const Error& e) {
    throw_error("gguf_save: ", path, ": ", e.what());
  }
}

void gguf_save(const std::string& path, const nlohmann::json& metadata, const std::map<std::string, Tensor>& tensors,
               const std::string& quant) {
  try {
    std::optional<GGMLType> q;
    if (!quant.empty()) {
      q = ggml_type_named(quant);
      if (*q != GGMLType::Q8_0 && *q != GGMLType::Q4_0)
        throw_error("quant must be \"\", \"Q8_0\" or \"Q4_0\", got \"", quant, "\"");
    }
    GGUFWriter writer(gguf_metadata_from_json(metadata));
    for (const auto& [name, t] : tensors) {
      const bool quantize = q && t.ndim() == 2 && t.shape()[1] % ggml_traits(*q).block_size == 0;
      writer.add(name, t, quantize ? *q : plain_type_of(t.dtype()));
    }
    writer.save(path);
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.rfind("gguf_save: ", 0) == 0) throw;
    throw_error("gguf_save: ", path, ": ", what);
  }
}

}  // namespace kiln::nn::state
