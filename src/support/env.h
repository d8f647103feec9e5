#pragma once
// Settings read from the environment in one place (DEBUG, NOOPT, BEAM, DEV, KILN_CACHE, CC, ...).
// Each is read once at first use; tests may override a value for a scope with ScopedEnv.
#include <string>

namespace kiln::env {

// Integer setting, e.g. get_int("DEBUG", 0). Unparseable values count as the default.
int get_int(const std::string& name, int default_value);
// String setting; empty when unset.
std::string get_string(const std::string& name, const std::string& default_value = "");

// Overrides a setting for the lifetime of this object (restores the previous value after).
class ScopedEnv {
 public:
  ScopedEnv(std::string name, std::string value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  bool had_value_;
  std::string previous_;
};

inline int debug_level() { return get_int("DEBUG", 0); }

}  // namespace kiln::env
