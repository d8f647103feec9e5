#pragma once
// Child processes for the CPU device's toolchain (runtime/cc_compiler.cpp): started without a shell
// (paths need no quoting), fed their standard input, their output captured.
#include <sys/types.h>
#include <unistd.h>

#include <string>
#include <string_view>
#include <vector>

namespace kiln::runtime {

struct ProcessResult {
  int exit_code = 0;   // 128 + the signal's number for a process killed by one
  std::string output;  // what it printed: stderr, and stdout unless that was sent elsewhere
};

// A file descriptor, closed with its owner.
struct OwnedFd {
  explicit OwnedFd(int fd) : fd(fd) {}
  ~OwnedFd() {
    if (fd >= 0) close(fd);
  }
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  const int fd;
};

// A running child, waiting for its standard input until finish(). Starting it ahead of need hides
// its start-up: clang loads libLLVM before it reads a byte. Destroying an unfinished
// child kills it; a child whose parent dies reads end-of-input, and its output goes nowhere.
class ChildProcess {
 public:
  // argv[0] is looked up on PATH. stdin_fd / stdout_fd: files the child reads from / writes to
  // instead of finish()'s input / the captured output (-1: not redirected).
  explicit ChildProcess(std::vector<std::string> argv, int stdin_fd = -1, int stdout_fd = -1);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  const std::vector<std::string>& argv() const { return argv_; }
  // False in a child forked from the process that started this one: only the parent can finish it.
  bool ours() const;
  // Hands the child `input` as its whole standard input, then waits for it to exit. Once only.
  ProcessResult finish(std::string_view input = {});

 private:
  std::vector<std::string> argv_;
  pid_t pid_ = -1;
  pid_t parent_ = -1;
  int input_fd_ = -1;   // our end of its standard input (a socket: a dead reader is an error, not SIGPIPE)
  int output_fd_ = -1;  // our end of its stderr (and stdout)
};

inline ProcessResult run_process(std::vector<std::string> argv, int stdin_fd = -1) {
  return ChildProcess(std::move(argv), stdin_fd).finish();
}

// Full path of an executable: names with a '/' are taken as is, others are searched on PATH; "" if
// there is none.
std::string find_program(const std::string& name);

}  // namespace kiln::runtime
