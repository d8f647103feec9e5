// kiln::Context (kiln/context.h): a ScopedEnv per setting, restored in reverse order; TRAINING also
// sets Tensor::training, a switch the tensor layer reads directly (hence this file is here).
#include "kiln/context.h"

#include <algorithm>
#include <deque>
#include <optional>

#include "kiln/error.h"
#include "kiln/tensor.h"
#include "support/env.h"

namespace kiln {

struct Context::Overrides {
  std::deque<env::ScopedEnv> scopes;  // a deque: ScopedEnv neither moves nor copies
  std::optional<bool> previous_training;
};

const std::vector<std::string>& Context::known_settings() {
  // Every name src/ reads through env::get_int / env::get_string, but the system's own (PATH, HOME,
  // XDG_CACHE_HOME), which are not kiln's settings. Keep sorted: the error message lists them.
  static const std::vector<std::string> names{
      "BEAM", "CC", "CUDA_ARCH", "DEBUG", "DEV", "JIT", "KILN_CACHE", "KILN_FASHION_MNIST",
      "LOCALS", "NOOPT", "PROFILE", "PROFILE_PATH", "SCHEDULE_CACHE", "SPEC", "SPLIT_REDUCEOP", "TRAINING",
      "VIZ", "VIZ_PORT", "WINO"};
  return names;
}

void Context::check_setting(const std::string& name) {
  const std::vector<std::string>& known = known_settings();
  if (std::find(known.begin(), known.end(), name) != known.end()) return;
  std::string list;
  for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
  throw_error("Context: unknown setting '", name, "'; kiln's settings are ", list);
}

Context::Context(std::initializer_list<Setting> settings) : Context(std::vector<Setting>(settings)) {}

Context::Context(const std::vector<Setting>& settings) : overrides_(std::make_unique<Overrides>()) {
  for (const Setting& s : settings) check_setting(s.name);  // all checked before any applies
  for (const Setting& s : settings) overrides_->scopes.emplace_back(s.name, s.value);
  if (std::any_of(settings.begin(), settings.end(), [](const Setting& s) { return s.name == "TRAINING"; })) {
    const bool on = env::get_int("TRAINING", 0) != 0;  // parsed as every integer setting
    overrides_->previous_training = Tensor::training;
    Tensor::training = on;
  }
}

Context::~Context() {
  while (!overrides_->scopes.empty()) overrides_->scopes.pop_back();
  if (overrides_->previous_training) Tensor::training = *overrides_->previous_training;
}

}  // namespace kiln
