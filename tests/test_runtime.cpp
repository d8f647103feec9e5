// Tests for the runtime layer: hashing, the thread pool, CPU memory, compiling and launching
// kernels, the compile cache and the device registry.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kiln/error.h"
#include "runtime/cc_compiler.h"
#include "runtime/cpu_allocator.h"
#include "runtime/device.h"
#include "runtime/disk_cache.h"
#include "support/env.h"
#include "error_message.h"
#include "process_tree.h"
#include "temp_cache.h"
#include "support/hash.h"
#include "support/thread_pool.h"

// Under AddressSanitizer, let the out-of-memory test see aligned_alloc return null (as it does
// in normal builds) instead of ASan aborting the process. Unused in other builds.
extern "C" __attribute__((used)) const char* __asan_default_options() { return "allocator_may_return_null=1"; }

namespace kiln::runtime {
namespace {

namespace fs = std::filesystem;

using kt::TempCache;

using kt::error_of;

// out[i] = a[i] * a[i] + 1 for i < vals[0], the range split into 4 parts by core_id.
const char* kSquareKernel = R"(
void k(void** bufs, const long long* vals, int core_id) {
  float* out = (float*)bufs[0];
  const float* a = (const float*)bufs[1];
  int n = (int)vals[0];
  int chunk = (n + 3) / 4;
  int start = core_id * chunk;
  int end = start + chunk < n ? start + chunk : n;
  for (int i = start; i < end; i++) out[i] = a[i] * a[i] + 1.0f;
}
)";

// out[i] = a[i] * a[i] + plus for i < vals[0], all on core 0: launched with global size 1 it runs
// inline, without the thread pool (which a forked child has no threads for).
std::string single_core_kernel(int plus) {
  return "void k(void** bufs, const long long* vals, int core_id) {\n"
         "  float* out = (float*)bufs[0];\n"
         "  const float* a = (const float*)bufs[1];\n"
         "  for (long long i = 0; i < vals[0]; i++) out[i] = a[i] * a[i] + " + std::to_string(plus) + ".0f;\n"
         "}\n";
}

// Whether `program`, built from single_core_kernel(plus), computes that. (Every value is exact in
// float, fused multiply-add or not.)
bool computes(Program& program, int plus) {
  const int n = 1003;
  std::vector<float> a(n), out(n, -1.0f);
  for (int i = 0; i < n; ++i) a[i] = 0.25f * float(i) - 50.0f;
  program.launch({out.data(), a.data()}, {n}, 1, true);
  for (int i = 0; i < n; ++i)
    if (out[i] != a[i] * a[i] + float(plus)) return false;
  return true;
}

// Compiles single_core_kernel(plus), loads it and runs it: whether it computes that.
bool compiles_and_computes(int plus) {
  std::unique_ptr<Program> program = get_device("CPU").load(CcCompiler().compile(single_core_kernel(plus)), "k");
  return computes(*program, plus);
}

// After a compile, this process's one child: the next compile's compiler, waiting for its source.
pid_t waiting_compiler() {
  const std::vector<pid_t> children = kt::child_processes();
  EXPECT_EQ(children.size(), 1u);
  return children.empty() ? -1 : children[0];
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// stderr captured from construction until text(); a test that throws before text() still ends
// the capture (gtest aborts on a second one).
class CapturedStderr {
 public:
  CapturedStderr() { testing::internal::CaptureStderr(); }
  ~CapturedStderr() {
    if (capturing_) testing::internal::GetCapturedStderr();
  }
  std::string text() {
    capturing_ = false;
    return testing::internal::GetCapturedStderr();
  }

 private:
  bool capturing_ = true;
};

TEST(Hash, Fnv1a64KnownVectors) {
  EXPECT_EQ(fnv1a_64(""), 0xcbf29ce484222325u);
  EXPECT_EQ(fnv1a_64("a"), 0xaf63dc4c8601ec8cu);
  EXPECT_EQ(fnv1a_64("foobar"), 0x85944171f73967e8u);
}

TEST(Hash, Sha256KnownVectors) {
  EXPECT_EQ(content_hash(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(content_hash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the padding spills into a second block.
  EXPECT_EQ(content_hash("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(content_hash(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  EXPECT_EQ(content_hash(std::string_view("a\0b", 3)).size(), 64u);
  EXPECT_NE(content_hash(std::string_view("a\0b", 3)), content_hash("a"));
}

TEST(ThreadPool, RunsEveryTaskExactlyOnce) {
  ThreadPool pools[] = {ThreadPool(1), ThreadPool(4)};
  for (ThreadPool* pool : {&pools[0], &pools[1], &ThreadPool::global()}) {
    for (int n : {0, 1, 7, 1000}) {
      std::vector<std::atomic<int>> counts(n);
      pool->run(n, [&](int task) { counts[task]++; });
      for (int i = 0; i < n; ++i) ASSERT_EQ(counts[i].load(), 1) << "task " << i << " of " << n;
    }
  }
  EXPECT_EQ(pools[1].size(), 4);
  EXPECT_GE(ThreadPool::global().size(), 1);
}

TEST(ThreadPool, RethrowsTaskException) {
  ThreadPool pool(4);
  EXPECT_THROW(pool.run(100, [](int task) {
    if (task == 37) throw std::runtime_error("task 37 failed");
  }),
               std::runtime_error);
  EXPECT_THROW(pool.run(1, [](int) { throw Error("inline"); }), Error);
  // Still usable afterwards.
  std::atomic<int> sum{0};
  pool.run(10, [&](int task) { sum += task; });
  EXPECT_EQ(sum.load(), 45);
}

TEST(ThreadPool, NestedRunRunsInline) {
  ThreadPool pool(3);
  std::atomic<int> count{0};
  pool.run(4, [&](int) { pool.run(5, [&](int) { count++; }); });
  EXPECT_EQ(count.load(), 20);
}

TEST(ThreadPool, ConcurrentCallersAreSerialized) {
  ThreadPool pool(3);
  std::atomic<int> count{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      for (int rep = 0; rep < 50; ++rep) pool.run(8, [&](int) { count++; });
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(count.load(), 4 * 50 * 8);
}

TEST(CpuAllocator, AlignmentRoundTripAndSizeZero) {
  CpuAllocator alloc;
  int64_t before = cpu_bytes_in_use();
  void* p = alloc.alloc(1000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  EXPECT_EQ(cpu_bytes_in_use(), before + 1000);

  std::vector<unsigned char> in(1000), out(1000, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<unsigned char>(i * 7);
  alloc.copyin(p, in.data(), in.size());
  alloc.copyout(out.data(), p, out.size());
  EXPECT_EQ(in, out);

  void* z1 = alloc.alloc(0);
  void* z2 = alloc.alloc(0);
  EXPECT_NE(z1, nullptr);
  EXPECT_NE(z1, z2);
  alloc.copyin(z1, nullptr, 0);
  alloc.copyout(nullptr, z1, 0);
  alloc.free(z1, 0);
  alloc.free(z2, 0);
  alloc.free(p, 1000);
  EXPECT_EQ(cpu_bytes_in_use(), before);
}

TEST(CpuAllocator, OutOfMemoryIsAnError) {
  CpuAllocator alloc;
  std::string msg = error_of([&] { alloc.alloc(size_t(1) << 62); });
  EXPECT_NE(msg.find("out of memory"), std::string::npos) << msg;
}

TEST(CpuDevice, CompilesAndLaunchesKernel) {
  TempCache cache;
  Device& cpu = get_device("CPU");
  EXPECT_EQ(cpu.name(), "CPU");
  EXPECT_GE(cpu.max_threads(), 1);

  const int n = 1003;
  std::vector<float> a(n), out(n, -1.0f);
  for (int i = 0; i < n; ++i) a[i] = 0.25f * float(i) - 50.0f;
  Allocator& mem = cpu.allocator();
  void* out_buf = mem.alloc(n * sizeof(float));
  void* a_buf = mem.alloc(n * sizeof(float));
  mem.copyin(a_buf, a.data(), n * sizeof(float));

  std::unique_ptr<Program> program = cpu.load(cpu.compiler().compile(kSquareKernel), "k");
  double seconds = program->launch({out_buf, a_buf}, {n}, 4, true);
  EXPECT_GE(seconds, 0.0);
  mem.copyout(out.data(), out_buf, n * sizeof(float));
  for (int i = 0; i < n; ++i) ASSERT_FLOAT_EQ(out[i], a[i] * a[i] + 1.0f) << "at " << i;

  mem.free(out_buf, n * sizeof(float));
  mem.free(a_buf, n * sizeof(float));
}

// The register facts the code generator sizes its tiles by, against the kernel's own list of the
// processor's features (/proc/cpuinfo): AVX-512 has 32 registers of 64 bytes, AVX2 16 of 32.
TEST(CpuDevice, VectorRegistersMatchTheProcessorsFeatures) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line) && line.rfind("flags", 0) != 0) {}
  if (line.empty()) GTEST_SKIP() << "no flags line in /proc/cpuinfo";
  auto has = [&](const std::string& flag) { return (line + " ").find(" " + flag + " ") != std::string::npos; };
  const Device& cpu = get_device("CPU");
  if (has("avx512f")) {
    EXPECT_EQ(cpu.vector_bytes(), 64);
    EXPECT_EQ(cpu.vector_registers(), 32);
  } else if (has("avx2")) {
    EXPECT_EQ(cpu.vector_bytes(), 32);
    EXPECT_EQ(cpu.vector_registers(), 16);
  } else {
    EXPECT_EQ(cpu.vector_registers(), 16);
  }
}

TEST(CpuDevice, GlobalSizeZeroRunsOnce) {
  TempCache cache;
  Device& cpu = get_device("CPU");
  auto program = cpu.load(cpu.compiler().compile(
                              "void count(void** bufs, const long long* vals, int core_id) { ((int*)bufs[0])[0] += 1; }"),
                          "count");
  int calls = 0;
  program->launch({&calls}, {}, 0, true);
  EXPECT_EQ(calls, 1);
}

TEST(CpuDevice, MissingFunctionIsAnError) {
  TempCache cache;
  Device& cpu = get_device("CPU");
  std::string binary = cpu.compiler().compile(kSquareKernel);
  std::string msg = error_of([&] { cpu.load(binary, "not_there"); });
  EXPECT_NE(msg.find("not_there"), std::string::npos) << msg;
}

TEST(CcCompiler, SecondCompileIsCacheHit) {
  TempCache cache;
  CcCompiler cc;
  CompileStats before = compile_stats();
  std::string first = cc.compile(kSquareKernel);
  EXPECT_EQ(compile_stats().compiled, before.compiled + 1);
  EXPECT_EQ(compile_stats().cache_hits, before.cache_hits);
  EXPECT_EQ(fs::path(first).parent_path(), cache.dir / "cpu");

  std::string second = cc.compile(kSquareKernel);
  EXPECT_EQ(second, first);
  EXPECT_EQ(compile_stats().compiled, before.compiled + 1);
  EXPECT_EQ(compile_stats().cache_hits, before.cache_hits + 1);
  // Only the finished binary is left: no temporary source or half-written files.
  EXPECT_EQ(cache.files(), std::vector<std::string>{fs::path(first).filename().string()});
}

TEST(CcCompiler, ConcurrentCompilesOfOneSourceAgree) {
  TempCache cache;
  CcCompiler cc;
  std::vector<std::string> paths(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back([&, i] { paths[i] = cc.compile(kSquareKernel); });
  for (std::thread& t : threads) t.join();
  for (const std::string& p : paths) EXPECT_EQ(p, paths[0]);
  EXPECT_EQ(cache.files().size(), 1u);
}

// After a compile the next one's compiler process is already started, waiting for its source; the
// next compile uses it (and starts another).
TEST(CcCompiler, NextCompilerIsStartedAhead) {
  TempCache cache;
  EXPECT_TRUE(compiles_and_computes(1));
  const pid_t spare = waiting_compiler();
  EXPECT_EQ(kt::command_line(spare).rfind(CcCompiler().name(), 0), 0u) << kt::command_line(spare);
  EXPECT_TRUE(compiles_and_computes(2));
  EXPECT_NE(waiting_compiler(), spare);
}

// A started compiler that died while it waited is replaced, and the compile does not fail.
TEST(CcCompiler, DeadSpareCompilerIsReplaced) {
  TempCache cache;
  EXPECT_TRUE(compiles_and_computes(3));
  ASSERT_EQ(kill(waiting_compiler(), SIGKILL), 0);
  EXPECT_TRUE(compiles_and_computes(4));
}

// A different CC gets its own compiler process, not the one started for the last.
TEST(CcCompiler, SpareCompilerFollowsCC) {
  TempCache cache;
  EXPECT_TRUE(compiles_and_computes(5));
  env::ScopedEnv cc_env("CC", "gcc");
  EXPECT_TRUE(compiles_and_computes(6));
  EXPECT_NE(kt::command_line(waiting_compiler()).find("gcc"), std::string::npos);
}

// However an entry is damaged, the next compile says so once, builds it again and replaces it.
TEST(DiskCache, DamagedEntryIsRebuilt) {
  const std::string source = single_core_kernel(1);
  struct Damage {
    std::string name;
    std::function<std::string(const std::string&)> apply;  // entry bytes -> damaged bytes
    std::string reason;                                     // part of the warning
  };
  const std::vector<Damage> damages = {
      {"garbage", [](const std::string& b) { return std::string(b.size(), '\x5a'); }, "no kiln footer"},
      {"zero-length", [](const std::string&) { return std::string(); }, "0 bytes, fewer than its 24-byte footer"},
      {"half-written", [](const std::string& b) { return b.substr(0, b.size() / 2); }, "no kiln footer"},
      {"first byte lost", [](const std::string& b) { return b.substr(1); }, "bytes of binary, the file holds"},
      {"a byte changed", [](std::string b) { b[b.size() / 3] ^= 1; return b; }, "checksum"},
  };
  for (const Damage& damage : damages) {
    SCOPED_TRACE(damage.name);
    TempCache cache;  // a new folder, so dlopen has never seen this entry's path
    CcCompiler cc;
    const std::string entry = cc.compile(source);
    write_file(entry, damage.apply(read_file(entry)));
    EXPECT_NE(disk_cache::damage(entry).find(damage.reason), std::string::npos) << disk_cache::damage(entry);

    CompileStats before = compile_stats();
    CapturedStderr captured;
    EXPECT_EQ(cc.compile(source), entry);
    const std::string warnings = captured.text();
    EXPECT_EQ(compile_stats().compiled, before.compiled + 1);
    EXPECT_EQ(count(warnings, "kiln: kernel cache entry " + entry + " is damaged ("), 1u) << warnings;
    EXPECT_NE(warnings.find(damage.reason), std::string::npos) << warnings;
    EXPECT_EQ(disk_cache::damage(entry), "");
    EXPECT_TRUE(computes(*get_device("CPU").load(entry, "k"), 1));
    EXPECT_EQ(cache.files().size(), 1u);  // the entry only: no work files left
  }
}

// Random damage to an entry (flipped bytes, cut or extended files, bytes overwritten near the
// footer): the reader either calls it whole, and then it holds exactly what was stored, or names
// what is wrong; it never crashes or reads past the file (ASan).
TEST(DiskCache, MutatedEntriesAreWholeOrDamaged) {
  TempCache cache;
  const fs::path entry = disk_cache::entry_path(disk_cache::folder("fuzz"), "entry", ".bin");
  std::string stored;
  for (int i = 0; i < 300; i++) stored += static_cast<char>(i * 7);
  disk_cache::store(entry, stored);
  const std::string whole = read_file(entry);
  ASSERT_EQ(disk_cache::damage(entry), "");
  std::mt19937 rng(20261125);
  auto below = [&](size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  int intact = 0, damaged = 0;
  const int iterations = kt::fuzz_iterations(2000);
  for (int i = 0; i < iterations; i++) {
    std::string bytes = whole;
    switch (below(4)) {
      case 0: bytes[below(bytes.size())] ^= static_cast<char>(1 << below(8)); break;
      case 1: bytes.resize(below(bytes.size() + 1)); break;
      case 2: bytes += std::string(1 + below(30), static_cast<char>(below(256))); break;
      default:  // the footer region: its length, checksum or tag
        bytes[bytes.size() - 1 - below(std::min<size_t>(bytes.size(), 32))] = static_cast<char>(below(256));
    }
    write_file(entry, bytes);
    if (disk_cache::damage(entry).empty()) {
      EXPECT_EQ(disk_cache::payload(entry), stored) << "mutation " << i;
      intact++;
    } else {
      damaged++;
    }
  }
  EXPECT_GT(damaged, iterations / 2);
  EXPECT_GT(intact, 0);  // a byte overwritten with its own value
}

// A file under a valid footer that dlopen rejects passes the cache's checks; loading it fails,
// so it is compiled again once, replacing the entry, and the new one loads.
TEST(DiskCache, EntryThatDoesNotLoadIsRebuilt) {
  TempCache cache;
  const std::string source = single_core_kernel(2);
  Device& cpu = get_device("CPU");
  const std::string entry = cpu.compiler().compile(source);
  write_file(entry + ".fake", "not a shared object");
  disk_cache::publish(entry + ".fake", entry);
  ASSERT_EQ(disk_cache::damage(entry), "");

  CompileStats before = compile_stats();
  CapturedStderr captured;
  std::unique_ptr<Program> program = load_compiled(cpu, cpu.compiler().compile(source), source, "k");
  const std::string warnings = captured.text();
  EXPECT_EQ(compile_stats().cache_hits, before.cache_hits + 1);
  EXPECT_EQ(compile_stats().compiled, before.compiled + 1);
  EXPECT_EQ(count(warnings, "kiln: could not load CPU kernel library " + entry), 1u) << warnings;
  EXPECT_NE(warnings.find("; compiling it again"), std::string::npos) << warnings;
  EXPECT_TRUE(computes(*program, 2));
  EXPECT_EQ(disk_cache::damage(entry), "");
  EXPECT_EQ(read_file(entry).substr(0, 4), "\x7f" "ELF");
}

// A cache folder that cannot be created (a path under a regular file, which stops root too,
// unlike chmod) gives one warning naming it, the reason and the stand-in, and kernels still work.
TEST(DiskCache, UnusableFolderFallsBackToTemporaryOne) {
  TempCache cache;
  write_file(cache.dir / "file", "a file, not a folder");
  const fs::path wanted = cache.dir / "file" / "sub";
  env::ScopedEnv env("KILN_CACHE", wanted.string());
  CcCompiler cc;

  CapturedStderr captured;
  const std::string first = cc.compile(single_core_kernel(3));
  const std::string second = cc.compile(single_core_kernel(4));
  CompileStats before = compile_stats();
  EXPECT_EQ(cc.compile(single_core_kernel(3)), first);
  EXPECT_EQ(compile_stats().cache_hits, before.cache_hits + 1);
  const std::string warnings = captured.text();

  const fs::path stand_in = fs::path(first).parent_path();
  EXPECT_EQ(fs::path(second).parent_path(), stand_in);
  EXPECT_EQ(stand_in.filename(), "cpu");
  EXPECT_EQ(count(warnings, "kiln: "), 1u) << warnings;
  EXPECT_NE(warnings.find("cannot use the kernel cache folder " + (wanted / "cpu").string() +
                          " (from KILN_CACHE): Not a directory; caching kernels in " +
                          stand_in.parent_path().string() + " for this process instead"),
            std::string::npos)
      << warnings;
  Device& cpu = get_device("CPU");
  EXPECT_TRUE(computes(*cpu.load(first, "k"), 3));
  EXPECT_TRUE(computes(*cpu.load(second, "k"), 4));
}

TEST(DiskCache, ReadOnlyFolderFallsBackToTemporaryOne) {
  if (geteuid() == 0) GTEST_SKIP() << "root writes into read-only folders; the path-under-a-file test covers root";
  TempCache cache;
  fs::create_directory(cache.dir / "cpu");
  fs::permissions(cache.dir / "cpu", fs::perms::owner_read | fs::perms::owner_exec);
  CapturedStderr captured;
  const std::string binary = CcCompiler().compile(single_core_kernel(5));
  const std::string warnings = captured.text();
  fs::permissions(cache.dir / "cpu", fs::perms::owner_all);
  EXPECT_NE(fs::path(binary).parent_path(), cache.dir / "cpu");
  EXPECT_NE(warnings.find((cache.dir / "cpu").string() + " (from KILN_CACHE): Permission denied"), std::string::npos)
      << warnings;
  EXPECT_TRUE(computes(*get_device("CPU").load(binary, "k"), 5));
}

// With no folder configured at all (no KILN_CACHE, XDG_CACHE_HOME or HOME) kernels are cached in
// the private temporary folder. (Its warning comes once per process, so maybe not in this test.)
TEST(DiskCache, NoFolderConfiguredFallsBackToTemporaryOne) {
  env::ScopedEnv no_kiln_cache("KILN_CACHE", ""), no_xdg("XDG_CACHE_HOME", ""), no_home("HOME", "");
  CapturedStderr captured;
  const std::string binary = CcCompiler().compile(single_core_kernel(6));
  const std::string warnings = captured.text();
  EXPECT_EQ(fs::path(binary).parent_path().parent_path().filename().string().rfind("kiln-cache-", 0), 0u) << binary;
  EXPECT_LE(count(warnings, "no folder for the kernel cache: KILN_CACHE, XDG_CACHE_HOME and HOME are unset"), 1u)
      << warnings;
  EXPECT_TRUE(computes(*get_device("CPU").load(binary, "k"), 6));
}

// Processes that fill one empty cache with the same kernels at the same moment all get working
// kernels without a warning (none saw part of an entry), and the cache ends up with one whole
// entry per kernel and nothing else.
TEST(DiskCache, ProcessesFillOneCacheAtOnce) {
  TempCache cache;
  const std::vector<int> pluses = {7, 8, 9};
  int start[2];
  ASSERT_EQ(pipe(start), 0);
  CapturedStderr captured;  // the children's stderr too: they inherit it
  std::vector<pid_t> children;
  for (int c = 0; c < 4; ++c) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {  // the child: wait for the start (the pipe's end), compile, check, report by exit code
      close(start[1]);
      char byte;
      while (read(start[0], &byte, 1) > 0) {
      }
      bool ok = true;
      try {
        for (int plus : pluses) ok = ok && compiles_and_computes(plus);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child %d: %s\n", c, e.what());
        ok = false;
      }
      _exit(ok ? 0 : 1);  // no gtest or static destructors in the child
    }
    children.push_back(pid);
  }
  close(start[0]);
  close(start[1]);  // go
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child " << pid << " status " << status;
  }
  EXPECT_EQ(captured.text(), "");
  const std::vector<std::string> files = cache.files();
  EXPECT_EQ(files.size(), pluses.size());
  for (const std::string& file : files) EXPECT_EQ(disk_cache::damage(cache.dir / "cpu" / file), "") << file;
}

TEST(CcCompiler, SyntaxErrorReportsCompilerOutput) {
  TempCache cache;
  CcCompiler cc;
  std::string msg = error_of([&] { cc.compile("void k(void** bufs) {\n  int x = ;\n}\n"); });
  EXPECT_NE(msg.find("error"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected expression"), std::string::npos) << msg;  // gcc and clang both say this
  EXPECT_NE(msg.find("2 |   int x = ;"), std::string::npos) << msg;    // numbered source
  EXPECT_TRUE(cache.files().empty());
}

TEST(CcCompiler, HonoursCC) {
  TempCache cache;
  {
    env::ScopedEnv cc_env("CC", "gcc");
    EXPECT_NE(CcCompiler().name().find("gcc"), std::string::npos);
    EXPECT_FALSE(CcCompiler().compile(kSquareKernel).empty());
  }
  env::ScopedEnv cc_env("CC", "no-such-compiler-kiln");
  std::string msg = error_of([] { CcCompiler().compile(kSquareKernel); });
  EXPECT_NE(msg.find("no-such-compiler-kiln"), std::string::npos) << msg;
}

// Kernels are linked by ld from PATH, not by the compiler driver.
TEST(CcCompiler, NoLinkerOnPathIsAnError) {
  TempCache cache;
  env::ScopedEnv cc_env("CC", CcCompiler().name());  // a full path: found without PATH
  env::ScopedEnv path_env("PATH", (cache.dir / "empty").string());
  std::string msg = error_of([] { CcCompiler().compile(single_core_kernel(10)); });
  EXPECT_EQ(msg, "the linker 'ld' for CPU kernels was not found on PATH; install binutils");
  EXPECT_TRUE(cache.files().empty());
}

// A CC that is not a C compiler gets one line naming it, how it failed and the fix, not its output
// and the kernel source: `false` fails --version, `ls` fails on the compiler flags, `true`
// "succeeds" without writing anything.
TEST(CcCompiler, CCThatIsNotACompiler) {
  TempCache cache;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"false", "its --version exited with 1"},
      {"ls", "compiling an empty C file exited with 2: "},
      {"true", "compiling an empty C file exited with 0 but wrote no object file"},
  };
  for (const auto& [cc, how] : cases) {
    env::ScopedEnv cc_env("CC", cc);
    std::string msg = error_of([] { CcCompiler().compile(kSquareKernel); });
    EXPECT_EQ(msg.rfind("CC=" + cc + " (", 0), 0u) << msg;
    EXPECT_NE(msg.find("is not a working C compiler"), std::string::npos) << msg;
    EXPECT_NE(msg.find(how), std::string::npos) << msg;
    EXPECT_NE(msg.find("Set CC to clang or gcc"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;  // no compiler output, no kernel source
  }
  EXPECT_TRUE(cache.files().empty());
  EXPECT_FALSE(CcCompiler().compile(kSquareKernel).empty());  // CC restored: compiles again
}

TEST(DeviceRegistry, UnknownDeviceListsRegistered) {
  std::string msg = error_of([] { get_device("NOPE"); });
  EXPECT_NE(msg.find("NOPE"), std::string::npos) << msg;
  EXPECT_NE(msg.find("CPU"), std::string::npos) << msg;
}

TEST(DeviceRegistry, NamesAreCaseInsensitiveAndIgnoreIndex) {
  EXPECT_EQ(&get_device("cpu"), &get_device("CPU"));
  EXPECT_EQ(&get_device("cpu:0"), &get_device("CPU"));
  std::vector<std::string> names = device_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "CPU"), names.end());
}

TEST(DeviceRegistry, CreatesRegisteredDeviceOnce) {
  struct FakeDevice : Device {
    explicit FakeDevice(std::string name) : Device(std::move(name)) {}
    Allocator& allocator() override { return get_device("CPU").allocator(); }
    Compiler& compiler() override { return get_device("CPU").compiler(); }
    std::unique_ptr<Program> load(const std::string&, const std::string&) override { return nullptr; }
  };
  // A new name per run, so --gtest_repeat works with the process-wide registry.
  static int run = 0;
  std::string name = "FAKE" + std::to_string(run++);
  auto created = std::make_shared<int>(0);
  // Negative priority, so the default device stays CPU for the other tests.
  register_device("fake" + name.substr(4), [=] { ++*created; return std::make_unique<FakeDevice>(name); }, -1);
  EXPECT_EQ(*created, 0);
  Device& fake = get_device(name + ":1");
  EXPECT_EQ(&get_device(name), &fake);
  EXPECT_EQ(*created, 1);
  EXPECT_EQ(fake.name(), name);
  EXPECT_EQ(fake.max_threads(), 1);
  fake.synchronize();
}

TEST(DeviceRegistry, DefaultDeviceAndDevOverride) {
  {
    env::ScopedEnv dev("DEV", "");  // empty counts as unset
    EXPECT_EQ(default_device(), "CPU");
  }
  {
    env::ScopedEnv dev("DEV", "cpu");
    EXPECT_EQ(default_device(), "CPU");
  }
  env::ScopedEnv dev("DEV", "TPU");
  std::string msg = error_of([] { default_device(); });
  EXPECT_NE(msg.find("TPU"), std::string::npos) << msg;
  EXPECT_NE(msg.find("CPU"), std::string::npos) << msg;
}

}  // namespace
}  // namespace kiln::runtime
