#pragma once
// A file that appears at its path whole or not at all: it is written to a unique temporary next to
// the path, flushed to disk, then renamed over the path. Readers see the old file or the new one.
#include <cstddef>
#include <string>

namespace kiln {

class AtomicFile {
 public:
  // Creates the temporary (path + ".tmp.<pid>.<n>"); throws kiln::Error naming it if it cannot.
  explicit AtomicFile(std::string path);
  // Without commit(), the temporary is removed and the path is left as it was.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t bytes);  // all of it, or kiln::Error (e.g. disk full)
  void commit();                               // fsync, close and rename over the path

 private:
  [[noreturn]] void fail(const char* doing, const std::string& file) const;
  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
};

}  // namespace kiln
