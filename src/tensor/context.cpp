// kiln::Context (kiln/context.h): a ScopedEnv per setting, restored in reverse order; TRAINING also
// sets Tensor::training, a switch the tensor layer reads directly (hence this file is here).
#include "kiln/context.h"

#include <algorithm>
#include <deque>
#include <optional>

#include "kiln/dtype.h"
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
  // XDG_CACHE_HOME), which are not kiln's settings; and EMULATED_DTYPES (see check_emulated_dtypes). Keep
  // sorted: the error message lists them.
  static const std::vector<std::string> names{
      "BEAM", "CC", "CUDA_ARCH", "DEBUG", "DEV", "EMULATED_DTYPES", "JIT", "KILN_CACHE", "KILN_FASHION_MNIST",
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

namespace {

// tinygrad's EMULATED_DTYPES, a comma-separated list of dtypes to compute in software rather than in the
// device's own type. kiln's renderers always do so for float16, bfloat16 and the fp8s (bits in memory,
// float in registers), so naming those asks for what kiln does anyway; every other dtype kiln computes
// natively and has no software form of, so naming one is an error rather than a silent no-op.
void check_emulated_dtypes(const std::string& value) {
  size_t start = 0;
  while (start <= value.size()) {
    const size_t comma = std::min(value.find(',', start), value.size());
    const std::string name = value.substr(start, comma - start);
    start = comma + 1;
    if (name.empty()) continue;
    const std::optional<DType> d = dtypes::from_name(name);
    if (!d) throw_error("Context: EMULATED_DTYPES names '", name, "', which is not a dtype");
    if (!(d->is_fp8() || *d == dtypes::float16 || *d == dtypes::bfloat16))
      throw_error("Context: EMULATED_DTYPES=", value, ": kiln can emulate only float16, bfloat16 and the fp8 ",
                  "dtypes (which it always does), not ", d->name(), ", which it computes natively");
  }
}

}  // namespace

Context::Context(std::initializer_list<Setting> settings) : Context(std::vector<Setting>(settings)) {}

Context::Context(const std::vector<Setting>& settings) : overrides_(std::make_unique<Overrides>()) {
  for (const Setting& s : settings) {  // all checked before any applies
    check_setting(s.name);
    if (s.name == "EMULATED_DTYPES") check_emulated_dtypes(s.value);
  }
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
