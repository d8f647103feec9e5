// kiln::Context (kiln/context.h): a ScopedEnv per setting, restored in reverse order.
#include "kiln/context.h"

#include <deque>

#include "support/env.h"

namespace kiln {

struct Context::Overrides {
  std::deque<env::ScopedEnv> scopes;  // a deque: ScopedEnv neither moves nor copies
};

Context::Context(std::initializer_list<Setting> settings) : overrides_(std::make_unique<Overrides>()) {
  for (const Setting& s : settings) overrides_->scopes.emplace_back(s.name, s.value);
}

Context::~Context() {
  while (!overrides_->scopes.empty()) overrides_->scopes.pop_back();
}

}  // namespace kiln
