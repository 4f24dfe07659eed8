#include "freezer.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "proc_task.hpp"

namespace colors::server {

namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Whether every thread of `pid` is stopped (or gone); else the first one's tid and state.
bool all_stopped(pid_t pid, std::string& busy) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/task", static_cast<int>(pid));
  DIR* d = ::opendir(path);
  if (d == nullptr) return true;  // the process is gone
  bool ok = true;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char s = task_state(pid, static_cast<pid_t>(std::strtol(e->d_name, nullptr, 10)));
    if (s != 'T' && s != 't' && s != 'X' && s != 'Z') {
      busy = std::string("thread ") + e->d_name + " in state " + s;
      ok = false;
      break;
    }
  }
  ::closedir(d);
  return ok;
}

bool process_stopped(pid_t pid) {
  char s = task_state(pid, pid);
  return s == 'T' || s == 't';
}

}  // namespace

Freezer::~Freezer() {
  thaw();
  if (guardian_fd_ >= 0) ::close(guardian_fd_);  // the guardian exits on EOF
  if (guardian_pid_ > 0) ::waitpid(guardian_pid_, nullptr, 0);
}

std::string Freezer::start_guardian() {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
  pid_t child = ::fork();
  if (child < 0) return std::string("fork: ") + std::strerror(errno);
  if (child == 0) {
    // The guardian: reads "F pid pid ...\n" (frozen) and "T\n" (thawed) lines; on EOF (the server
    // exited or died) resumes whatever the last "F" named. Async-signal-safe calls only.
    // It holds nothing but its pipe: a test or supervisor reading the server's output sees EOF
    // when the server ends, not when its guardian does.
    for (int fd = 0; fd < 1024; ++fd)
      if (fd != p[0]) ::close(fd);
    ::prctl(PR_SET_NAME, "colors-guardian");
    static pid_t pids[1024];
    int n = 0;
    char buf[8192];
    std::size_t have = 0;
    for (;;) {
      ssize_t got = ::read(p[0], buf + have, sizeof buf - have);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;
      have += static_cast<std::size_t>(got);
      for (;;) {
        char* nl = static_cast<char*>(std::memchr(buf, '\n', have));
        if (nl == nullptr) break;
        if (buf[0] == 'F') {
          n = 0;
          for (char* q = buf + 1; q < nl && n < 1024;) {
            while (q < nl && *q == ' ') ++q;
            if (q >= nl) break;
            long v = 0;
            while (q < nl && *q >= '0' && *q <= '9') v = v * 10 + (*q++ - '0');
            pids[n++] = static_cast<pid_t>(v);
          }
        } else {
          n = 0;
        }
        std::size_t used = static_cast<std::size_t>(nl - buf) + 1;
        std::memmove(buf, nl + 1, have - used);
        have -= used;
      }
      if (have == sizeof buf) have = 0;  // a line longer than the buffer: cannot be ours
    }
    for (int i = 0; i < n; ++i) ::kill(pids[i], SIGCONT);
    ::_exit(0);
  }
  ::close(p[0]);
  guardian_fd_ = p[1];
  guardian_pid_ = child;
  return {};
}

void Freezer::tell_guardian(const std::string& line) {
  if (guardian_fd_ < 0) return;
  const char* p = line.data();
  std::size_t n = line.size();
  while (n > 0) {
    ssize_t put = ::write(guardian_fd_, p, n);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return;
    p += put;
    n -= static_cast<std::size_t>(put);
  }
}

std::string Freezer::freeze(const std::vector<pid_t>& pids_in, std::int64_t timeout_ns) {
  thaw();
  std::vector<pid_t> pids = pids_in;
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  const pid_t self = ::getpid();
  std::erase_if(pids, [self](pid_t p) { return p <= 0 || p == self || process_stopped(p); });
  // The guardian learns the list before the first SIGSTOP: a death in between thaws them all.
  std::string line = "F";
  for (pid_t p : pids) line += " " + std::to_string(p);
  tell_guardian(line + "\n");
  for (pid_t p : pids) {
    if (::kill(p, SIGSTOP) != 0) {
      if (errno == ESRCH) continue;  // exited meanwhile: nothing of it runs
      std::string why = "cannot stop client process " + std::to_string(p) + ": " + std::strerror(errno);
      thaw();
      return why;
    }
    frozen_.push_back(p);
  }
  const std::int64_t deadline = now_ns() + timeout_ns;
  for (pid_t p : frozen_) {
    std::string busy;
    while (!all_stopped(p, busy)) {
      if (now_ns() > deadline) {
        std::string why = "client process " + std::to_string(p) + " did not stop within " +
                          std::to_string(timeout_ns / 1'000'000) + " ms (" + busy + ")";
        thaw();
        return why;
      }
      std::this_thread::yield();
    }
  }
  return {};
}

void Freezer::thaw() {
  for (pid_t p : frozen_) ::kill(p, SIGCONT);
  if (!frozen_.empty()) tell_guardian("T\n");
  frozen_.clear();
}

}  // namespace colors::server
