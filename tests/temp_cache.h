#pragma once
// A fresh KILN_CACHE folder for one test, removed afterwards, so cache behaviour is known.
#include <filesystem>
#include <string>
#include <vector>

#include "support/env.h"
#include "temp_dir.h"

namespace kt {

struct TempCache {
  TempDir temp;
  const std::filesystem::path& dir = temp.dir;
  kiln::env::ScopedEnv env{"KILN_CACHE", dir.string()};
  // The names of the files the cache holds, in every subfolder.
  std::vector<std::string> files() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir))
      if (entry.is_regular_file()) names.push_back(entry.path().filename().string());
    return names;
  }
};

}  // namespace kt
