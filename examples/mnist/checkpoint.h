#pragma once
// A training checkpoint is one safetensors file (written atomically by safe_save) holding
//   model.<name>                      the model's state dict: weights and BatchNorm running statistics
//   adam.m.<param>, adam.v.<param>    Adam's first and second moments, named after their parameter
//   adam.b1_t, adam.b2_t              b1^t and b2^t, Adam's bias corrections
//   adam.lr                           the learning rate the next step uses
// and metadata strings: the epochs done, the one-cycle schedule's step counter, the test accuracy,
// the input statistics and the flags that shape the run (see beautiful_mnist.cpp).
//
// Every tensor of the state dict is a handle shared with the model or the optimizer, so loading a
// checkpoint is load_state_dict_into that dict: it assigns into the live tensors.
#include <kiln/kiln.h>
#include <kiln/nn/layers.h>
#include <kiln/nn/optim.h>
#include <kiln/nn/state.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace mnist {

using Metadata = std::map<std::string, std::string>;

inline const std::string kModelPrefix = "model.";

// The model's parameters (what requires a gradient), each with its state-dict name, in one order.
struct NamedParameters {
  std::vector<std::string> names;
  std::vector<kiln::Tensor> tensors;
};

inline NamedParameters named_parameters(const kiln::nn::StateDict& model_state) {
  NamedParameters out;
  for (const auto& [name, tensor] : model_state) {
    if (!tensor.requires_grad()) continue;
    out.names.push_back(name);
    out.tensors.push_back(tensor);
  }
  return out;
}

// Everything that must survive a restart for training to continue exactly as it would have.
template <class Model>
kiln::nn::StateDict training_state(const Model& model, const kiln::nn::optim::Adam& opt,
                                   const std::vector<std::string>& param_names) {
  kiln::nn::StateDict state;
  model.collect(state, kModelPrefix);
  // Adam keeps only the parameters it was given, in that order (it drops duplicates, and there are none).
  for (size_t i = 0; i < param_names.size(); i++) {
    state.emplace("adam.m." + param_names[i], opt.m[i]);
    state.emplace("adam.v." + param_names[i], opt.v[i]);
  }
  state.emplace("adam.b1_t", opt.b1_t);
  state.emplace("adam.b2_t", opt.b2_t);
  state.emplace("adam.lr", opt.lr_tensor);
  return state;
}

// Makes the checkpoint's directory and checks that a checkpoint can be written there, so that a bad
// path is an error before training rather than after an epoch.
inline void prepare_checkpoint_path(const std::string& path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code error;
  if (!parent.empty() && !std::filesystem::is_directory(parent) && !std::filesystem::create_directories(parent, error))
    throw kiln::Error("--checkpoint " + path + ": cannot create the directory " + parent.string() + ": " +
                      (error ? error.message() : "a file of that name is in the way"));
  kiln::nn::state::safe_save_check(path);
}

// The first tensor of `state` holding a NaN or an infinity, with the offending value; nullopt if
// every value is finite. Training never produces such a checkpoint; a damaged file can hold one.
inline std::optional<std::string> first_non_finite(const kiln::nn::StateDict& state) {
  for (const auto& [name, tensor] : state) {
    if (!tensor.dtype().is_float()) continue;
    std::vector<float> values = tensor.cast(kiln::dtypes::float32).to_vector<float>();
    auto bad = std::find_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
    if (bad != values.end())
      return "tensor \"" + name + "\" holds " + (std::isnan(*bad) ? "NaN" : "an infinity") + " (element " +
             std::to_string(bad - values.begin()) + " of " + std::to_string(values.size()) + ")";
  }
  return std::nullopt;
}

// The checkpoint file, or an error naming the tensor that is not finite.
inline kiln::nn::StateDict load_finite(const std::string& path) {
  kiln::nn::StateDict loaded = kiln::nn::state::safe_load(path);
  if (std::optional<std::string> bad = first_non_finite(loaded))
    throw kiln::Error(path + ": damaged checkpoint: " + *bad);
  return loaded;
}

inline void save_checkpoint(const std::string& path, const kiln::nn::StateDict& state, const Metadata& metadata) {
  kiln::nn::state::safe_save(state, path, metadata);
}

// Restores every tensor of `state` from the file; a missing, extra, mis-shaped or mistyped tensor,
// or one holding NaN or infinity, is an error naming it.
inline void load_checkpoint(const std::string& path, const kiln::nn::StateDict& state) {
  kiln::nn::load_state_dict_into(state, load_finite(path));
}

// Only the model's weights, for evaluation: the "model." tensors of a checkpoint, without the prefix.
template <class Model>
void load_model_weights(Model& model, const std::string& path) {
  kiln::nn::StateDict weights;
  for (const auto& [name, tensor] : load_finite(path))
    if (name.starts_with(kModelPrefix)) weights.emplace(name.substr(kModelPrefix.size()), tensor);
  kiln::nn::load_state_dict(model, weights);
}

// A metadata value, or a clear error naming the file and the key.
inline const std::string& metadata_value(const Metadata& metadata, const std::string& key, const std::string& path) {
  auto it = metadata.find(key);
  if (it == metadata.end())
    throw kiln::Error(path + ": not a beautiful_mnist checkpoint (its metadata has no \"" + key + "\")");
  return it->second;
}

// A metadata value as a number (the types the checkpoint writes), or an error naming file and key.
template <class Number>
Number metadata_number(const Metadata& metadata, const std::string& key, const std::string& path) {
  const std::string& text = metadata_value(metadata, key, path);
  try {
    if constexpr (std::is_floating_point_v<Number>) return static_cast<Number>(std::stod(text));
    else if constexpr (std::is_unsigned_v<Number>) return static_cast<Number>(std::stoull(text));
    else return static_cast<Number>(std::stoll(text));
  } catch (const std::exception&) {
    throw kiln::Error(path + ": metadata \"" + key + "\" is not a number: \"" + text + "\"");
  }
}

}  // namespace mnist
