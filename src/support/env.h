#pragma once
// Settings read from the environment in one place (DEBUG, NOOPT, BEAM, DEV, KILN_CACHE, CC, ...).
// Each is read once at first use; tests may override a value for a scope with ScopedEnv.
#include <cstdint>
#include <string>

namespace kiln::env {

// Integer setting, e.g. get_int("DEBUG", 0); a value that is not an integer is an error.
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

// Counts the changes ScopedEnv has made: a cache of anything derived from settings stays valid
// while the generation it was built in is current.
uint64_t generation();

// DEBUG. Every launch asks it, so it is kept until the settings change rather than looked up.
int debug_level();

}  // namespace kiln::env
