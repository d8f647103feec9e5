#pragma once
// A safetensors file of reference values written by a PyTorch script (a ctest fixture), whose path an
// environment variable names.
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>

#include "kiln/nn/state.h"

namespace kiln_test {

// Loaded once and never freed: freeing device buffers during static destruction, after the
// runtime's own statics are gone, corrupts the heap (glibc aborts at exit).
inline kiln::nn::state::StateDict& reference_file(const char* env_var) {
  static auto* files = new std::map<std::string, kiln::nn::state::StateDict>();
  auto it = files->find(env_var);
  if (it == files->end()) {
    const char* path = std::getenv(env_var);
    if (!path) throw std::runtime_error(std::string(env_var) + " is not set (the ctest fixture sets it)");
    it = files->emplace(env_var, kiln::nn::state::safe_load(path)).first;
  }
  return it->second;
}

inline const kiln::Tensor& reference_tensor(const char* env_var, const std::string& key) {
  auto& file = reference_file(env_var);
  auto it = file.find(key);
  if (it == file.end()) throw std::runtime_error("the reference file has no tensor " + key);
  return it->second;
}

}  // namespace kiln_test
