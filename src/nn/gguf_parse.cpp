// Parsing a GGUF file: the header (magic, version, counts), the typed metadata, the tensor infos, and
// the placement of each tensor in the data section. The file is untrusted: every count and length is
// checked against the bytes that remain before anything is allocated or read.
#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>

#include "kiln/error.h"
#include "kiln/nn/gguf.h"

namespace kiln::nn::state {
namespace {

static_assert(std::endian::native == std::endian::little, "GGUF is read as little-endian");

constexpr uint8_t kMagic[4] = {'G', 'G', 'U', 'F'};
constexpr uint64_t kDefaultAlignment = 32;
constexpr uint32_t kMaxDims = 4;  // GGML_MAX_DIMS
// Real files nest arrays at most twice; the limit keeps a hostile file from exhausting the stack.
constexpr int kMaxNesting = 16;
constexpr uint32_t kLastValueType = uint32_t(GGUFValueType::FLOAT64);

// The fewest bytes a value of `type` takes in the file (a string is at least its length field; an
// array its element kind and count), so a count can be checked against the bytes left.
uint64_t min_bytes(GGUFValueType type) {
  switch (type) {
    case GGUFValueType::UINT8: case GGUFValueType::INT8: case GGUFValueType::BOOL: return 1;
    case GGUFValueType::UINT16: case GGUFValueType::INT16: return 2;
    case GGUFValueType::UINT32: case GGUFValueType::INT32: case GGUFValueType::FLOAT32: return 4;
    case GGUFValueType::ARRAY: return 12;
    default: return 8;  // 64-bit numbers and strings
  }
}

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> file) : file_(file) {}
  uint64_t pos() const { return pos_; }
  uint64_t left() const { return file_.size() - pos_; }

  template <class... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    throw_error("at byte ", pos_, ": ", parts...);
  }

  // `what` and `part` name the field; they are joined only for the error.
  template <class T>
  T read(const std::string& what, const char* part = "") {
    if (sizeof(T) > left()) fail(what, part, ": expected ", sizeof(T), " more bytes, the file ends after ", left());
    T v;
    std::memcpy(&v, file_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string string(const std::string& what) {
    const auto n = read<uint64_t>(what, " length");
    if (n > left()) fail(what, ": a string of ", n, " bytes, but the file ends after ", left());
    std::string s(reinterpret_cast<const char*>(file_.data() + pos_), n);
    pos_ += n;
    return s;
  }

  // A count of items of at least `each` bytes must fit in what is left of the file.
  void check_count(uint64_t count, uint64_t each, const std::string& what) const {
    if (count > left() / each)
      fail(what, ": ", count, " of at least ", each, " bytes each cannot fit in the ", left(), " bytes left");
  }

 private:
  std::span<const uint8_t> file_;
  uint64_t pos_ = 0;
};

GGUFValueType read_value_type(Reader& r, const std::string& what) {
  const auto t = r.read<uint32_t>(what, " kind");
  if (t > kLastValueType) r.fail(what, ": unknown value kind ", t, "; expected 0 (uint8) to 12 (float64)");
  return static_cast<GGUFValueType>(t);
}

GGUFValue read_value(Reader& r, GGUFValueType type, const std::string& what, int depth) {
  switch (type) {
    case GGUFValueType::UINT8: return r.read<uint8_t>(what);
    case GGUFValueType::INT8: return r.read<int8_t>(what);
    case GGUFValueType::UINT16: return r.read<uint16_t>(what);
    case GGUFValueType::INT16: return r.read<int16_t>(what);
    case GGUFValueType::UINT32: return r.read<uint32_t>(what);
    case GGUFValueType::INT32: return r.read<int32_t>(what);
    case GGUFValueType::FLOAT32: return r.read<float>(what);
    case GGUFValueType::UINT64: return r.read<uint64_t>(what);
    case GGUFValueType::INT64: return r.read<int64_t>(what);
    case GGUFValueType::FLOAT64: return r.read<double>(what);
    case GGUFValueType::STRING: return r.string(what);
    case GGUFValueType::BOOL: {
      const auto b = r.read<uint8_t>(what);
      if (b > 1) r.fail(what, ": a bool byte of ", int(b), "; expected 0 or 1");
      return b == 1;
    }
    case GGUFValueType::ARRAY: {
      if (depth >= kMaxNesting) r.fail(what, ": arrays nested more than ", kMaxNesting, " deep");
      GGUFArray array{read_value_type(r, what), {}};
      const auto n = r.read<uint64_t>(what, " array length");
      r.check_count(n, min_bytes(array.type), what);
      array.values.reserve(n);
      for (uint64_t i = 0; i < n; ++i) array.values.push_back(read_value(r, array.type, what, depth + 1));
      return array;
    }
  }
  r.fail(what, ": unknown value kind ", uint32_t(type));
}

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

uint64_t alignment_of(const Reader& r, const GGUFMetadata& metadata) {
  for (const auto& [key, value] : metadata) {
    if (key != "general.alignment") continue;
    if (value.type() != GGUFValueType::UINT32)
      r.fail("general.alignment: expected a uint32, got a ", gguf_type_name(value.type()));
    const uint32_t a = value.as<uint32_t>();
    if (!std::has_single_bit(a)) r.fail("general.alignment: expected a power of two, got ", a);
    return a;
  }
  return kDefaultAlignment;
}

GGUFTensorInfo read_tensor_info(Reader& r, uint64_t index, uint64_t file_size) {
  const std::string what = "tensor " + std::to_string(index);
  GGUFTensorInfo info;
  info.name = r.string(what + " name");
  const std::string named = what + " (" + quoted(info.name) + ")";
  const auto n_dims = r.read<uint32_t>(named + " dimension count");
  if (n_dims > kMaxDims) r.fail(named, ": ", n_dims, " dimensions; GGUF tensors have at most ", kMaxDims);
  std::vector<uint64_t> dims(n_dims);
  // Zero dimensions count as 1 here, so that no partial product, in any order, overflows int64.
  uint64_t numel = 1, bound = 1;
  for (uint32_t i = 0; i < n_dims; ++i) {
    dims[i] = r.read<uint64_t>(named + " dimension");
    const uint64_t limit = uint64_t(std::numeric_limits<int64_t>::max()), d = std::max<uint64_t>(dims[i], 1);
    if (bound > limit / d)
      r.fail(named, ": the dimensions multiply past 2^63 elements (dimension ", i, " is ", dims[i], ")");
    bound *= d;
    numel *= dims[i];
  }
  const auto type = r.read<uint32_t>(named + " type");
  const GGMLTypeTraits* traits = nullptr;
  try {
    traits = &ggml_traits(static_cast<GGMLType>(type));
  } catch (const Error& e) {
    r.fail(named, ": ", e.what());
  }
  info.type = traits->type;
  // Blocks run along the first (contiguous) dimension, so each row holds whole blocks.
  const uint64_t row = n_dims ? dims[0] : 1;
  if (row % uint64_t(traits->block_size) != 0)
    r.fail(named, ": ", traits->name, " stores blocks of ", traits->block_size, " values along the first dimension, ",
           "which is ", row);
  const uint64_t blocks = numel / uint64_t(traits->block_size);
  if (blocks > file_size / uint64_t(traits->block_bytes))
    r.fail(named, ": ", blocks, " blocks of ", traits->block_bytes, " bytes do not fit in a file of ", file_size,
           " bytes");
  info.nbytes = blocks * uint64_t(traits->block_bytes);
  info.shape.assign(dims.rbegin(), dims.rend());
  info.offset = r.read<uint64_t>(named + " offset");
  return info;
}

// Each tensor aligned, inside the data section, and apart from the others.
void check_placement(const GGUFHeader& h, uint64_t file_size) {
  if (h.tensors.empty()) return;
  if (h.data_offset > file_size)
    throw_error("the data section starts at byte ", h.data_offset, " (aligned to ", h.alignment,
                "), past the end of the file (", file_size, " bytes)");
  const uint64_t data_size = file_size - h.data_offset;
  for (const GGUFTensorInfo& t : h.tensors) {
    if (t.offset % h.alignment != 0)
      throw_error("tensor ", quoted(t.name), ": offset ", t.offset, " is not a multiple of the alignment ",
                  h.alignment);
    if (t.offset > data_size || t.nbytes > data_size - t.offset)
      throw_error("tensor ", quoted(t.name), ": bytes [", t.offset, ", +", t.nbytes,
                  ") of the data section lie past its end (", data_size,
                  " bytes; the file is truncated or the offset wrong)");
  }
  std::vector<const GGUFTensorInfo*> by_offset;
  for (const GGUFTensorInfo& t : h.tensors) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const GGUFTensorInfo &a = *by_offset[i - 1], &b = *by_offset[i];
    if (a.offset + a.nbytes > b.offset)
      throw_error("tensors ", quoted(a.name), " (bytes ", a.offset, "..", a.offset + a.nbytes, ") and ", quoted(b.name),
                  " (from byte ", b.offset, ") overlap");
  }
}

}  // namespace

GGUFHeader gguf_parse(std::span<const uint8_t> file) {
  Reader r(file);
  if (file.size() < 4)
    throw_error("not a GGUF file: expected the magic \"GGUF\", found a file of ", file.size(), " bytes");
  if (std::memcmp(file.data(), kMagic, 4) != 0) {
    char found[16];
    std::snprintf(found, sizeof found, "%02x %02x %02x %02x", file[0], file[1], file[2], file[3]);
    throw_error("not a GGUF file: expected the magic \"GGUF\" (47 47 55 46), found ", found);
  }
  r.read<uint32_t>("magic");
  GGUFHeader h;
  h.version = r.read<uint32_t>("version");
  if (h.version == 1) r.fail("GGUF version 1 (32-bit counts) is not supported; expected version 2 or 3");
  if (h.version != 2 && h.version != 3) {
    if ((h.version & 0xffff) == 0)
      r.fail("version ", h.version, " reads as a big-endian file, which kiln does not read");
    r.fail("unknown GGUF version ", h.version, "; expected 2 or 3");
  }
  const auto n_tensors = r.read<uint64_t>("tensor count");
  const auto n_kv = r.read<uint64_t>("metadata count");
  r.check_count(n_kv, 8 + 4 + 1, "metadata entries");  // key length, kind, a 1-byte value
  std::set<std::string> keys;
  h.metadata.reserve(n_kv);
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = r.string("metadata key " + std::to_string(i));
    if (!keys.insert(key).second) r.fail("metadata key ", quoted(key), " appears twice");
    const std::string what = "metadata " + quoted(key);
    GGUFValue value = read_value(r, read_value_type(r, what), what, 0);
    h.metadata.emplace_back(std::move(key), std::move(value));
  }
  h.alignment = alignment_of(r, h.metadata);
  r.check_count(n_tensors, 8 + 4 + 4 + 8, "tensor infos");  // name length, dimension count, type, offset
  std::set<std::string> names;
  h.tensors.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    h.tensors.push_back(read_tensor_info(r, i, file.size()));
    const std::string& name = h.tensors.back().name;
    if (!names.insert(name).second) r.fail("tensor name ", quoted(name), " appears twice");
  }
  h.data_offset = (r.pos() + h.alignment - 1) / h.alignment * h.alignment;
  check_placement(h, file.size());
  return h;
}

}  // namespace kiln::nn::state
