#pragma once
// Saving and loading named tensors in the safetensors format (https://github.com/huggingface/safetensors),
// the format PyTorch, NumPy, tinygrad and Hugging Face checkpoints share.
#include <map>
#include <string>

#include "kiln/tensor.h"

namespace kiln::nn::state {

using StateDict = std::map<std::string, Tensor>;

// Realizes `tensors` and writes them, with optional string `metadata`, to `path`. The write is
// atomic: readers see the old file or the whole new one, never a part. A symbolic link is written
// through (its target is replaced). Throws kiln::Error naming the path if it cannot be written
// (missing directory, disk full, ...) or is not a regular file (a directory, FIFO or device).
void safe_save(const StateDict& tensors, const std::string& path,
               const std::map<std::string, std::string>& metadata = {});

// Throws the kiln::Error safe_save would for `path` itself (a directory, FIFO or device there, a
// missing or read-only directory), without changing it: for programs that save after long work.
void safe_save_check(const std::string& path);

// Reads every tensor of a safetensors file into a buffer on the default device. Throws kiln::Error
// naming the path and the problem if the file is missing, truncated or malformed.
StateDict safe_load(const std::string& path);

// The file's "__metadata__" strings (empty if it has none), without reading any tensor data.
std::map<std::string, std::string> safe_load_metadata(const std::string& path);

}  // namespace kiln::nn::state
