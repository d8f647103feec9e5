#pragma once
// Settings for a scope, as tinygrad's Context: kiln reads each setting (DEBUG, BEAM, NOOPT,
// SPLIT_REDUCEOP, ...) from the environment once, at first use, so changing the environment later
// (setenv) does not reach it. A Context overrides some settings until it is destroyed, then
// restores what they were; caches built under other settings (compiled kernels, dispatch plans)
// are not reused under these. TRAINING is Tensor::training for the scope (tinygrad's
// `Context(TRAINING=1)`). A name kiln does not read (a misspelt setting) is an error.
//
//   { kiln::Context ctx({{"BEAM", 2}, {"DEBUG", 2}});  y.realize(); }
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

class Context {
 public:
  struct Setting {
    Setting(std::string name, std::string value) : name(std::move(name)), value(std::move(value)) {}
    Setting(std::string name, int value) : name(std::move(name)), value(std::to_string(value)) {}
    std::string name, value;
  };
  explicit Context(std::initializer_list<Setting> settings);
  explicit Context(const std::vector<Setting>& settings);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // The names a Context accepts: the settings kiln reads, and TRAINING.
  static const std::vector<std::string>& known_settings();
  // Throws kiln::Error naming `name` and the known settings unless `name` is one of them.
  static void check_setting(const std::string& name);

 private:
  struct Overrides;
  std::unique_ptr<Overrides> overrides_;
};

}  // namespace kiln
