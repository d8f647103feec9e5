#pragma once
// A file that appears at its path whole or not at all: it is written to a unique temporary next to
// the path, flushed to disk, then renamed over the path. Readers see the old file or the new one.
// A path that is a symbolic link is written through: the link stays, its target is replaced.
#include <cstddef>
#include <string>

namespace kiln {

class AtomicFile {
 public:
  // Creates the temporary (target + ".tmp.<pid>.<n>"); throws kiln::Error naming it if it cannot,
  // and if the path (or the target its links lead to) is something other than a regular file: a
  // directory, a FIFO or a device is never replaced.
  explicit AtomicFile(const std::string& path);
  // Without commit(), the temporary is removed and the path is left as it was.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t bytes);  // all of it, or kiln::Error (e.g. disk full)
  void commit();                               // fsync, close and rename over the path

 private:
  [[noreturn]] void fail(const char* doing, const std::string& file) const;
  std::string path_;  // the file the rename replaces: the given path with its symbolic links followed
  std::string temp_path_;
  int fd_ = -1;
};

}  // namespace kiln
