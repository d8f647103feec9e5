#include "runtime/cc_compiler.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

#include "kiln/error.h"
#include "runtime/disk_cache.h"
#include "support/env.h"

extern char** environ;

namespace kiln::runtime {
namespace fs = std::filesystem;
namespace {

// Compiling and linking are two processes, `cc -c` then a bare `ld -shared`: the compiler driver
// linking by itself costs as much again as the compile (clang then runs its compiler in a second
// process, and links the C runtime's start files and libraries, which kernels do not use). For a
// small kernel with clang 14 that is ~65 ms of CPU instead of ~105.
// -ffp-contract=fast: a*b+c becomes one fused multiply-add (twice the arithmetic per cycle, and
// one rounding instead of two).
// -fwrapv: signed integer overflow wraps, which is what integer tensors mean.
// -fno-unroll-loops: kiln unrolls itself (UPCAST, UNROLL opts). clang unrolling a register tile's
// short inner loop on top of that interleaves the copies until the accumulators spill (a conv
// weight gradient's 8x32 tile: 2.5x slower), and the unroller is a good part of a cold compile.
// Arrays of literals are constant-initialized: a tensor realized during another file's static
// initialization still compiles with every flag.
constexpr std::array kCompileFlags = {"-O3",     "-march=native",   "-fPIC",           "-fwrapv", "-ffp-contract=fast",
                                      "-fno-math-errno", "-fno-unroll-loops", "-c", "-x", "c"};
// No libraries: the math functions kernels call (libm's, and libmvec's vector versions, below) and
// anything from libc bind to the process's own when the kernel is loaded (cpu_program.cpp).
constexpr std::array kLinkFlags = {"-shared"};
constexpr int kSourceLinesInErrors = 40;

struct ProcessResult {
  int exit_code = 0;
  std::string output;  // stdout and stderr, interleaved
};

// Runs argv[0] (looked up on PATH) with argv directly, without a shell, so paths need no quoting.
ProcessResult run_process(const std::vector<std::string>& argv) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw_error("could not create a pipe: ", std::strerror(errno));

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);

  std::vector<char*> cargv;
  for (const std::string& arg : argv) cargv.push_back(const_cast<char*>(arg.c_str()));
  cargv.push_back(nullptr);

  pid_t pid = 0;
  int rc = posix_spawnp(&pid, cargv[0], &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    throw_error("could not run '", argv[0], "': ", std::strerror(rc));
  }

  ProcessResult result;
  char buf[4096];
  while (true) {
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n > 0) result.output.append(buf, static_cast<size_t>(n));
    else if (n == 0 || errno != EINTR) break;
  }
  close(fds[0]);

  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

bool is_executable_file(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && access(path.c_str(), X_OK) == 0;
}

// Full path of an executable: names with a '/' are taken as is, others are searched on PATH.
std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return is_executable_file(name) ? name : "";
  std::stringstream path(env::get_string("PATH", "/usr/local/bin:/usr/bin:/bin"));
  for (std::string dir; std::getline(path, dir, ':');) {
    fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (is_executable_file(candidate)) return candidate.string();
  }
  return "";
}

struct Toolchain {
  std::vector<std::string> command;  // resolved compiler path, then extra flags from CC
  std::string version;               // its `--version` output, so upgrades invalidate the cache

  // Flags for this compiler only: clang turns loops and lanes of exp/log/sin/... into calls of
  // glibc's vector math library (libmvec: 4 or 8 lanes per call) instead of one scalar call each.
  std::vector<std::string> own_flags() const {
    if (version.find("clang") != std::string::npos) return {"-fveclib=libmvec"};
    return {};
  }
};

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

// For a CC that is no C compiler at all (CC=false, a typo'd tool): which program was tried, how it
// failed in one line, and the fix, instead of pages of its output.
[[noreturn]] void throw_not_a_compiler(const std::vector<std::string>& command, const std::string& attempt,
                                       const ProcessResult& result) {
  const std::string cc = env::get_string("CC");
  const std::string tried = cc.empty() ? "'" + join(command) + "'" : "CC=" + cc + " ('" + command[0] + "')";
  std::string line = result.output.substr(0, result.output.find('\n'));
  line.erase(0, line.find_first_not_of(" \t\r"));
  line.erase(line.find_last_not_of(" \t\r") + 1);
  if (line.size() > 160) line = line.substr(0, 160) + "...";
  const std::string outcome = result.exit_code == 0 ? " but wrote no object file"
                              : line.empty()         ? " and printed nothing"
                                                     : ": " + line;
  throw_error(tried, " is not a working C compiler: ", attempt, " exited with ", result.exit_code, outcome,
              ". Set CC to clang or gcc.");
}

std::string read_version(const std::vector<std::string>& command) {
  static std::mutex mu;
  static std::map<std::vector<std::string>, std::string> versions;
  std::lock_guard lock(mu);
  auto it = versions.find(command);
  if (it != versions.end()) return it->second;
  std::vector<std::string> argv = command;
  argv.push_back("--version");
  ProcessResult result = run_process(argv);
  if (result.exit_code != 0) throw_not_a_compiler(command, "its --version", result);
  return versions.emplace(command, result.output).first->second;
}

Toolchain look_up_toolchain(const std::string& cc) {
  Toolchain tc;
  if (!cc.empty()) {
    std::istringstream words(cc);  // like make: CC may carry flags, e.g. "gcc -m64"
    for (std::string word; words >> word;) tc.command.push_back(word);
    if (tc.command.empty()) throw_error("CC is blank");
    std::string path = find_program(tc.command[0]);
    if (path.empty()) throw_error("C compiler CC=", cc, " was not found; set CC to clang or gcc (or a full path)");
    tc.command[0] = path;
  } else {
    for (const char* name : {"clang", "gcc"}) {
      if (std::string path = find_program(name); !path.empty()) {
        tc.command.push_back(path);
        break;
      }
    }
    if (tc.command.empty()) throw_error("no C compiler found for the CPU device: install clang or gcc, or set CC");
  }
  tc.version = read_version(tc.command);
  return tc;
}

// The toolchain for the current CC (and PATH), looked up once per value: asking the compiler for its version
// is a process of its own, too slow to repeat for every kernel.
Toolchain find_toolchain() {
  static std::mutex mu;
  static std::map<std::string, Toolchain> known;
  const std::string cc = env::get_string("CC"), key = cc + '\0' + env::get_string("PATH");
  std::lock_guard lock(mu);
  auto it = known.find(key);
  if (it == known.end()) it = known.emplace(key, look_up_toolchain(cc)).first;
  return it->second;
}

// Deletes temporary files however compile() exits.
struct TempFiles {
  std::vector<fs::path> paths;
  ~TempFiles() {
    std::error_code ec;
    for (const fs::path& p : paths) fs::remove(p, ec);
  }
};

// Compiles `source`, written to `source_file`, into the object file `object`.
ProcessResult run_compiler(const Toolchain& tc, const std::string& source, const fs::path& source_file,
                           const fs::path& object) {
  {
    std::ofstream out(source_file, std::ios::binary);
    out << source;
    out.close();
    if (!out) throw_error("could not write ", source_file.string());
  }
  std::vector<std::string> argv = tc.command;
  argv.insert(argv.end(), kCompileFlags.begin(), kCompileFlags.end());
  for (const std::string& flag : tc.own_flags()) argv.push_back(flag);
  argv.insert(argv.end(), {source_file.string(), "-o", object.string()});
  return run_process(argv);
}

bool built(const ProcessResult& result, const fs::path& output) {
  std::error_code ec;
  return result.exit_code == 0 && fs::exists(output, ec);
}

// After a failed compile: if the toolchain cannot build even an empty file, the compiler is at
// fault, not the kernel, and its output would only bury that.
void check_compiler_works(const Toolchain& tc, const fs::path& dir) {
  std::string stem = "probe." + disk_cache::unique_suffix();
  TempFiles temps{{dir / (stem + ".c"), dir / (stem + ".o")}};
  ProcessResult result = run_compiler(tc, "void kiln_probe(void) {}\n", temps.paths[0], temps.paths[1]);
  if (!built(result, temps.paths[1])) throw_not_a_compiler(tc.command, "compiling an empty C file", result);
}

// `ld` from PATH, the linker clang and gcc run themselves. (Asking the compiler for it with
// `-print-prog-name=ld` would start one more compiler process: ~30 ms for clang, 5x the link.)
std::string find_linker() {
  std::string path = find_program("ld");
  if (path.empty()) throw_error("the linker 'ld' for CPU kernels was not found on PATH; install binutils");
  return path;
}

// Links `object` into the shared object `binary`.
ProcessResult run_linker(const std::string& linker, const fs::path& object, const fs::path& binary) {
  std::vector<std::string> argv = {linker};
  argv.insert(argv.end(), kLinkFlags.begin(), kLinkFlags.end());
  argv.insert(argv.end(), {"-o", binary.string(), object.string()});
  return run_process(argv);
}

// -march=native binaries only run on this kind of CPU: its model and feature flags join the cache
// key, so a cache folder shared between machines never hands one a binary it cannot execute.
const std::string& host_cpu_id() {
  static const std::string id = [] {
    std::ifstream in("/proc/cpuinfo");
    std::string line, model, flags;
    while (std::getline(in, line) && (model.empty() || flags.empty())) {
      if (model.empty() && line.rfind("model name", 0) == 0) model = line;
      if (flags.empty() && line.rfind("flags", 0) == 0) flags = line;
    }
    return model + "\n" + flags;
  }();
  return id;
}

}  // namespace

std::string CcCompiler::name() const { return join(find_toolchain().command); }

std::string CcCompiler::compile(const std::string& source) { return build(source, true); }

std::string CcCompiler::recompile(const std::string& source) { return build(source, false); }

std::string CcCompiler::build(const std::string& source, bool reuse_entry) {
  Toolchain tc = find_toolchain();
  const std::string key = source + '\0' + join(tc.command) + '\0' + tc.version + '\0' +
                          join({kCompileFlags.begin(), kCompileFlags.end()}) + join(tc.own_flags()) + '\0' +
                          join({kLinkFlags.begin(), kLinkFlags.end()}) + '\0' + host_cpu_id();
  return cached_build("cpu", key, !reuse_entry, [&](const std::string& binary) {
    // The work files sit next to the binary, in the cache folder.
    TempFiles temps{{binary + ".c", binary + ".o"}};
    const fs::path &source_file = temps.paths[0], &object = temps.paths[1];
    ProcessResult compiled = run_compiler(tc, source, source_file, object);
    if (!built(compiled, object)) {
      check_compiler_works(tc, object.parent_path());
      throw_error("CPU kernel failed to compile (", tc.command[0], " exited with ", compiled.exit_code, "):\n",
                  compiled.output, "source:\n", numbered_source(source, kSourceLinesInErrors));
    }
    const std::string linker = find_linker();
    ProcessResult linked = run_linker(linker, object, binary);
    if (!built(linked, binary))
      throw_error("CPU kernel failed to link (", linker, " exited with ", linked.exit_code, "):\n", linked.output);
  });
}

}  // namespace kiln::runtime
