#pragma once
// The VIZ page's files (web/), compiled into the library at build time by cmake/embed_files.cmake,
// so the page needs neither the source tree nor a network when it is viewed.
#include <cstddef>
#include <span>

namespace kiln::viz {

struct WebAsset {
  const char* path;  // as served: "/index.html", "/js/app.js", ...
  const unsigned char* data;
  size_t size;
};

std::span<const WebAsset> web_assets();

}  // namespace kiln::viz
