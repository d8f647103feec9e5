#pragma once
// A shared library opened at run time (dlopen), so kiln builds and runs on machines without it:
// the CUDA device loads the driver (libcuda) and NVRTC this way instead of linking them.
#include <string>
#include <vector>

namespace kiln::runtime::cuda {

class DynamicLibrary {
 public:
  // Opens the first of `candidates` (names the loader searches, or paths) that loads; `what` names
  // the library in errors. An empty library (loaded() false) when none does. It is never closed:
  // what it made (contexts, modules) may be released during exit, after its owner is gone.
  DynamicLibrary(std::string what, const std::vector<std::string>& candidates);
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;

  bool loaded() const { return handle_ != nullptr; }
  // Where it was loaded from, or what was tried (for messages).
  const std::string& description() const { return description_; }
  // The function `name` as a pointer of type F; throws kiln::Error if the library is not loaded or
  // lacks it (e.g. a driver older than the functions kiln calls).
  template <typename F>
  F function(const char* name) const {
    return reinterpret_cast<F>(symbol(name));
  }

 private:
  void* symbol(const char* name) const;

  std::string what_, description_;
  void* handle_ = nullptr;
};

}  // namespace kiln::runtime::cuda
