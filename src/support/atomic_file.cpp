#include "support/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "kiln/error.h"

namespace kiln {
namespace {

std::atomic<unsigned> g_temp_counter{0};

// The directory holding `path`, so the rename itself can be made durable.
std::string parent_directory(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  // O_EXCL makes the name ours alone; pid + counter make a clash with another writer unlikely, and
  // a clash with a stale temporary just moves on to the next name.
  for (int attempt = 0; fd_ < 0; ++attempt) {
    temp_path_ = path_ + ".tmp." + std::to_string(getpid()) + "." + std::to_string(g_temp_counter++);
    fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && (errno != EEXIST || attempt == 100)) fail("cannot create", temp_path_);
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlink(temp_path_.c_str());
}

void AtomicFile::fail(const char* doing, const std::string& file) const {
  throw_error(doing, " ", file, ": ", std::strerror(errno));
}

void AtomicFile::write(const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::write(fd_, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("cannot write", temp_path_);
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) fail("cannot flush", temp_path_);
  int fd = std::exchange(fd_, -1);  // the destructor must not remove what rename may have moved
  if (::close(fd) != 0 || ::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    int err = errno;
    ::unlink(temp_path_.c_str());
    throw_error("cannot close and rename ", temp_path_, " to ", path_, ": ", std::strerror(err));
  }
  // Make the rename durable too; some filesystems cannot sync a directory, which loses nothing.
  int dir = ::open(parent_directory(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

}  // namespace kiln
