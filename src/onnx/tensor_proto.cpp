// TensorProto decoding: raw_data (little-endian bytes), the typed repeated fields, or an external
// file. Kiln's buffers are host byte order, which the supported hosts share with ONNX (little-endian).
#include "onnx/tensor_proto.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>

#include "kiln/error.h"
#include "tensor/tensor_impl.h"

namespace kiln::onnx {

namespace {
using TP = ::onnx::TensorProto;

// An external_data value that must be a byte count or offset.
int64_t external_number(const TP& proto, const std::string& key, const std::string& value) {
  int64_t n = -1;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || end != value.data() + value.size() || n < 0)
    throw_error("onnx tensor '", proto.name(), "': external data ", key, " '", value, "' is not a byte count");
  return n;
}

// The location must name a file inside the model's folder: a relative path without "..".
void check_location(const TP& proto, const std::string& location) {
  if (location.empty()) throw_error("onnx tensor '", proto.name(), "': external data without a location");
  bool escapes = location[0] == '/';
  for (size_t begin = 0; begin <= location.size();) {
    size_t end = std::min(location.find('/', begin), location.size());
    escapes |= location.compare(begin, end - begin, "..") == 0;
    begin = end + 1;
  }
  if (escapes)
    throw_error("onnx tensor '", proto.name(), "': external data location '", location,
                "' is not a relative path inside the model's folder");
}

std::vector<char> read_external(const TP& proto, const std::string& folder, size_t nbytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : proto.external_data()) {
    if (kv.key() == "location") location = kv.value();
    if (kv.key() == "offset") offset = external_number(proto, kv.key(), kv.value());
    if (kv.key() == "length") length = external_number(proto, kv.key(), kv.value());
  }
  check_location(proto, location);
  std::string path = folder.empty() ? location : folder + "/" + location;
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) throw_error("onnx tensor '", proto.name(), "': cannot open external data file ", path);
  if (length >= 0 && static_cast<size_t>(length) != nbytes)
    throw_error("onnx tensor '", proto.name(), "': external data holds ", length, " bytes, expected ", nbytes);
  // checked before reading, so that a wrong size is an error rather than a huge allocation
  const auto file_size = static_cast<int64_t>(file.tellg());
  if (file_size < 0 || offset > file_size || nbytes > static_cast<size_t>(file_size - offset))
    throw_error("onnx tensor '", proto.name(), "': external data file ", path, " is shorter than offset ", offset,
                " + ", nbytes, " bytes");
  std::vector<char> bytes(nbytes);
  file.seekg(offset);
  file.read(bytes.data(), static_cast<std::streamsize>(nbytes));
  if (static_cast<size_t>(file.gcount()) != nbytes)
    throw_error("onnx tensor '", proto.name(), "': cannot read ", nbytes, " bytes from external data file ", path);
  return bytes;
}

// The byte size of `shape` in `dtype`, checked: no negative dim, and no overflow.
size_t checked_nbytes(const TP& proto, const Shape& shape, DType dtype) {
  int64_t n = dtype.itemsize();
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      throw_error("onnx tensor '", proto.name(), "': shape ", shape_to_string(shape), " is not a valid size");
  return static_cast<size_t>(n);
}

// The typed repeated field's values narrowed to kiln's element type T.
template <class T, class Field>
void copy_field(const Field& field, std::vector<char>& out) {
  out.resize(field.size() * sizeof(T));
  for (int i = 0; i < field.size(); i++) {
    T v = static_cast<T>(field.Get(i));
    std::memcpy(out.data() + i * sizeof(T), &v, sizeof(T));
  }
}
}  // namespace

std::optional<DType> dtype_from_onnx(int t) {
  switch (t) {
    case TP::FLOAT: return dtypes::float32;
    case TP::UINT8: return dtypes::uint8;
    case TP::INT8: return dtypes::int8;
    case TP::UINT16: return dtypes::uint16;
    case TP::INT16: return dtypes::int16;
    case TP::INT32: return dtypes::int32;
    case TP::INT64: return dtypes::int64;
    case TP::BOOL: return dtypes::bool_;
    case TP::FLOAT16: return dtypes::float16;
    case TP::DOUBLE: return dtypes::float64;
    case TP::UINT32: return dtypes::uint32;
    case TP::UINT64: return dtypes::uint64;
    case TP::BFLOAT16: return dtypes::bfloat16;
    // the float8 types of newer ONNX versions (FLOAT8E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ)
    case 17: return dtypes::fp8e4m3;
    case 18: return dtypes::fp8e4m3fnuz;
    case 19: return dtypes::fp8e5m2;
    case 20: return dtypes::fp8e5m2fnuz;
    default: return std::nullopt;
  }
}

std::string onnx_type_name(int t) {
  return TP::DataType_IsValid(t) ? TP::DataType_Name(static_cast<TP::DataType>(t)) : "type " + std::to_string(t);
}

Tensor tensor_from_proto(const TP& proto, const std::string& folder) {
  auto dtype = dtype_from_onnx(proto.data_type());
  if (!dtype)
    throw_error("onnx tensor '", proto.name(), "': element type ", onnx_type_name(proto.data_type()),
                " is not supported");
  Shape shape(proto.dims().begin(), proto.dims().end());
  size_t nbytes = checked_nbytes(proto, shape, *dtype);
  std::vector<char> bytes;
  if (proto.data_location() == TP::EXTERNAL) {
    bytes = read_external(proto, folder, nbytes);
  } else if (proto.has_raw_data()) {
    bytes.assign(proto.raw_data().begin(), proto.raw_data().end());
  } else {
    switch (dtype->scalar) {
      case ScalarType::Float32: copy_field<float>(proto.float_data(), bytes); break;
      case ScalarType::Float64: copy_field<double>(proto.double_data(), bytes); break;
      case ScalarType::Int64: copy_field<int64_t>(proto.int64_data(), bytes); break;
      case ScalarType::UInt32: copy_field<uint32_t>(proto.uint64_data(), bytes); break;
      case ScalarType::UInt64: copy_field<uint64_t>(proto.uint64_data(), bytes); break;
      case ScalarType::Int32: copy_field<int32_t>(proto.int32_data(), bytes); break;
      // 16-bit floats travel as their bit patterns in int32_data
      case ScalarType::Int16: case ScalarType::Float16: case ScalarType::BFloat16:
        copy_field<int16_t>(proto.int32_data(), bytes); break;
      case ScalarType::UInt16: copy_field<uint16_t>(proto.int32_data(), bytes); break;
      default: copy_field<uint8_t>(proto.int32_data(), bytes); break;  // 8-bit types and bool
    }
  }
  if (bytes.size() != nbytes)
    throw_error("onnx tensor '", proto.name(), "': holds ", bytes.size(), " bytes of data, its shape ",
                shape_to_string(shape), " of ", dtype->name(), " needs ", nbytes);
  return tensor_from_bytes(bytes.data(), bytes.size(), *dtype, shape);
}

TP read_tensor_proto(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  TP proto;
  if (!file || !proto.ParseFromIstream(&file)) throw_error("cannot read an onnx TensorProto from ", path);
  return proto;
}

}  // namespace kiln::onnx
