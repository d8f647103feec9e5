#include "runtime/disk_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <atomic>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>

#include "kiln/error.h"
#include "support/env.h"
#include "support/hash.h"
#include "support/mapped_file.h"

namespace kiln::runtime::disk_cache {
namespace fs = std::filesystem;
namespace {

// The entry format's version is the magic's last character (and part of entry names).
constexpr char kMagic[8] = {'k', 'i', 'l', 'n', 'b', 'i', 'n', '1'};

// Host byte order: entries are keyed by the host CPU, so they never move between byte orders.
struct Footer {
  uint64_t binary_bytes;  // how many bytes precede the footer
  uint64_t checksum;      // fnv1a_64 of those bytes
  char magic[8];
};
static_assert(sizeof(Footer) == 24);

// A folder of entries the settings ask for, and the variable that asked ("" when none is set).
struct Configured {
  fs::path dir;
  std::string variable;
};

Configured configured(const std::string& device) {
  if (std::string dir = env::get_string("KILN_CACHE"); !dir.empty()) return {fs::path(dir) / device, "KILN_CACHE"};
  if (std::string xdg = env::get_string("XDG_CACHE_HOME"); !xdg.empty())
    return {fs::path(xdg) / "kiln" / device, "XDG_CACHE_HOME"};
  if (std::string home = env::get_string("HOME"); !home.empty())
    return {fs::path(home) / ".cache" / "kiln" / device, "HOME"};
  return {};
}

// Why entries cannot be written to `dir` ("" if they can), after creating it if missing.
std::string why_unusable(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return ec.message();
  if (access(dir.c_str(), W_OK | X_OK) != 0) return std::strerror(errno);
  return "";
}

// The private folder that stands in for unusable ones: made on first need, one per process, and
// removed at exit by the process that made it (not by a forked child that exits).
class Fallback {
 public:
  ~Fallback() {
    std::error_code ec;
    if (!root_.empty() && getpid() == owner_) fs::remove_all(root_, ec);
  }

  // The stand-in for `device`'s folder. `problem` says what is wrong with the configured folder;
  // it is printed once per `unusable` folder ("" for "no folder configured").
  fs::path stand_in(const std::string& device, const std::string& unusable, const std::string& problem) {
    std::lock_guard lock(mu_);
    if (root_.empty()) {
      std::error_code ec;
      fs::path temp = fs::temp_directory_path(ec);
      std::string pattern = ((ec ? fs::path("/tmp") : temp) / "kiln-cache-XXXXXX").string();
      if (!mkdtemp(pattern.data()))
        throw_error(problem, ", and no temporary folder can stand in: cannot create ", pattern, ": ",
                    std::strerror(errno));
      root_ = pattern;
      owner_ = getpid();
    }
    fs::path dir = root_ / device;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw_error(problem, ", and the temporary folder ", dir.string(), " cannot be created: ", ec.message());
    if (warned_.insert(unusable).second)
      std::fprintf(stderr, "kiln: %s; caching kernels in %s for this process instead\n", problem.c_str(),
                   root_.c_str());
    return dir;
  }

 private:
  std::mutex mu_;
  fs::path root_;
  pid_t owner_ = 0;
  std::set<std::string> warned_;
};

Fallback& fallback() {
  static Fallback f;
  return f;
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016" PRIx64, v);
  return buf;
}

}  // namespace

fs::path folder(const std::string& device) {
  Configured want = configured(device);
  if (want.variable.empty())
    return fallback().stand_in(device, "",
                               "no folder for the kernel cache: KILN_CACHE, XDG_CACHE_HOME and HOME are unset");
  std::string why = why_unusable(want.dir);
  if (why.empty()) return want.dir;
  return fallback().stand_in(device, want.dir.string(),
                             "cannot use the kernel cache folder " + want.dir.string() + " (from " + want.variable +
                                 "): " + why);
}

fs::path entry_path(const fs::path& folder, const std::string& key, const std::string& extension) {
  return folder / (key + ".v" + kMagic[7] + extension);
}

std::string payload(const fs::path& entry) {
  MappedFile file(entry.string());
  std::span<const uint8_t> bytes = file.bytes();
  if (bytes.size() < sizeof(Footer)) throw_error("kernel cache entry ", entry.string(), " is shorter than its footer");
  return std::string(bytes.begin(), bytes.end() - sizeof(Footer));
}

std::string unique_suffix() {
  static std::atomic<uint64_t> counter{0};
  return std::to_string(getpid()) + "-" + std::to_string(counter++);
}

std::string damage(const fs::path& entry) {
  std::optional<MappedFile> file;
  try {
    file.emplace(entry.string());
  } catch (const Error& e) {
    return e.what();
  }
  std::span<const uint8_t> bytes = file->bytes();
  if (bytes.size() < sizeof(Footer))
    return std::to_string(bytes.size()) + " bytes, fewer than its " + std::to_string(sizeof(Footer)) + "-byte footer";
  Footer footer;
  const size_t binary_bytes = bytes.size() - sizeof footer;
  std::memcpy(&footer, bytes.data() + binary_bytes, sizeof footer);
  if (std::memcmp(footer.magic, kMagic, sizeof kMagic) != 0)
    return "no kiln footer at its end: cut short, or not written by kiln";
  if (footer.binary_bytes != binary_bytes)
    return "its footer says " + std::to_string(footer.binary_bytes) + " bytes of binary, the file holds " +
           std::to_string(binary_bytes);
  const uint64_t checksum = fnv1a_64({reinterpret_cast<const char*>(bytes.data()), binary_bytes});
  if (checksum != footer.checksum)
    return "its binary's checksum is " + hex(checksum) + ", its footer says " + hex(footer.checksum);
  return "";
}

bool holds(const fs::path& entry) {
  std::error_code ec;
  if (!fs::exists(entry, ec)) return false;
  const std::string why = damage(entry);
  if (why.empty()) return true;
  std::fprintf(stderr, "kiln: kernel cache entry %s is damaged (%s); building it again\n", entry.c_str(), why.c_str());
  return false;
}

// No fsync: a cache needs no durability. An entry torn by a power cut fails damage() and is
// rebuilt, and skipping the flush saves milliseconds per kernel on real disks.
void publish(const fs::path& file, const fs::path& entry) {
  Footer footer{};
  {
    MappedFile binary(file.string());
    std::span<const uint8_t> bytes = binary.bytes();
    footer.binary_bytes = bytes.size();
    footer.checksum = fnv1a_64({reinterpret_cast<const char*>(bytes.data()), bytes.size()});
  }
  std::memcpy(footer.magic, kMagic, sizeof kMagic);
  int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) throw_error("cannot open ", file.string(), " to append the cache footer: ", std::strerror(errno));
  errno = 0;
  const bool appended = ::write(fd, &footer, sizeof footer) == static_cast<ssize_t>(sizeof footer);
  const int write_error = errno != 0 ? errno : EIO;  // a short write sets no errno
  if (::close(fd) != 0 || !appended)
    throw_error("cannot append the cache footer to ", file.string(), ": ",
                std::strerror(appended ? errno : write_error));
  if (::rename(file.c_str(), entry.c_str()) != 0)
    throw_error("cannot rename ", file.string(), " to ", entry.string(), ": ", std::strerror(errno));
}

void store(const fs::path& entry, const std::string& binary) {
  const fs::path temp = entry.string() + "." + unique_suffix() + ".tmp";
  {
    std::ofstream out(temp, std::ios::binary);
    out.write(binary.data(), static_cast<std::streamsize>(binary.size()));
    if (!out) throw_error("could not write ", temp.string());
  }
  publish(temp, entry);
}

}  // namespace kiln::runtime::disk_cache
