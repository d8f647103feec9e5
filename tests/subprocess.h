#pragma once
// A child process for tests that run a program under settings read once per process (VIZ=1,
// PROFILE=1): start it with extra environment variables, read its stderr, wait for or kill it.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <string>

namespace kt {

class Subprocess {
 public:
  // Runs `program` with `env` added to this process's environment; its stderr is piped to us.
  Subprocess(const std::string& program, const std::map<std::string, std::string>& env) {
    int fds[2];
    if (pipe(fds) != 0) std::abort();
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDERR_FILENO);
      close(fds[0]);
      close(fds[1]);
      for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
      execl(program.c_str(), program.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(fds[1]);
    err_fd_ = fds[0];
  }
  ~Subprocess() {
    kill_and_wait();
    close(err_fd_);
  }
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  // Reads stderr until it contains `text` or `seconds` pass; returns what was read so far.
  std::string read_until(const std::string& text, double seconds) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (err_.find(text) == std::string::npos) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{err_fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      char buf[4096];
      ssize_t n = read(err_fd_, buf, sizeof buf);
      if (n <= 0) break;  // the child closed stderr (exited)
      err_.append(buf, static_cast<size_t>(n));
    }
    return err_;
  }

  // Waits for the child to exit; returns its exit code (-1 if a signal ended it).
  int wait() {
    int status = 0;
    if (pid_ > 0 && waitpid(pid_, &status, 0) == pid_) pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  void kill_and_wait() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    wait();
  }

 private:
  pid_t pid_ = -1;
  int err_fd_ = -1;
  std::string err_;
};

// A TCP port on 127.0.0.1 that nothing listens on right now.
inline int free_port() {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  close(s);
  return ntohs(a.sin_port);
}

}  // namespace kt
