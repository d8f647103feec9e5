#pragma once
// A GPT checkpoint is one safetensors file (written atomically by safe_save) holding
//   model.<name>                         the model's weights
//   adamw.m.<param>, adamw.v.<param>     AdamW's moments, named after their parameter
//   adamw.b1_t, adamw.b2_t               b1^t and b2^t, AdamW's bias corrections
// and metadata: the optimizer steps done and the model's shape (so --resume and --sample need no
// architecture flags). Its tensors are handles shared with the model and the optimizer, so loading
// assigns into the live tensors.
#include <kiln/kiln.h>
#include <kiln/nn/layers.h>
#include <kiln/nn/optim.h>
#include <kiln/nn/state.h>

#include <map>
#include <string>
#include <vector>

#include "model.h"

namespace gpt {

using Metadata = std::map<std::string, std::string>;

inline Metadata config_metadata(const Config& c) {
  return {{"vocab_size", std::to_string(c.vocab_size)}, {"block_size", std::to_string(c.block_size)},
          {"n_layer", std::to_string(c.n_layer)},       {"n_head", std::to_string(c.n_head)},
          {"n_embd", std::to_string(c.n_embd)}};
}

inline int64_t metadata_int(const Metadata& m, const std::string& key, const std::string& path) {
  auto it = m.find(key);
  if (it == m.end()) throw kiln::Error(path + ": not a GPT checkpoint (its metadata has no \"" + key + "\")");
  try {
    return std::stoll(it->second);
  } catch (const std::exception&) {
    throw kiln::Error(path + ": metadata \"" + key + "\" is not a whole number: \"" + it->second + "\"");
  }
}

// The model shape a checkpoint was trained with; dropout is not part of it.
inline Config read_config(const std::string& path, double dropout) {
  Metadata m = kiln::nn::state::safe_load_metadata(path);
  return {metadata_int(m, "vocab_size", path), metadata_int(m, "block_size", path), metadata_int(m, "n_layer", path),
          metadata_int(m, "n_head", path), metadata_int(m, "n_embd", path), dropout};
}

// The model's parameters with their state-dict names, split as AdamW's groups: weight decay on the
// matrices (linear weights and the token/position tables), none on biases and LayerNorms.
struct ParamGroups {
  std::vector<std::string> names;  // in the optimizer's order: the decayed group first
  std::vector<kiln::nn::optim::ParamGroup> groups;
};

inline ParamGroups param_groups(const kiln::nn::StateDict& model_state, double weight_decay) {
  ParamGroups out;
  out.groups = {{{}, weight_decay}, {{}, 0.0}};
  for (int decayed = 1; decayed >= 0; decayed--)
    for (const auto& [name, t] : model_state)
      if ((t.ndim() >= 2) == (decayed == 1)) {
        out.names.push_back(name);
        out.groups[decayed ? 0 : 1].params.push_back(t);
      }
  return out;
}

inline kiln::nn::StateDict training_state(const GPT& model, const kiln::nn::optim::AdamW& opt,
                                          const std::vector<std::string>& names) {
  kiln::nn::StateDict state;
  model.collect(state, "model.");
  for (size_t i = 0; i < names.size(); i++) {
    state.emplace("adamw.m." + names[i], opt.m[i]);
    state.emplace("adamw.v." + names[i], opt.v[i]);
  }
  state.emplace("adamw.b1_t", opt.b1_t);
  state.emplace("adamw.b2_t", opt.b2_t);
  return state;
}

// Only the "model." tensors of a checkpoint, for sampling.
inline void load_weights(GPT& model, const std::string& path) {
  kiln::nn::StateDict weights;
  for (const auto& [name, tensor] : kiln::nn::state::safe_load(path))
    if (name.starts_with("model.")) weights.emplace(name.substr(6), tensor);
  kiln::nn::load_state_dict(model, weights);
}

}  // namespace gpt
