#include "runtime/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "kiln/error.h"
#include "support/env.h"

extern char** environ;

namespace kiln::runtime {
namespace fs = std::filesystem;
namespace {

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

int wait_for_exit(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool is_executable_file(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && access(path.c_str(), X_OK) == 0;
}

}  // namespace

ChildProcess::ChildProcess(std::vector<std::string> argv, int stdin_fd, int stdout_fd)
    : argv_(std::move(argv)), parent_(getpid()) {
  int input[2] = {-1, -1}, output[2];
  if (stdin_fd < 0 && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, input) != 0)
    throw_error("could not create a socket pair: ", std::strerror(errno));
  if (pipe2(output, O_CLOEXEC) != 0) {
    close_fd(input[0]);
    close_fd(input[1]);
    throw_error("could not create a pipe: ", std::strerror(errno));
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, stdin_fd >= 0 ? stdin_fd : input[1], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, stdout_fd >= 0 ? stdout_fd : output[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, output[1], STDERR_FILENO);

  std::vector<char*> cargv;
  for (const std::string& arg : argv_) cargv.push_back(const_cast<char*>(arg.c_str()));
  cargv.push_back(nullptr);
  int rc = posix_spawnp(&pid_, cargv[0], &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close_fd(input[1]);
  close_fd(output[1]);
  input_fd_ = input[0];
  output_fd_ = output[0];
  if (rc != 0) {
    pid_ = -1;
    close_fd(input_fd_);
    close_fd(output_fd_);
    throw_error("could not run '", argv_[0], "': ", std::strerror(rc));
  }
}

bool ChildProcess::ours() const { return getpid() == parent_; }

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && ours()) {
    kill(pid_, SIGKILL);
    wait_for_exit(pid_);
  }
  close_fd(input_fd_);
  close_fd(output_fd_);
}

ProcessResult ChildProcess::finish(std::string_view input) {
  if (pid_ <= 0 || !ours()) throw_error("internal: ChildProcess::finish called twice or from a fork for '", argv_[0], "'");
  // The input goes in before any output is read: compilers read all of theirs before they print.
  // A child that exits without reading it all fails the send, and its output says why.
  for (size_t sent = 0; input_fd_ >= 0 && sent < input.size();) {
    ssize_t n = send(input_fd_, input.data() + sent, input.size() - sent, MSG_NOSIGNAL);
    if (n > 0) sent += static_cast<size_t>(n);
    else if (n < 0 && errno != EINTR) break;
  }
  // End of input for the socket itself, not just our descriptor: a child forked from this process
  // since may hold a copy of it, and the compiler would wait for that one too.
  if (input_fd_ >= 0) shutdown(input_fd_, SHUT_WR);
  close_fd(input_fd_);

  ProcessResult result;
  char buf[4096];
  while (true) {
    ssize_t n = read(output_fd_, buf, sizeof buf);
    if (n > 0) result.output.append(buf, static_cast<size_t>(n));
    else if (n == 0 || errno != EINTR) break;
  }
  close_fd(output_fd_);
  result.exit_code = wait_for_exit(pid_);
  pid_ = -1;
  return result;
}

std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return is_executable_file(name) ? name : "";
  std::stringstream path(env::get_string("PATH", "/usr/local/bin:/usr/bin:/bin"));
  for (std::string dir; std::getline(path, dir, ':');) {
    fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (is_executable_file(candidate)) return candidate.string();
  }
  return "";
}

}  // namespace kiln::runtime
