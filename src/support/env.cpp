#include "support/env.h"

#include <atomic>
#include <charconv>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>

#include "kiln/error.h"

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

std::atomic<uint64_t> changes{0};

int parse_int(const std::string& name, const std::string& value) {
  int out = 0;
  const char *begin = value.data(), *end = begin + value.size();
  auto [stop, error] = std::from_chars(begin + (value[0] == '+'), end, out);  // from_chars rejects a '+'
  if (error != std::errc() || stop != end)
    throw_error("setting ", name, "=", value, ": expected an integer",
                error == std::errc::result_out_of_range ? " in int's range" : "");
  return out;
}

}  // namespace

uint64_t generation() { return changes.load(std::memory_order_acquire); }

int debug_level() {
  // One word holds both, so no thread pairs a level with the wrong generation: the generation + 1
  // it was read in (0: never read) above, the level below.
  static std::atomic<uint64_t> cached{0};
  const uint64_t now = (generation() + 1) & 0xffffffffu;
  const uint64_t c = cached.load(std::memory_order_acquire);
  if (c >> 32 == now) [[likely]] return static_cast<int32_t>(static_cast<uint32_t>(c));
  const int level = get_int("DEBUG", 0);
  cached.store(now << 32 | static_cast<uint32_t>(level), std::memory_order_release);
  return level;
}

// A value that is not an integer (DEBUG=abc) is an error: running with the default instead would
// silently ignore the setting.
int get_int(const std::string& name, int default_value) {
  auto v = lookup(name);
  return !v || v->empty() ? default_value : parse_int(name, *v);
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
  changes.fetch_add(1, std::memory_order_acq_rel);
}

ScopedEnv::~ScopedEnv() {
  std::lock_guard lock(store().mu);
  store().values[name_] = had_value_ ? std::optional<std::string>(previous_) : std::nullopt;
  changes.fetch_add(1, std::memory_order_acq_rel);
}

}  // namespace kiln::env
