#include "runtime/cc_compiler.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <vector>

#include "kiln/error.h"
#include "runtime/process.h"
#include "support/env.h"

namespace kiln::runtime {
namespace fs = std::filesystem;
namespace {

// Compiling and linking are two processes, `cc -c` then a bare `ld -shared`: the compiler driver
// linking by itself costs as much again as the compile (clang then runs its compiler in a second
// process, and links the C runtime's start files and libraries, which kernels do not use).
// -ffp-contract=fast: a*b+c becomes one fused multiply-add (twice the arithmetic per cycle, and
// one rounding instead of two).
// -fwrapv: signed integer overflow wraps, which is what integer tensors mean.
// -fno-unroll-loops: kiln unrolls itself (UPCAST, UNROLL opts). clang unrolling a register tile's
// short inner loop on top of that interleaves the copies until the accumulators spill (a conv
// weight gradient's 8x32 tile), and the unroller is a good part of a cold compile.
// Arrays of literals are constant-initialized: a tensor realized during another file's static
// initialization still compiles with every flag.
constexpr std::array kCompileFlags = {"-O3",     "-march=native",   "-fPIC",           "-fwrapv", "-ffp-contract=fast",
                                      "-fno-math-errno", "-fno-unroll-loops", "-c", "-x", "c"};
// No libraries: the math functions kernels call (libm's, and libmvec's vector versions, below) and
// anything from libc bind to the process's own when the kernel is loaded (cpu_program.cpp).
constexpr std::array kLinkFlags = {"-shared"};
constexpr int kSourceLinesInErrors = 40;

struct Toolchain {
  std::vector<std::string> command;  // resolved compiler path, then extra flags from CC
  std::string version;               // its `--version` output, so upgrades invalidate the cache

  // Flags for this compiler only: clang turns loops and lanes of exp/log/sin/... into calls of
  // glibc's vector math library (libmvec: 4 or 8 lanes per call) instead of one scalar call each.
  std::vector<std::string> own_flags() const {
    if (is_clang()) return {"-fveclib=libmvec"};
    return {};
  }
  // The output path that is the compiler's standard output (an in-memory file, below): clang's "-".
  // gcc hands "-" to its assembler, which cannot write an object to a stream but opens the file by
  // path. Not /dev/stdout: the assembler first unlinks an output file that is not empty, and as root
  // that deletes the /dev/stdout link itself; nothing in /proc can be unlinked.
  std::string stdout_path() const { return is_clang() ? "-" : "/proc/self/fd/1"; }
  bool is_clang() const { return version.find("clang") != std::string::npos; }
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

std::vector<std::string> compile_command(const Toolchain& tc) {
  std::vector<std::string> argv = tc.command;
  argv.insert(argv.end(), kCompileFlags.begin(), kCompileFlags.end());
  for (const std::string& flag : tc.own_flags()) argv.push_back(flag);
  argv.insert(argv.end(), {"-", "-o", tc.stdout_path()});
  return argv;
}

// One compile: a compiler process that reads C source on its standard input and writes the object
// file to its standard output, an anonymous in-memory file. Nothing touches the disk, and a spare
// (below) whose parent died compiles its empty input into that file and leaves nothing behind.
struct CompileJob {
  explicit CompileJob(const std::vector<std::string>& argv)
      : object(memfd_create("kiln-kernel.o", MFD_CLOEXEC)), compiler(argv, -1, object.fd) {
    if (object.fd < 0) throw_error("could not create an in-memory file for a kernel: ", std::strerror(errno));
  }
  OwnedFd object;
  ChildProcess compiler;
};

// The next compile's process, started as soon as a compile begins and left waiting for its source.
// A process that compiles one kernel usually compiles more (a schedule's kernels, a BEAM search, a
// training step's first run), and each of those then skips the compiler's start-up (loading and
// relocating libLLVM, static initializers), most of what clang takes for a small kernel.
class SpareCompiler {
 public:
  // A started compile for argv: the spare if it was started with argv, else a new process.
  std::unique_ptr<CompileJob> take(const std::vector<std::string>& argv, bool& was_spare) {
    std::lock_guard lock(mu_);
    std::unique_ptr<CompileJob> job;
    if (spare_ && spare_->compiler.ours() && spare_->compiler.argv() == argv) job = std::move(spare_);
    was_spare = job != nullptr;
    if (!job) job = std::make_unique<CompileJob>(argv);
    spare_ = std::make_unique<CompileJob>(argv);  // replaces (kills) one started for another CC
    return job;
  }

 private:
  std::mutex mu_;
  std::unique_ptr<CompileJob> spare_;
};

SpareCompiler& spare_compiler() {
  static SpareCompiler spare;  // destroyed at exit, which kills the unused spare
  return spare;
}

bool built(const ProcessResult& result, const CompileJob& job) {
  struct stat st {};
  return result.exit_code == 0 && fstat(job.object.fd, &st) == 0 && st.st_size > 0;
}

// After a failed compile: if the toolchain cannot build even an empty file, the compiler is at
// fault, not the kernel, and its output would only bury that.
void check_compiler_works(const std::vector<std::string>& command, const std::vector<std::string>& argv) {
  CompileJob probe(argv);
  ProcessResult result = probe.compiler.finish("void kiln_probe(void) {}\n");
  if (!built(result, probe)) throw_not_a_compiler(command, "compiling an empty C file", result);
}

// `ld` from PATH, the linker clang and gcc run themselves. (Asking the compiler for it with
// `-print-prog-name=ld` would start one more compiler process, which costs more than the link.)
std::string find_linker() {
  std::string path = find_program("ld");
  if (path.empty()) throw_error("the linker 'ld' for CPU kernels was not found on PATH; install binutils");
  return path;
}

// Links the object file, read from `object_fd`, into the shared object `binary`.
ProcessResult run_linker(const std::string& linker, int object_fd, const fs::path& binary) {
  std::vector<std::string> argv = {linker};
  argv.insert(argv.end(), kLinkFlags.begin(), kLinkFlags.end());
  argv.insert(argv.end(), {"-o", binary.string(), "/proc/self/fd/0"});
  return run_process(argv, object_fd);
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
    const std::vector<std::string> argv = compile_command(tc);
    bool was_spare = false;
    std::unique_ptr<CompileJob> job = spare_compiler().take(argv, was_spare);
    ProcessResult compiled = job->compiler.finish(source);
    if (!built(compiled, *job) && was_spare) {
      // A spare can have died while it waited (killed, out of memory): the verdict is a new process's.
      job = std::make_unique<CompileJob>(argv);
      compiled = job->compiler.finish(source);
    }
    if (!built(compiled, *job)) {
      check_compiler_works(tc.command, argv);
      throw_error("CPU kernel failed to compile (", tc.command[0], " exited with ", compiled.exit_code, "):\n",
                  compiled.output, "source:\n", numbered_source(source, kSourceLinesInErrors));
    }
    const std::string linker = find_linker();
    ProcessResult linked = run_linker(linker, job->object.fd, binary);
    std::error_code ec;
    if (linked.exit_code != 0 || !fs::exists(binary, ec))
      throw_error("CPU kernel failed to link (", linker, " exited with ", linked.exit_code, "):\n", linked.output);
  });
}

}  // namespace kiln::runtime
