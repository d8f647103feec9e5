#include "support/env.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>

namespace kiln::env {
namespace {

// Overrides win over the process environment; the environment itself is read at each lookup of an
// un-overridden name only once, then cached.
struct Store {
  std::mutex mu;
  std::map<std::string, std::optional<std::string>> values;
};
Store& store() {
  static Store s;
  return s;
}

std::optional<std::string> lookup(const std::string& name) {
  Store& s = store();
  std::lock_guard lock(s.mu);
  auto it = s.values.find(name);
  if (it == s.values.end()) {
    const char* v = std::getenv(name.c_str());
    it = s.values.emplace(name, v ? std::optional<std::string>(v) : std::nullopt).first;
  }
  return it->second;
}

}  // namespace

int get_int(const std::string& name, int default_value) {
  auto v = lookup(name);
  if (!v || v->empty()) return default_value;
  try {
    return std::stoi(*v);
  } catch (...) {
    return default_value;
  }
}

std::string get_string(const std::string& name, const std::string& default_value) {
  auto v = lookup(name);
  return v ? *v : default_value;
}

ScopedEnv::ScopedEnv(std::string name, std::string value) : name_(std::move(name)) {
  auto prev = lookup(name_);
  had_value_ = prev.has_value();
  previous_ = prev.value_or("");
  std::lock_guard lock(store().mu);
  store().values[name_] = std::move(value);
}

ScopedEnv::~ScopedEnv() {
  std::lock_guard lock(store().mu);
  store().values[name_] = had_value_ ? std::optional<std::string>(previous_) : std::nullopt;
}

}  // namespace kiln::env
