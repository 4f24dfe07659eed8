#include "proc_task.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace colors::server {

namespace {

// Reads a small /proc file into `buf` (NUL-terminated); false when it cannot be read.
bool read_small(const char* path, char* buf, std::size_t size) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = ::read(fd, buf, size - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = 0;
  return true;
}

}  // namespace

char task_state(pid_t pid, pid_t tid) {
  char path[96];
  std::snprintf(path, sizeof path, "/proc/%d/task/%d/stat", static_cast<int>(pid), static_cast<int>(tid));
  char buf[512];
  if (!read_small(path, buf, sizeof buf)) return 'X';
  // The state follows the last ')': the thread's name, in parentheses before it, may hold one.
  const char* paren = std::strrchr(buf, ')');
  return paren != nullptr && paren[1] == ' ' ? paren[2] : '?';
}

pid_t thread_group_of(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/status", static_cast<int>(tid));
  char buf[2048];
  if (!read_small(path, buf, sizeof buf)) return 0;
  const char* t = std::strstr(buf, "\nTgid:");
  return t != nullptr ? static_cast<pid_t>(std::strtol(t + 6, nullptr, 10)) : 0;
}

}  // namespace colors::server
