#pragma once
// Where compiled kernels are kept between processes.
#include <filesystem>
#include <string>

namespace kiln {

// $KILN_CACHE/<device>, else $XDG_CACHE_HOME/kiln/<device>, else $HOME/.cache/kiln/<device>, else
// a folder in the temporary directory; created if missing (kiln::Error naming it if it cannot be).
std::filesystem::path kernel_cache_dir(const std::string& device);

}  // namespace kiln
