// libFuzzer harness for the safetensors header parser: the input is a whole file (an 8-byte header
// length, the JSON header, the data region), split as safe_load splits it. The parser must accept it
// or throw kiln::Error; an accepted header must place every tensor inside the data region.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "kiln/error.h"
#include "nn/safetensors_header.h"

using namespace kiln::nn::state;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  uint64_t length = 0;
  std::memcpy(&length, data, 8);
  if (length > size - 8) return 0;
  const uint64_t data_size = size - 8 - length;
  try {
    const SafetensorsHeader header = parse_header({reinterpret_cast<const char*>(data + 8), length}, data_size);
    for (const TensorEntry& e : header.tensors)
      if (e.begin > e.end || e.end > data_size) std::abort();
  } catch (const kiln::Error&) {
  }
  return 0;
}
