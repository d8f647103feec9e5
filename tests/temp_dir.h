#pragma once
// A fresh temporary folder, removed with everything in it when the owner goes away.
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace kt {

struct TempDir {
  std::filesystem::path dir;
  explicit TempDir(const std::string& prefix = "kiln-test") : dir(make(prefix)) {}
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& name) const { return (dir / name).string(); }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  static std::filesystem::path make(const std::string& prefix) {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
    return pattern;
  }
};

}  // namespace kt
