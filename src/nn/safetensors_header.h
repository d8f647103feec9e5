#pragma once
// The JSON header of a safetensors file: each tensor's dtype, shape and byte range in the data
// region that follows the header, plus free-form string metadata. Parsing trusts nothing: a
// header that passes describes tensors kiln can hold, lying exactly within the data region.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/ir/uop.h"

namespace kiln::nn::state {

struct TensorEntry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin = 0, end = 0;  // byte range [begin, end) within the data region
};

struct SafetensorsHeader {
  std::vector<TensorEntry> tensors;  // parse_header returns them in data order
  std::map<std::string, std::string> metadata;
};

// The header as JSON ("__metadata__" first, then the tensors in order), padded with spaces to a
// multiple of 8 bytes as the reference implementation does. Throws kiln::Error for names or
// metadata that are not valid UTF-8, and for dtypes safetensors has no name for.
std::string format_header(const SafetensorsHeader& header);

// Parses and checks `json` for a data region of `data_size` bytes: every tensor must have a known
// dtype, a shape of at most kMaxNumel elements, and a byte range matching its size, and the ranges
// must tile the data region back to back, as the reference implementation requires. Throws
// kiln::Error saying what was expected and what was found.
SafetensorsHeader parse_header(std::string_view json, uint64_t data_size);

}  // namespace kiln::nn::state
