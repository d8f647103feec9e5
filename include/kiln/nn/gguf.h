#pragma once
// GGUF files (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md), the format llama.cpp keeps
// language models in: typed metadata, then tensors stored as plain floats or ggml's quantized blocks.
// Reading maps the file and keeps every tensor in its stored form (no float32 copy); the quantized
// blocks stay raw bytes for kernels that dequantize as they multiply.
#include <concepts>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/tensor.h"

namespace kiln::nn::state {

// ---- ggml's tensor types

// The numbers are ggml's (enum ggml_type).
enum class GGMLType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q4_K = 12, Q5_K = 13, Q6_K = 14,
  I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, BF16 = 30,
};

struct GGMLTypeTraits {
  GGMLType type;
  const char* name;     // "Q4_K"
  int64_t block_size;   // elements per block (1 for plain types)
  int64_t block_bytes;  // bytes per block
  DType dtype;          // the kiln dtype of a plain type; dtypes::void_ for quantized blocks
  bool quantized() const { return dtype == dtypes::void_; }
};

// Throws kiln::Error for a type number kiln does not read.
const GGMLTypeTraits& ggml_traits(GGMLType type);
GGMLType ggml_type_named(const std::string& name);  // "Q8_0" -> Q8_0; kiln::Error listing the names
// Bytes of `numel` elements of `type`; kiln::Error unless `numel` is a whole number of blocks.
uint64_t ggml_nbytes(GGMLType type, int64_t numel);

// The `numel` float values that `bytes` (numel / block_size blocks of `type`) encode, computed as
// ggml's dequantize_row_* does, to the bit. Throws kiln::Error if the byte count does not match.
std::vector<float> dequantize(GGMLType type, std::span<const uint8_t> bytes, int64_t numel);
// Q8_0 and Q4_0 blocks for `values` (a whole number of 32-value blocks), rounding as ggml's
// quantize_row_q8_0_ref / quantize_row_q4_0_ref. Throws kiln::Error for other types and for values
// that are not finite.
std::vector<uint8_t> quantize(GGMLType type, std::span<const float> values);

// ---- metadata values

// The numbers are GGUF's (enum gguf_type), and also each kind's index in GGUFValue's variant.
enum class GGUFValueType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6, BOOL = 7, STRING = 8,
  ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};
const char* gguf_type_name(GGUFValueType type);  // "uint32", "array", ...

class GGUFValue;
// An array holds values of one kind, `type`, also when it is empty (arrays may nest).
struct GGUFArray {
  GGUFValueType type = GGUFValueType::UINT8;
  std::vector<GGUFValue> values;
  friend bool operator==(const GGUFArray&, const GGUFArray&) = default;
};

// One metadata value of any GGUF kind. The accessors throw kiln::Error naming the kind asked for and
// the kind held.
class GGUFValue {
 public:
  using Variant = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool, std::string,
                               GGUFArray, uint64_t, int64_t, double>;
  template <class T>
    requires(!std::same_as<std::decay_t<T>, GGUFValue> && std::constructible_from<Variant, T>)
  GGUFValue(T value) : value_(std::move(value)) {}  // NOLINT: implicit, so metadata reads like a literal
  GGUFValue(const char* text) : value_(std::string(text)) {}  // NOLINT
  // An array of `type`; kiln::Error if an element is of another kind.
  static GGUFValue array(GGUFValueType type, std::vector<GGUFValue> values);

  GGUFValueType type() const { return static_cast<GGUFValueType>(value_.index()); }
  template <class T>
  const T& as() const {  // the exact kind: as<uint32_t>(), as<std::string>(), as<GGUFArray>()
    if (const T* v = std::get_if<T>(&value_)) return *v;
    wrong_kind(static_cast<GGUFValueType>(Variant(std::in_place_type<T>).index()));
  }
  const std::string& as_string() const { return as<std::string>(); }
  const GGUFArray& as_array() const { return as<GGUFArray>(); }
  int64_t as_int() const;    // any integer kind whose value fits int64
  double as_float() const;   // float32 or float64
  const Variant& variant() const { return value_; }
  friend bool operator==(const GGUFValue&, const GGUFValue&) = default;

 private:
  [[noreturn]] void wrong_kind(GGUFValueType wanted) const;
  Variant value_;
};

// Key-value pairs in file order.
using GGUFMetadata = std::vector<std::pair<std::string, GGUFValue>>;

// ---- the header

struct GGUFTensorInfo {
  std::string name;
  GGMLType type;
  Shape shape;          // row-major: the file's dimensions reversed (its first, contiguous one is last)
  uint64_t offset = 0;  // bytes into the data section
  uint64_t nbytes = 0;
};

struct GGUFHeader {
  uint32_t version = 3;
  uint64_t alignment = 32;  // general.alignment, or 32
  GGUFMetadata metadata;
  std::vector<GGUFTensorInfo> tensors;  // in file order
  uint64_t data_offset = 0;             // where the data section starts in the file
};

// Parses and checks a whole GGUF file (version 2 or 3, little-endian) held in memory: every count,
// length, kind, dimension and offset is checked against the bytes there are, and the tensors must lie
// aligned and without overlap inside the data section. Throws kiln::Error saying what was expected
// and what was found (and where). Reads nothing outside `file`.
GGUFHeader gguf_parse(std::span<const uint8_t> file);

// ---- reading

// A tensor's stored blocks, as they are in the file: `blocks` is a uint8 tensor of its bytes.
struct QuantizedTensor {
  GGMLType type;
  Shape shape;  // logical, row-major
  Tensor blocks;
};

// A parsed GGUF file and its bytes (a read-only mapping for gguf_open), kept alive while this object
// or any tensor made from it is. (kiln/nn/gguf_json.h's gguf_load gives the same file as json and tensors.)
class GGUFFile {
 public:
  GGUFFile(GGUFHeader header, std::shared_ptr<const void> owner, std::span<const uint8_t> file);

  const GGUFHeader& header() const { return header_; }
  const GGUFMetadata& metadata() const { return header_.metadata; }
  const GGUFValue* find(const std::string& key) const;  // nullptr if absent
  const GGUFValue& get(const std::string& key) const;   // kiln::Error naming a missing key
  const std::vector<GGUFTensorInfo>& tensor_infos() const { return header_.tensors; }
  const GGUFTensorInfo& info(const std::string& name) const;  // kiln::Error naming a missing tensor

  std::span<const uint8_t> bytes(const std::string& name) const;  // valid while this GGUFFile lives
  // A plain tensor (F32, F16, BF16, F64, I8..I64) in its stored dtype: over the mapped bytes where the
  // default device computes on host memory, else a copy on the device. kiln::Error for quantized types.
  Tensor tensor(const std::string& name) const;
  QuantizedTensor quantized(const std::string& name) const;  // any type, as stored
  std::vector<float> dequantized(const std::string& name) const;  // the slow path, for any type
  // Any tensor as kiln computes with it: a plain one as tensor(), a quantized one as dequantize_lazy().
  Tensor lazy(const std::string& name) const;

 private:
  GGUFHeader header_;
  std::shared_ptr<const void> owner_;
  std::span<const uint8_t> file_;
  std::map<std::string, size_t> index_;  // tensor name -> position in header_.tensors
};

// Maps `path` and parses it. kiln::Error naming the path for anything unreadable or malformed.
GGUFFile gguf_open(const std::string& path);

// A float32 tensor of q.shape computed from q's raw blocks by tensor ops (bit masks and shifts, fp16
// scales bitcast from byte pairs), left unrealized: a kernel that reads it, a matmul say, dequantizes
// as it goes instead of reading a float32 copy. Equal to dequantize() to the bit.
Tensor dequantize_lazy(const QuantizedTensor& q);

// x (..., K) @ w.T for a quantized weight w (N, K): (..., N), decoding w as it multiplies (one kernel
// that reads w's blocks in order); equal to the product with dequantize_lazy(w) within float rounding.
// kiln::Error unless K is a multiple of 16 and x's last dimension.
Tensor linear_quantized(const Tensor& x, const QuantizedTensor& w);

// ---- writing

// Collects metadata and tensors, then writes a GGUF v3 file. general.alignment in the metadata (a
// uint32 power of two) sets the alignment, else 32. Tensors are read when written, one at a time.
class GGUFWriter {
 public:
  explicit GGUFWriter(GGUFMetadata metadata = {});
  // `t` stored as `type`: a plain type takes t cast to its dtype; Q8_0 and Q4_0 quantize t as float32.
  void add(const std::string& name, const Tensor& t, GGMLType type);
  void add(const std::string& name, const QuantizedTensor& q);  // the stored bytes as they are
  std::vector<uint8_t> to_bytes() const;
  // Atomic, as safe_save. kiln::Error naming the path if it cannot be written.
  void save(const std::string& path) const;

 private:
  struct Entry {
    GGUFTensorInfo info;
    std::function<std::vector<uint8_t>()> bytes;
  };
  // The new tensor's info, once its name is checked new and its shape whole blocks of `type`.
  GGUFTensorInfo info_for(const std::string& name, GGMLType type, const Shape& shape) const;
  void write(const std::function<void(const void*, size_t)>& sink) const;
  GGUFMetadata metadata_;
  std::vector<Entry> tensors_;
};

// gguf_save (the contract's, over json metadata) is in kiln/nn/gguf_json.h.

}  // namespace kiln::nn::state
