// The idx file format (MNIST's): two zero bytes, a type byte, a dimension count, that many big-endian
// u32 sizes, then the elements big-endian in row-major order.
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kiln/error.h"
#include "kiln/ir/uop.h"
#include "kiln/nn/datasets.h"
#include "tensor/tensor_impl.h"

namespace kiln::nn::datasets {
namespace {

// Real idx files have 1 to 4 dimensions; a header claiming more than this is corrupt.
constexpr int kMaxIdxDims = 16;
// Data is read in pieces that grow with what has arrived, so a header claiming gigabytes costs
// memory only for bytes the file really has.
constexpr size_t kFirstReadBytes = size_t{1} << 20;

std::optional<DType> dtype_of_idx_type(uint8_t type) {
  switch (type) {
    case 0x08: return dtypes::uint8;
    case 0x09: return dtypes::int8;
    case 0x0B: return dtypes::int16;
    case 0x0C: return dtypes::int32;
    case 0x0D: return dtypes::float32;
    case 0x0E: return dtypes::float64;
    default: return std::nullopt;
  }
}

std::string hex_bytes(const uint8_t* bytes, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    char buf[4];
    std::snprintf(buf, sizeof buf, "%s%02x", i ? " " : "", bytes[i]);
    out += buf;
  }
  return out;
}

uint32_t read_big_endian_u32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
}

// A file read through zlib, which decompresses it if it starts with the gzip magic 1f 8b and passes
// it through unchanged otherwise: the content decides, not the name.
class ZlibFile {
 public:
  explicit ZlibFile(const std::string& path) : path_(path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) throw_error("load_idx: ", path, ": no such file");
    if (std::filesystem::is_directory(path, ec)) throw_error("load_idx: ", path, ": expected a file, found a directory");
    file_ = gzopen(path.c_str(), "rb");
    if (!file_) throw_error("load_idx: ", path, ": cannot open it");
  }
  ~ZlibFile() { gzclose(file_); }
  ZlibFile(const ZlibFile&) = delete;
  ZlibFile& operator=(const ZlibFile&) = delete;

  // Reads up to `n` bytes into `dst`; fewer only at the end of the data. Damaged gzip data and
  // failed reads throw.
  size_t read(void* dst, size_t n) {
    size_t got = 0;
    while (got < n) {
      unsigned piece = static_cast<unsigned>(std::min<size_t>(n - got, INT_MAX));
      int r = gzread(file_, static_cast<char*>(dst) + got, piece);
      if (r > 0) got += static_cast<size_t>(r);
      if (r < static_cast<int>(piece)) break;
    }
    int err = Z_OK;
    std::string msg = gzerror(file_, &err);
    if (err != Z_OK) {
      if (msg.starts_with(path_ + ": ")) msg.erase(0, path_.size() + 2);  // zlib names the file too
      throw_error("load_idx: ", path_, err == Z_ERRNO ? ": read error (" : ": corrupt gzip stream (", msg, ")");
    }
    return got;
  }

  // "path" or "path (gzip, after decompression)", for messages about sizes.
  std::string describe() const { return gzdirect(file_) ? path_ : path_ + " (gzip, after decompression)"; }

 private:
  std::string path_;
  gzFile file_ = nullptr;
};

struct IdxHeader {
  DType dtype;
  Shape shape;
  int64_t numel = 1;
};

IdxHeader read_header(ZlibFile& file, const std::string& path) {
  uint8_t magic[4];
  size_t got = file.read(magic, 4);
  if (got < 4) throw_error("load_idx: ", path, ": too short for an idx header: expected 4 magic bytes, found ", got);
  if (magic[0] != 0 || magic[1] != 0)
    throw_error("load_idx: ", path, ": bad magic: expected 00 00 <type> <dims>, found ", hex_bytes(magic, 4),
                " (not an idx file)");
  std::optional<DType> dtype = dtype_of_idx_type(magic[2]);
  if (!dtype)
    throw_error("load_idx: ", path, ": unknown type byte ", hex_bytes(magic + 2, 1),
                ": expected 08 (uint8), 09 (int8), 0b (int16), 0c (int32), 0d (float32) or 0e (float64)");
  int ndims = magic[3];
  if (ndims == 0) throw_error("load_idx: ", path, ": the header has zero dimensions; expected 1 to ", kMaxIdxDims);
  if (ndims > kMaxIdxDims)
    throw_error("load_idx: ", path, ": the header has ", ndims, " dimensions; expected at most ", kMaxIdxDims);

  std::vector<uint8_t> sizes(4 * static_cast<size_t>(ndims));
  got = file.read(sizes.data(), sizes.size());
  if (got < sizes.size())
    throw_error("load_idx: ", file.describe(), ": truncated header: ", ndims, " dimensions need ", sizes.size(),
                " bytes of sizes, found ", got);
  IdxHeader header{*dtype, {}, 1};
  for (int i = 0; i < ndims; ++i) header.shape.push_back(read_big_endian_u32(&sizes[4 * static_cast<size_t>(i)]));
  // Each size is below 2^32 and the running product stays at most kMaxNumel < 2^31, so it never overflows.
  for (int64_t size : header.shape) {
    header.numel *= size;
    if (header.numel > kMaxNumel)
      throw_error("load_idx: ", path, ": the sizes ", shape_to_string(header.shape),
                  " multiply to more than kiln's limit of ", kMaxNumel, " elements");
  }
  return header;
}

// Reads exactly `bytes` bytes, growing the buffer only as data arrives.
std::vector<uint8_t> read_data(ZlibFile& file, const IdxHeader& header, size_t bytes) {
  std::vector<uint8_t> data;
  while (data.size() < bytes) {
    size_t have = data.size();
    size_t want = std::min(bytes - have, std::max(kFirstReadBytes, have));
    data.resize(have + want);
    size_t got = file.read(data.data() + have, want);
    data.resize(have + got);
    if (got < want)
      throw_error("load_idx: ", file.describe(), ": truncated data: the header's shape ", shape_to_string(header.shape),
                  " of ", header.dtype.name(), " needs ", bytes, " bytes, found ", data.size());
  }
  uint8_t extra;
  if (file.read(&extra, 1) != 0)
    throw_error("load_idx: ", file.describe(), ": trailing garbage after the ", bytes, " bytes of data the header's shape ",
                shape_to_string(header.shape), " of ", header.dtype.name(), " needs");
  return data;
}

// idx stores elements big-endian; reverse each element's bytes on a little-endian host.
void to_host_order(std::vector<uint8_t>& data, size_t itemsize) {
  if constexpr (std::endian::native == std::endian::big) return;
  if (itemsize == 1) return;
  for (size_t i = 0; i < data.size(); i += itemsize) std::reverse(data.begin() + i, data.begin() + i + itemsize);
}

}  // namespace

Tensor load_idx(const std::string& path) {
  ZlibFile file(path);
  IdxHeader header = read_header(file, path);
  size_t itemsize = static_cast<size_t>(header.dtype.itemsize());
  std::vector<uint8_t> data = read_data(file, header, static_cast<size_t>(header.numel) * itemsize);
  to_host_order(data, itemsize);
  return tensor_from_bytes(data.data(), data.size(), header.dtype, header.shape);
}

}  // namespace kiln::nn::datasets
