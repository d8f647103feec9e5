// Command-line end of the Python interoperability test (tests/python/test_safetensors_interop.py):
//   safetensors_tool write PATH   writes the fixed tensors below, which the Python side knows too
//   safetensors_tool dump PATH    loads PATH and prints its metadata and tensors as JSON, each
//                                 tensor's data as the hex of its raw little-endian bytes
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kiln/nn/state.h"
#include "tensor/tensor_impl.h"

using namespace kiln;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

Tensor from_bits(DType dtype, std::vector<uint16_t> bits) {
  return tensor_from_bytes(bits.data(), bits.size() * 2, dtype, {static_cast<int64_t>(bits.size())});
}

template <class T>
Tensor extremes() {
  using L = std::numeric_limits<T>;
  return Tensor::from_vector<T>({L::min(), static_cast<T>(L::min() / 2), 0, 1, L::max()}, {5});
}

// Keep in step with KILN_TENSORS in test_safetensors_interop.py.
void write(const std::string& path) {
  nn::state::StateDict tensors{
      {"f64", Tensor::from_vector<double>({0.1, -0.0, 1e300, -std::numeric_limits<double>::infinity(), 5e-324, 2},
                                          {2, 3})},
      {"f32", Tensor::from_vector<float>({1.5f, -0.0f, kInf, -kInf, std::numeric_limits<float>::quiet_NaN(),
                                          3.4028235e38f, 1e-45f},
                                         {7})},
      {"f16", from_bits(dtypes::float16, {0x3c00, 0x8000, 0x7c00, 0x7e00, 0x0001, 0xc500})},
      {"bf16", from_bits(dtypes::bfloat16, {0x3f80, 0xc040, 0x7f80, 0x7fc0, 0x0001, 0x4049})},
      {"i64", extremes<int64_t>()},
      {"i32", extremes<int32_t>()},
      {"i16", extremes<int16_t>()},
      {"i8", extremes<int8_t>()},
      {"u64", extremes<uint64_t>()},
      {"u32", extremes<uint32_t>()},
      {"u16", extremes<uint16_t>()},
      {"u8", extremes<uint8_t>()},
      {"bool", Tensor::from_vector<bool>({true, false, true}, {3, 1})},
      {"scalar", Tensor::from_vector<float>({42.0f}, {})},
      {"empty", Tensor::zeros({2, 0, 3}, dtypes::int32)},
      {"transposed", Tensor::from_vector<int32_t>({0, 1, 2, 3, 4, 5}, {2, 3}).transpose()},
  };
  nn::state::safe_save(tensors, path, {{"framework", "kiln"}, {"note", "h\xc3\xa9llo \"quoted\""}});
}

std::string hex_of(const Tensor& t) {
  std::vector<uint8_t> bytes(static_cast<size_t>(t.nbytes()));
  tensor_to_bytes(t, bytes.data(), bytes.size());
  std::string hex;
  char digits[3];
  for (uint8_t b : bytes) {
    std::snprintf(digits, sizeof digits, "%02x", b);
    hex += digits;
  }
  return hex;
}

void dump(const std::string& path) {
  nlohmann::json out;
  out["metadata"] = nn::state::safe_load_metadata(path);
  out["tensors"] = nlohmann::json::object();
  for (const auto& [name, t] : nn::state::safe_load(path))
    out["tensors"][name] = {{"dtype", t.dtype().name()}, {"shape", t.shape()}, {"hex", hex_of(t)}};
  std::printf("%s\n", out.dump().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() != 2 || (args[0] != "write" && args[0] != "dump")) {
    std::fprintf(stderr, "usage: safetensors_tool write|dump PATH\n");
    return 2;
  }
  try {
    if (args[0] == "write") write(args[1]);
    else dump(args[1]);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
