// Tests for the child processes the CPU device's toolchain runs (runtime/process.h): input,
// captured output, redirects, exit codes, and what happens to a child nobody finishes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "error_message.h"
#include "process_tree.h"
#include "runtime/process.h"

namespace kiln::runtime {
namespace {

TEST(ChildProcess, InputInOutputOut) {
  EXPECT_EQ(ChildProcess({"cat"}).finish("hello\n").output, "hello\n");
  ProcessResult counted = ChildProcess({"wc", "-c"}).finish(std::string(3 << 20, 'x'));  // past any pipe buffer
  EXPECT_EQ(counted.exit_code, 0);
  EXPECT_EQ(std::stoll(counted.output), 3ll << 20);
}

TEST(ChildProcess, ExitCodesAndSignals) {
  EXPECT_EQ(run_process({"sh", "-c", "echo oops >&2; exit 3"}).exit_code, 3);
  EXPECT_EQ(run_process({"sh", "-c", "echo oops >&2; exit 3"}).output, "oops\n");  // stderr is captured
  EXPECT_EQ(run_process({"sh", "-c", "kill -9 $$"}).exit_code, 128 + SIGKILL);
}

// A child that exits without reading its input is an exit code, not a SIGPIPE that kills us.
TEST(ChildProcess, ChildThatReadsNothing) {
  EXPECT_EQ(ChildProcess({"true"}).finish(std::string(1 << 20, 'x')).exit_code, 0);
  EXPECT_EQ(ChildProcess({"false"}).finish(std::string(1 << 20, 'x')).exit_code, 1);
}

TEST(ChildProcess, RedirectedInputAndOutput) {
  kiln::runtime::OwnedFd in(memfd_create("in", MFD_CLOEXEC)), out(memfd_create("out", MFD_CLOEXEC));
  ASSERT_EQ(write(in.fd, "from a file", 11), 11);
  ASSERT_EQ(lseek(in.fd, 0, SEEK_SET), 0);
  ProcessResult result = ChildProcess({"cat"}, in.fd, out.fd).finish();
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.output, "");  // stdout went to the file
  char buf[32] = {};
  EXPECT_EQ(pread(out.fd, buf, sizeof buf, 0), 11);
  EXPECT_EQ(std::string(buf), "from a file");
}

// The point of starting a child early: it waits for its input, however long that takes; and one
// nobody finishes is killed and reaped with its owner, not left behind.
TEST(ChildProcess, WaitsForInputAndDiesUnfinished) {
  const size_t before = kt::child_processes().size();
  {
    ChildProcess waiting({"cat"});
    usleep(100 * 1000);
    EXPECT_EQ(kt::child_processes().size(), before + 1);
    ChildProcess unfinished({"cat"});
    EXPECT_EQ(waiting.finish("late").output, "late");
  }
  EXPECT_EQ(kt::child_processes().size(), before);  // `unfinished` was killed and reaped
}

TEST(ChildProcess, MissingProgramIsAnError) {
  std::string msg = kt::error_of([] { run_process({"no-such-program-kiln"}); });
  EXPECT_NE(msg.find("could not run 'no-such-program-kiln'"), std::string::npos) << msg;
}

TEST(FindProgram, SearchesPathOrTakesAPath) {
  EXPECT_EQ(find_program("sh").back(), 'h');
  EXPECT_EQ(find_program("sh").front(), '/');
  EXPECT_EQ(find_program("/bin/sh"), "/bin/sh");
  EXPECT_EQ(find_program("no-such-program-kiln"), "");
  EXPECT_EQ(find_program("/no/such/program"), "");
}

}  // namespace
}  // namespace kiln::runtime
