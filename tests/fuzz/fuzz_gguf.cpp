// libFuzzer harness for the GGUF reader: parses the input as a whole file in memory, then decodes every
// tensor it describes. A file must parse or be rejected with kiln::Error; anything else (a crash, a read
// outside the input, undefined behaviour, a tensor placed outside the file) is a finding.
#include <cstdint>
#include <cstdlib>

#include "kiln/error.h"
#include "kiln/nn/gguf.h"

using namespace kiln::nn::state;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> file(data, size);
  try {
    const GGUFHeader h = gguf_parse(file);
    for (const GGUFTensorInfo& t : h.tensors) {
      // gguf_parse promised that every tensor lies inside the file.
      if (h.data_offset > size || t.offset > size - h.data_offset || t.nbytes > size - h.data_offset - t.offset)
        std::abort();
      int64_t numel = 1;
      for (int64_t d : t.shape) numel *= d;
      dequantize(t.type, file.subspan(h.data_offset + t.offset, t.nbytes), numel);
    }
  } catch (const kiln::Error&) {
  }
  return 0;
}
