// Client processes for multi-process tests: fork, attach to a server, run a body, _exit with its
// result (a child never returns into the test framework), and bounded waits for children.
// Throws std::runtime_error when fork fails.
#pragma once
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>

#include "colors/colors.hpp"

namespace colors::test {

// Forks a child that attaches to `socket`, runs `body` and exits with its return value (3 when
// it threw, 4 for anything else thrown). Returns the child's pid (-1 if fork failed).
inline pid_t fork_client(const std::string& socket, const std::function<int()>& body) {
  std::fflush(nullptr);  // no buffered output duplicated into the child
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    int rc = 1;
    try {
      colors::attach(socket);
      rc = body();
      colors::detach();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "client %d: exception: %s\n", ::getpid(), e.what());
      rc = 3;
    } catch (...) {
      rc = 4;
    }
    ::_exit(rc);
  }
  return pid;
}

// Exit code, 128 + signal, or -1 after `timeout_ms` (the child is then killed).
inline int wait_child(pid_t pid, int timeout_ms = 60000) {
  auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    int st = 0;
    if (::waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(timeout_ms)) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &st, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace colors::test
