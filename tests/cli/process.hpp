#pragma once
// Runs a program with arguments, capturing stdout and stderr, under a wall-clock limit. For the
// command-line tests that must tell an exit code from a signal and a hang.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace trainplan::test {

struct ProcessResult {
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it (SIGKILL after a timeout included)
  bool timed_out = false;
  std::string out;
  std::string err;
  long max_rss_kib = 0;  // the child's peak resident memory (getrusage's ru_maxrss)
};

inline ProcessResult run_process(const std::string& program, const std::vector<std::string>& args,
                                 std::chrono::milliseconds limit) {
  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> argv;
  std::string prog = program;
  argv.push_back(prog.data());
  std::vector<std::string> copies = args;
  for (auto& a : copies) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    throw std::runtime_error("cannot start " + program + ": " + std::strerror(rc));
  }
  ProcessResult r;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    const int n = poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(got));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  rusage usage{};
  while (wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  r.max_rss_kib = usage.ru_maxrss;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

// What is wrong with a run that must answer with exit 0, 1 or 2 (2 with a message) and nothing
// else: a hang past its limit, a signal, another exit code, an internal error, a silent exit 2.
// Empty when nothing is.
inline std::string answer_problem(const ProcessResult& r, const std::string& limit_text) {
  if (r.timed_out) return "no answer within " + limit_text;
  if (r.signal) return "killed by signal " + std::to_string(r.signal);
  if (r.exit_code < 0 || r.exit_code > 2) return "exit " + std::to_string(r.exit_code);
  if (r.err.find("internal error") != std::string::npos) return "internal error on stderr";
  if (r.exit_code == 2 && r.err.empty()) return "exit 2 without a message";
  return {};
}

}  // namespace trainplan::test
