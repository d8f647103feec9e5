#pragma once
// GGUF files as the language-model API sees them: the metadata as json and every tensor as a kiln
// Tensor. kiln/nn/gguf.h has the typed reader and writer underneath.
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "kiln/nn/gguf.h"
#include "kiln/tensor.h"

namespace kiln::nn::state {

// metadata: each key's value in its natural json kind (integers, floats, bools, strings; arrays as json
// arrays). tensors: F32/F16/BF16 (and the integer types) in their stored dtype over the mapped file;
// quantized ones as dequantize_lazy's unrealized float32 tensors over their raw blocks.
struct GGUF {
  nlohmann::json metadata;
  std::map<std::string, Tensor> tensors;
};

// Maps and parses `path` (kiln::Error naming it for anything unreadable or malformed).
GGUF gguf_load(const std::string& path);

// Writes `tensors` with `metadata` (a json object) to `path`, each in its own dtype, or, when `quant` is
// "Q8_0" or "Q4_0", every 2-D tensor whose rows are whole blocks quantized to it (as llama.cpp keeps norms
// and biases in float).
void gguf_save(const std::string& path, const nlohmann::json& metadata, const std::map<std::string, Tensor>& tensors,
               const std::string& quant = "");

// The conversions gguf_load and gguf_save make. Into GGUF: an integer becomes a uint32 (a negative one an
// int32) where it fits, else a uint64 (int64), a float a float32, an array takes its first element's kind (every element must
// convert to it). kiln::Error naming the key for null, objects and mixed arrays.
nlohmann::json gguf_value_to_json(const GGUFValue& value);
GGUFMetadata gguf_metadata_from_json(const nlohmann::json& metadata);

}  // namespace kiln::nn::state
