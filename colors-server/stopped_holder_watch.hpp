// Ends a client process that was stopped while it holds a lock the whole heap needs.
//
// A client stopped by SIGSTOP (or a terminal's Ctrl-Z, any job-control stop: thread state T)
// while one of its threads holds one of these robust locks stalls the server and every other
// client until it continues:
//   heap_lock      every client's TLAB refills and large allocations, and the collector's sweep;
//   classes_lock   class definitions, and repositories and channels by name;
//   gc_cycle_lock  the collector's next cycle (a client holds it while it verifies the heap).
// Their critical sections are short, so a stop rarely lands in one, but a careless or hostile
// client can make it land there. The watch ends such a holder: seen stopped, holding the same
// lock, by every check during at least --stopped-holder-timeout, its process is killed with
// SIGKILL. The kernel then hands the robust lock to its next locker (EOWNERDEAD; these locks guard
// state kept consistent step by step, robust_mutex.hpp), and the server cleans up after the client
// as after any kill -9.
//
// Invariants:
//  * Only a client's process is killed: the holder's thread group must be among the pids the
//    server passes (its clients, and an adopted heap's clients not yet back).
//  * A thread stopped by a tracer (state t: a debugger at a breakpoint) is never killed.
//  * A checkpoint's freeze (freezer.hpp) stops clients too, but only while the server's heap_mu_
//    is held, and the server runs check() under heap_mu_: no check sees a stop of its own freeze.
//  * A holder is killed only when each check over a span of at least the timeout saw the same
//    thread stopped holding the lock; any other sighting restarts its clock.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "layout.hpp"

namespace colors::server {

class StoppedHolderWatch {
 public:
  struct Kill {
    pid_t pid;
    pid_t tid;
    const char* lock;          // the lock's name in the segment's metadata
    std::int64_t stopped_ns;   // how long checks saw it stopped holding the lock
  };

  // timeout_ns > 0.
  explicit StoppedHolderWatch(std::int64_t timeout_ns) : timeout_ns_(timeout_ns) {}

  // One check at `now_ns` (monotonic). `clients`: the processes that may be ended. Returns the
  // holders to kill (the caller kills and logs).
  std::vector<Kill> check(detail::Metadata* m, const std::vector<pid_t>& clients, std::int64_t now_ns);

  // How often the server should check: often enough to act within about 1.25x the timeout.
  std::int64_t interval_ns() const;

 private:
  struct Sighting {
    pid_t tid = 0;
    std::int64_t since = 0;
  };
  static constexpr int kLocks = 3;
  std::int64_t timeout_ns_;
  Sighting seen_[kLocks];
};

}  // namespace colors::server
