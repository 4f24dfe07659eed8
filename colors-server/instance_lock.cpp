#include "instance_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace colors::server {

namespace {
pid_t read_pid(int fd) {
  char buf[32] = {};
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return 0;
  return static_cast<pid_t>(std::strtol(buf, nullptr, 10));
}
}  // namespace

InstanceLock::~InstanceLock() { release(); }

InstanceLock::Result InstanceLock::acquire(const std::string& path) {
  release();
  path_ = path;
  // Bounded retries: each retry means a competing server removed the file under us.
  for (int attempt = 0; attempt < 10; ++attempt) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
      error_ = "cannot open lock file " + path + ": " + std::strerror(errno);
      return Result::kError;
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int e = errno;
      if (e == EWOULDBLOCK) holder_pid_ = read_pid(fd);
      ::close(fd);
      if (e == EWOULDBLOCK) return Result::kHeld;
      error_ = "cannot lock " + path + ": " + std::strerror(e);
      return Result::kError;
    }
    struct stat held {}, now {};
    if (::fstat(fd, &held) != 0 || ::stat(path.c_str(), &now) != 0 || held.st_ino != now.st_ino ||
        held.st_dev != now.st_dev) {
      ::close(fd);  // we locked a file that was unlinked meanwhile: try the new one
      continue;
    }
    std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
      error_ = "cannot write lock file " + path + ": " + std::strerror(errno);
      ::close(fd);
      return Result::kError;
    }
    fd_ = fd;
    return Result::kAcquired;
  }
  error_ = "lock file " + path + " keeps being replaced by another process";
  return Result::kError;
}

void InstanceLock::release() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // while still locked, see the invariant in the header
  ::close(fd_);
  fd_ = -1;
}

}  // namespace colors::server
