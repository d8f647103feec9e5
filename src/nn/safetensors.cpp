// The safetensors file: an 8-byte little-endian header length N, N bytes of JSON header (see
// safetensors_header.h), then the tensors' raw little-endian bytes, back to back.
#include <bit>
#include <cstring>

#include "kiln/error.h"
#include "kiln/nn/state.h"
#include "nn/safetensors_header.h"
#include "support/atomic_file.h"
#include "support/mapped_file.h"
#include "tensor/tensor_impl.h"

namespace kiln::nn::state {
namespace {

// Tensor bytes go between device buffers and the file as they are.
static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

constexpr size_t kLengthBytes = 8;
// The reference implementation's limit; a larger length is corruption, not a header.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct FileParts {
  std::string_view header;
  std::span<const uint8_t> data;
};

FileParts split_file(std::span<const uint8_t> file) {
  if (file.size() < kLengthBytes)
    throw_error("the file has ", file.size(), " bytes, too few for the ", kLengthBytes, "-byte header length");
  uint64_t length = 0;
  std::memcpy(&length, file.data(), kLengthBytes);
  uint64_t available = file.size() - kLengthBytes;
  if (length > kMaxHeaderBytes)
    throw_error("the header length is ", length, " bytes; at most ", kMaxHeaderBytes, " are allowed");
  if (length > available)
    throw_error("the header length is ", length, " bytes but only ", available, " follow it");
  auto header = file.subspan(kLengthBytes, length);
  return {{reinterpret_cast<const char*>(header.data()), header.size()}, file.subspan(kLengthBytes + length)};
}

// A BOOL element other than 0 or 1 is not a bool; kernels reading it would misbehave.
void check_bools(const TensorEntry& entry, std::span<const uint8_t> bytes) {
  for (size_t i = 0; i < bytes.size(); ++i)
    if (bytes[i] > 1)
      throw_error("BOOL tensor \"", entry.name, "\" has byte ", int(bytes[i]), " at element ", i,
                  "; expected 0 or 1");
}

StateDict load(const std::string& path) {
  MappedFile file(path);
  FileParts parts = split_file(file.bytes());
  SafetensorsHeader header = parse_header(parts.header, parts.data.size());
  StateDict tensors;
  for (const TensorEntry& entry : header.tensors) {
    // Straight from the mapping into the device buffer; parse_header checked the range.
    std::span<const uint8_t> bytes = parts.data.subspan(entry.begin, entry.end - entry.begin);
    if (entry.dtype == dtypes::bool_) check_bools(entry, bytes);
    tensors.emplace(entry.name, tensor_from_bytes(bytes.data(), bytes.size(), entry.dtype, entry.shape));
  }
  return tensors;
}

void save(const StateDict& tensors, const std::string& path, const std::map<std::string, std::string>& metadata) {
  SafetensorsHeader header{.tensors = {}, .metadata = metadata};
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    auto nbytes = static_cast<uint64_t>(tensor.nbytes());
    header.tensors.push_back({name, tensor.dtype(), tensor.shape(), offset, offset + nbytes});
    offset += nbytes;
  }
  std::string header_text = format_header(header);
  uint64_t length = header_text.size();

  AtomicFile file(path);
  file.write(&length, kLengthBytes);
  file.write(header_text.data(), header_text.size());
  std::vector<uint8_t> bytes;
  for (const auto& [name, tensor] : tensors) {
    bytes.resize(static_cast<size_t>(tensor.nbytes()));
    tensor_to_bytes(tensor, bytes.data(), bytes.size());
    file.write(bytes.data(), bytes.size());
  }
  file.commit();
}

}  // namespace

// Every error names the function and the file.
void safe_save(const StateDict& tensors, const std::string& path, const std::map<std::string, std::string>& metadata) {
  try {
    save(tensors, path, metadata);
  } catch (const Error& e) {
    throw_error("safe_save: ", path, ": ", e.what());
  }
}

void safe_save_check(const std::string& path) {
  try {
    AtomicFile probe(path);  // removed again uncommitted, leaving the path as it was
  } catch (const Error& e) {
    throw_error("safe_save: ", path, ": ", e.what());
  }
}

StateDict safe_load(const std::string& path) {
  try {
    return load(path);
  } catch (const Error& e) {
    throw_error("safe_load: ", path, ": ", e.what());
  }
}

std::map<std::string, std::string> safe_load_metadata(const std::string& path) {
  try {
    MappedFile file(path);
    FileParts parts = split_file(file.bytes());
    return parse_header(parts.header, parts.data.size()).metadata;
  } catch (const Error& e) {
    throw_error("safe_load_metadata: ", path, ": ", e.what());
  }
}

}  // namespace kiln::nn::state
