#include "runtime/device.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <mutex>

#include "kiln/error.h"
#include "runtime/builtin_devices.h"
#include "support/env.h"

namespace kiln::runtime {

Device::Device(std::string name) : name_(std::move(name)) {}
Device::~Device() = default;
void Device::synchronize() {}
int Device::max_threads() const { return 1; }
int Device::vector_bytes() const { return 0; }
int Device::vector_registers() const { return 16; }
int64_t Device::last_level_cache_bytes() const { return 0; }
int64_t Device::l2_cache_bytes() const { return 0; }
std::string Device::language() const { return "C"; }
int Device::max_local_size() const { return 0; }
int64_t Device::local_memory_bytes() const { return 0; }
bool Device::prefers_work_groups() const { return max_local_size() > 1; }

double Program::launch_grid(const std::vector<void*>& bufs, const std::vector<int64_t>& vals, const LaunchDims& dims,
                            bool wait) {
  const bool one_dimension = dims.global[1] == 1 && dims.global[2] == 1;
  const bool groups_of_one = dims.local == std::array<int64_t, 3>{1, 1, 1};
  if (!one_dimension || !groups_of_one)
    throw_error("launch: expected {n, 1, 1} work-items in groups of one (this device has no work-groups), got global [",
                dims.global[0], ", ", dims.global[1], ", ", dims.global[2], "] local [", dims.local[0], ", ",
                dims.local[1], ", ", dims.local[2], "]");
  return launch(bufs, vals, dims.global[0], wait);
}

std::unique_ptr<Program> load_compiled(Device& dev, const std::string& binary, const std::string& source,
                                       const std::string& function_name) {
  try {
    return dev.load(binary, function_name);
  } catch (const Error& e) {
    std::fprintf(stderr, "kiln: %s; compiling it again\n", e.what());
    return dev.load(dev.compiler().recompile(source), function_name);
  }
}

namespace {

struct Entry {
  std::function<std::unique_ptr<Device>()> factory;
  int priority = 0;
  std::unique_ptr<Device> device;  // created on first get_device
};

struct Registry {
  // Recursive: registering the built-in devices happens inside the first lookup, and a device
  // factory may itself look up another device.
  std::recursive_mutex mu;
  bool builtins_registered = false;
  std::map<std::string, Entry> entries;  // keyed by canonical name
  // default_device()'s answer and the environment generation it was chosen in; a registration
  // clears it (every realize asks, and DEV and the priorities rarely change)
  std::string chosen_default;
  uint64_t chosen_in_generation = 0;
};

// The registry with the built-in devices in it, and its lock held for the caller (one lock per
// lookup: every realize looks devices up).
struct LockedRegistry {
  Registry& reg;
  std::unique_lock<std::recursive_mutex> lock;
};
LockedRegistry registry() {
  static Registry reg;
  std::unique_lock lock(reg.mu);
  if (!reg.builtins_registered) {
    reg.builtins_registered = true;  // set first: register_builtin_devices re-enters registry()
    register_builtin_devices();
  }
  return {reg, std::move(lock)};
}

// "cpu:0" -> "CPU".
std::string canonical_name(const std::string& name) {
  std::string base = name.substr(0, name.find(':'));
  std::transform(base.begin(), base.end(), base.begin(), [](unsigned char c) { return std::toupper(c); });
  return base;
}

std::string joined_names(const Registry& reg) {
  std::string out;
  for (const auto& [name, entry] : reg.entries) out += (out.empty() ? "" : ", ") + name;
  return out;
}

// DEV, or else the registered device of the highest priority. Callers hold reg.mu.
std::string choose_default_device(const Registry& reg) {
  if (std::string dev = env::get_string("DEV"); !dev.empty()) {
    std::string key = canonical_name(dev);
    if (!reg.entries.count(key)) {
      throw_error("DEV=", dev, " is not a registered device; choices: ", joined_names(reg));
    }
    return key;
  }
  // Highest priority wins; ties go to the alphabetically first name so the choice is stable.
  const std::string* best = nullptr;
  int best_priority = 0;
  for (const auto& [name, entry] : reg.entries) {
    if (!best || entry.priority > best_priority) best = &name, best_priority = entry.priority;
  }
  if (!best) throw_error("no devices are registered");
  return *best;
}

}  // namespace

void register_device(const std::string& name, std::function<std::unique_ptr<Device>()> factory, int priority) {
  std::string key = canonical_name(name);
  if (key.empty()) throw_error("register_device: empty device name");
  if (!factory) throw_error("register_device: no factory given for ", key);
  auto [reg, lock] = registry();
  Entry& entry = reg.entries[key];
  entry.factory = std::move(factory);
  entry.priority = priority;
  reg.chosen_default.clear();
}

Device& get_device(const std::string& name) {
  auto [reg, lock] = registry();
  // Buffers carry canonical names: try the name as it is before canonicalizing it.
  auto it = reg.entries.find(name);
  if (it == reg.entries.end()) it = reg.entries.find(canonical_name(name));
  if (it == reg.entries.end()) {
    throw_error("unknown device '", name, "'; registered devices: ", joined_names(reg));
  }
  Entry& entry = it->second;
  if (!entry.device) {
    entry.device = entry.factory();
    if (!entry.device) throw_error("device factory for ", it->first, " returned no device");
    if (env::debug_level() >= 1)
      std::fprintf(stderr, "opened device %s (%d threads)\n", it->first.c_str(), entry.device->max_threads());
  }
  return *entry.device;
}

std::string default_device() {
  auto [reg, lock] = registry();
  const uint64_t generation = env::generation();
  if (reg.chosen_default.empty() || reg.chosen_in_generation != generation) {
    reg.chosen_default = choose_default_device(reg);
    reg.chosen_in_generation = generation;
  }
  return reg.chosen_default;
}

std::vector<std::string> device_names() {
  auto [reg, lock] = registry();
  std::vector<std::string> names;
  for (const auto& [name, entry] : reg.entries) names.push_back(name);
  return names;
}

}  // namespace kiln::runtime
