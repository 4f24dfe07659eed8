// One server per socket and per segment name: an exclusive flock() on a lock file held for the
// server's whole life. The kernel drops the lock when the process dies (kill -9 included), so a
// lock file that can be locked is by definition stale.
//
// Invariants:
//  * While a server runs it holds LOCK_EX on the lock file at `path`, and the file contains its
//    pid (decimal, newline-terminated).
//  * A stopping server unlinks the file while still holding the lock. A competitor that opened
//    the old file and got the lock afterwards notices (the inode at `path` is not the one it
//    locked) and retries, so two servers can never both believe they hold the lock.
#pragma once
#include <sys/types.h>

#include <string>

namespace colors::server {

class InstanceLock {
 public:
  enum class Result { kAcquired, kHeld, kError };

  InstanceLock() = default;
  ~InstanceLock();  // releases (unlink + close) if held
  InstanceLock(const InstanceLock&) = delete;
  InstanceLock& operator=(const InstanceLock&) = delete;

  // kHeld: another live process holds it; holder_pid() is its pid (0 when it did not write it
  // yet). kError: error() says why.
  Result acquire(const std::string& path);
  void release();

  pid_t holder_pid() const { return holder_pid_; }
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  pid_t holder_pid_ = 0;
  std::string path_;
  std::string error_;
};

}  // namespace colors::server
