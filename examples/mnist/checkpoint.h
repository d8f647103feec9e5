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

#include <filesystem>
#include <map>
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

inline void save_checkpoint(const std::string& path, const kiln::nn::StateDict& state, const Metadata& metadata) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  kiln::nn::state::safe_save(state, path, metadata);
}

// Restores every tensor of `state` from the file; a missing or extra tensor is an error naming it.
inline void load_checkpoint(const std::string& path, const kiln::nn::StateDict& state) {
  kiln::nn::load_state_dict_into(state, kiln::nn::state::safe_load(path));
}

// Only the model's weights, for evaluation: the "model." tensors of a checkpoint, without the prefix.
template <class Model>
void load_model_weights(Model& model, const std::string& path) {
  kiln::nn::StateDict weights;
  for (const auto& [name, tensor] : kiln::nn::state::safe_load(path))
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
