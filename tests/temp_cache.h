#pragma once
// A fresh KILN_CACHE folder for one test, removed afterwards, so cache behaviour is known.
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/env.h"

namespace kt {

struct TempCache {
  std::filesystem::path dir;
  kiln::env::ScopedEnv env;
  TempCache() : dir(make_dir()), env("KILN_CACHE", dir.string()) {}
  ~TempCache() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  static std::filesystem::path make_dir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kiln-test-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    return pattern;
  }
  // The names of the files the cache holds, in every subfolder.
  std::vector<std::string> files() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir))
      if (entry.is_regular_file()) names.push_back(entry.path().filename().string());
    return names;
  }
};

}  // namespace kt
