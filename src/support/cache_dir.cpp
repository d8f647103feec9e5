#include "support/cache_dir.h"

#include "kiln/error.h"
#include "support/env.h"

namespace kiln {

namespace fs = std::filesystem;

fs::path kernel_cache_dir(const std::string& device) {
  fs::path root;
  if (std::string dir = env::get_string("KILN_CACHE"); !dir.empty()) {
    root = dir;
  } else if (std::string xdg = env::get_string("XDG_CACHE_HOME"); !xdg.empty()) {
    root = fs::path(xdg) / "kiln";
  } else if (std::string home = env::get_string("HOME"); !home.empty()) {
    root = fs::path(home) / ".cache" / "kiln";
  } else {
    root = fs::temp_directory_path() / "kiln";
  }
  fs::path dir = root / device;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw_error("could not create the kernel cache folder ", dir.string(), ": ", ec.message());
  return dir;
}

}  // namespace kiln
