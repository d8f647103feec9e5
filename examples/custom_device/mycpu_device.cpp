// MYCPU: a complete kiln device written outside the library, against <kiln/device.h> only.
//   memory   one arena reserved up front and handed out in blocks; the host reaches it only
//            through explicit copies, as it would reach a card's memory over a bus
//   compiler kiln's "C" kernels -> shared objects, built by the system C compiler (cc) and kept in
//            kiln's disk cache
//   program  a kernel loaded with dlopen, run on one thread per core_id
#include "mycpu_device.h"

#include <dlfcn.h>
#include <kiln/device.h>
#include <kiln/error.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

namespace mycpu {
namespace {

using namespace kiln::runtime;
using kiln::throw_error;

constexpr size_t kArenaBytes = size_t(256) << 20;
constexpr size_t kAlignment = 64;  // so kernels may use aligned vector loads
constexpr int kCores = 4;

class ArenaAllocator final : public Allocator {
 public:
  ArenaAllocator() : base_(static_cast<char*>(std::aligned_alloc(kAlignment, kArenaBytes))) {
    if (!base_) throw_error("MYCPU: could not reserve its ", kArenaBytes, "-byte arena");
    free_blocks_[0] = kArenaBytes;
  }
  ~ArenaAllocator() override { std::free(base_); }

  // First fit. A 0-byte request still gets a block of its own, so every handle is distinct.
  void* alloc(size_t bytes) override {
    if (bytes > kArenaBytes) throw_error("MYCPU out of memory: ", bytes, " bytes asked, the arena holds ", kArenaBytes);
    const size_t size = block_size(bytes);
    std::lock_guard lock(mu_);
    for (auto it = free_blocks_.begin(); it != free_blocks_.end(); ++it) {
      if (it->second < size) continue;
      auto [offset, free_size] = *it;
      free_blocks_.erase(it);
      if (free_size > size) free_blocks_[offset + size] = free_size - size;
      return base_ + offset;
    }
    throw_error("MYCPU out of memory: no free block of ", bytes, " bytes left in its ", kArenaBytes, "-byte arena");
  }

  // Returns the block to the free list, merged with free neighbours so the arena does not fragment.
  void free(void* ptr, size_t bytes) override {
    size_t offset = offset_of(ptr, bytes, "free"), size = block_size(bytes);
    std::lock_guard lock(mu_);
    auto next = free_blocks_.lower_bound(offset);
    if (next != free_blocks_.end() && offset + size == next->first) {  // absorb the free block after it
      size += next->second;
      next = free_blocks_.erase(next);
    }
    auto prev = next == free_blocks_.begin() ? free_blocks_.end() : std::prev(next);
    if (prev != free_blocks_.end() && prev->first + prev->second == offset)
      prev->second += size;  // join the free block before it
    else
      free_blocks_[offset] = size;
  }

  // Real copies between host memory and the arena (a card's device would DMA here).
  void copyin(void* dst, const void* src, size_t bytes) override {
    offset_of(dst, bytes, "copyin");
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void copyout(void* dst, const void* src, size_t bytes) override {
    offset_of(src, bytes, "copyout");
    if (bytes) std::memcpy(dst, src, bytes);
  }

 private:
  static size_t block_size(size_t bytes) {
    return std::max(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
  }
  // Where `ptr` lies in the arena; a handle from elsewhere is an error, not a stray write.
  size_t offset_of(const void* ptr, size_t bytes, const char* call) const {
    const uintptr_t p = reinterpret_cast<uintptr_t>(ptr), base = reinterpret_cast<uintptr_t>(base_);
    if (p < base || p - base > kArenaBytes || bytes > kArenaBytes - (p - base))
      throw_error("MYCPU ", call, ": ", bytes, " bytes at ", ptr, " are not in its arena");
    return p - base;
  }

  char* base_;
  std::mutex mu_;
  std::map<size_t, size_t> free_blocks_;  // offset -> size
};

// Runs a command (each word quoted for the shell); returns its exit code, appends its output to `output`.
int run(const std::vector<std::string>& words, std::string& output) {
  std::string command;
  for (const std::string& word : words) {
    command += " '";
    for (char c : word) command += c == '\'' ? std::string("'\\''") : std::string(1, c);
    command += "'";
  }
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) throw_error("MYCPU: could not run", command);
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) output.append(buf, n);
  int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

class CcCompiler final : public Compiler {
 public:
  std::string name() const override { return "cc -O2 -shared -fPIC"; }
  std::string compile(const std::string& source) override { return build(source, false); }
  std::string recompile(const std::string& source) override { return build(source, true); }

 private:
  // The cache key names all the binary depends on: the source, the command and the compiler's version.
  std::string build(const std::string& source, bool rebuild) {
    static const std::string version = [] {
      std::string out;
      if (run({"cc", "--version"}, out) != 0) throw_error("MYCPU needs a C compiler named cc on PATH: ", out);
      return out;
    }();
    return cached_build("mycpu", source + '\0' + name() + '\0' + version, rebuild, [&](const std::string& output) {
      const std::string c_file = output + ".c";
      if (!(std::ofstream(c_file) << source)) throw_error("MYCPU: could not write ", c_file);
      std::string log;
      int rc = run({"cc", "-O2", "-shared", "-fPIC", "-o", output, c_file, "-lm"}, log);
      std::remove(c_file.c_str());
      if (rc != 0) throw_error("MYCPU: cc exited with ", rc, " on a kernel:\n", log, "source:\n", source);
    });
  }
};

class SharedObjectProgram final : public Program {
 public:
  SharedObjectProgram(const std::string& path, const std::string& function_name) {
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) throw_error("MYCPU: could not load kernel library ", path, ": ", dlerror());
    kernel_ = reinterpret_cast<Kernel>(dlsym(handle_, function_name.c_str()));
    if (!kernel_) {
      dlclose(handle_);
      throw_error("MYCPU: kernel library ", path, " has no function '", function_name, "'");
    }
  }
  ~SharedObjectProgram() override { dlclose(handle_); }
  SharedObjectProgram(const SharedObjectProgram&) = delete;
  SharedObjectProgram& operator=(const SharedObjectProgram&) = delete;

  // Always synchronous. core_id 0 runs on the calling thread, the others on threads of their own.
  double launch(const std::vector<void*>& bufs, const std::vector<int64_t>& vals, int64_t global_size, bool) override {
    if (global_size > kCores) throw_error("MYCPU launch: global_size ", global_size, " exceeds its ", kCores, " cores");
    const std::vector<long long> args(vals.begin(), vals.end());  // the ABI's type (int64_t is long)
    void** buffers = const_cast<void**>(bufs.data());             // kernels do not modify the array
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> others;
    for (int core = 1; core < global_size; ++core) others.emplace_back(kernel_, buffers, args.data(), core);
    kernel_(buffers, args.data(), 0);
    for (std::thread& t : others) t.join();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

 private:
  using Kernel = void (*)(void** bufs, const long long* vals, int core_id);
  void* handle_ = nullptr;
  Kernel kernel_ = nullptr;
};

// language() stays "C" and vector_bytes() 0: kiln writes scalar C kernels for it.
class MyCpuDevice final : public Device {
 public:
  MyCpuDevice() : Device("MYCPU") {}
  Allocator& allocator() override { return allocator_; }
  Compiler& compiler() override { return compiler_; }
  std::unique_ptr<Program> load(const std::string& binary, const std::string& function_name) override {
    return std::make_unique<SharedObjectProgram>(binary, function_name);
  }
  int max_threads() const override { return kCores; }

 private:
  ArenaAllocator allocator_;
  CcCompiler compiler_;
};

}  // namespace

void register_mycpu(int priority) {
  register_device("MYCPU", [] { return std::make_unique<MyCpuDevice>(); }, priority);
}

}  // namespace mycpu
