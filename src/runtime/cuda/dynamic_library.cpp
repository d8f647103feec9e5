#include "runtime/cuda/dynamic_library.h"

#include <dlfcn.h>

#include "kiln/error.h"

namespace kiln::runtime::cuda {

DynamicLibrary::DynamicLibrary(std::string what, const std::vector<std::string>& candidates) : what_(std::move(what)) {
  for (const std::string& name : candidates) {
    if ((handle_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL))) {
      description_ = name;
      return;
    }
    description_ += (description_.empty() ? "tried " : ", ") + name;
  }
}

void* DynamicLibrary::symbol(const char* name) const {
  if (!handle_) throw_error(what_, " is not available (", description_, ")");
  void* f = dlsym(handle_, name);
  if (!f) throw_error(what_, " (", description_, ") lacks the function ", name);
  return f;
}

}  // namespace kiln::runtime::cuda
