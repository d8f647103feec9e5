// libFuzzer harness for the ONNX loader: the input is a model file's bytes, loaded as Model::load loads
// a file (parsed, every node and subgraph checked against the op table, the initializers decoded). It
// must load or be rejected with kiln::Error; anything else (a crash, another exception, a read outside a
// buffer, undefined behaviour) is a finding. External data is looked up in a folder that does not exist,
// so that no input reads a file of this machine.
#include <cstdint>

#include "kiln/error.h"
#include "kiln/onnx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    kiln::onnx::Model::load_bytes({reinterpret_cast<const char*>(data), size}, "/nonexistent/kiln_fuzz_onnx");
  } catch (const kiln::Error&) {
  }
  return 0;
}
