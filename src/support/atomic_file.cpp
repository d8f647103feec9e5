#include "support/atomic_file.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
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

// `path` with its symbolic links followed to the file they name (which may not exist yet, as a new
// file does not), so that saving replaces the target and keeps the link.
std::string follow_links(std::string path) {
  constexpr int kMaxLinks = 40;  // the kernel's own limit (ELOOP)
  for (int links = 0;; ++links) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return path;
    if (links == kMaxLinks) throw_error(path, ": too many levels of symbolic links");
    std::string target(PATH_MAX, '\0');
    ssize_t n = ::readlink(path.c_str(), target.data(), target.size());
    if (n < 0) throw_error("cannot read the symbolic link ", path, ": ", std::strerror(errno));
    target.resize(static_cast<size_t>(n));
    // A relative target is relative to the directory holding the link.
    path = target.starts_with('/') ? target : parent_directory(path) + "/" + target;
  }
}

// Only a regular file (or nothing) may be replaced: renaming over a FIFO, a device or a socket
// would silently turn it into a file, and a directory cannot be written at all.
void check_replaceable(const std::string& given, const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return;  // missing: created anew
  const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                     : S_ISFIFO(st.st_mode) ? "a FIFO"
                     : S_ISCHR(st.st_mode)  ? "a character device"
                     : S_ISBLK(st.st_mode)  ? "a block device"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                                            : "not a regular file";
  throw_error(given == path ? "it is " : "its links lead to " + path + ", ", kind,
              "; expected a regular file to replace or a path that does not exist yet");
}

}  // namespace

AtomicFile::AtomicFile(const std::string& path) : path_(follow_links(path)) {
  check_replaceable(path, path_);
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
