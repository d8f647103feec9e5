// The disk cache for any device's compiler (kiln/device.h): look an entry up, else build and publish it.
#include <filesystem>
#include <fstream>
#include <system_error>

#include "kiln/device.h"
#include "kiln/error.h"
#include "runtime/compiler.h"
#include "runtime/disk_cache.h"
#include "support/hash.h"

namespace kiln::runtime {
namespace fs = std::filesystem;

std::string cached_build(const std::string& device, const std::string& key, bool rebuild,
                         const std::function<void(const std::string& output_path)>& build) {
  const fs::path folder = disk_cache::folder(device);
  const fs::path entry = disk_cache::entry_path(folder, content_hash(key), ".bin");
  if (!rebuild && disk_cache::holds(entry)) {
    ++compile_stats().cache_hits;
    return entry.string();
  }
  // Built next to the entry, so the finished binary is renamed into place, never copied; removed if
  // the build fails (after a successful publish it no longer exists).
  const fs::path output = entry.string() + "." + disk_cache::unique_suffix() + ".tmp";
  struct RemoveOnExit {
    const fs::path& path;
    ~RemoveOnExit() {
      std::error_code ec;
      fs::remove(path, ec);
    }
  } remove_on_exit{output};
  build(output.string());
  disk_cache::publish(output, entry);
  ++compile_stats().compiled;
  return entry.string();
}

std::string cached_binary(const std::string& entry_path) { return disk_cache::payload(entry_path); }

std::string cached_bytes(const std::string& device, const std::string& key, bool rebuild,
                         const std::function<std::string()>& build) {
  return cached_binary(cached_build(device, key, rebuild, [&](const std::string& output_path) {
    const std::string bytes = build();
    std::ofstream out(output_path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) throw_error("cannot write the compiled binary to ", output_path);
  }));
}

}  // namespace kiln::runtime
