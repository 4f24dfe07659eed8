// Ends a client process whose thread keeps a lock the whole heap needs: stopped while it holds
// one, or holding one without a break for far longer than any critical section takes.
//
// These robust locks stall the server and every other client while a client holds them:
//   heap_lock      every client's TLAB refills and large allocations, and the collector's sweep;
//   classes_lock   class definitions, and repositories and channels by name;
//   gc_cycle_lock  the collector's next cycle (a client holds it while it verifies the heap).
// Their critical sections are short, but a careless or hostile client can make a hold last:
//   * stopped (SIGSTOP, a terminal's Ctrl-Z, any job-control stop: thread state T) inside one:
//     killed after --stopped-holder-timeout (default 5 s), for all three locks;
//   * running but never letting go (a deadlock, a hang inside the section, code that takes the
//     lock itself): killed after --held-lock-timeout (default 30 s), for the heap and classes
//     locks only. The cycle lock is left out: a client's heap verification holds it for a whole
//     walk of the heap, as long as the heap is large.
// The process is killed with SIGKILL. The kernel then hands the robust lock to its next locker
// (EOWNERDEAD; these locks guard state kept consistent step by step, robust_mutex.hpp), and the
// server cleans up after the client as after any kill -9.
//
// Invariants:
//  * Only a client's process is killed: the holder's thread group must be among the pids the
//    server passes (its clients, and an adopted heap's clients not yet back).
//  * A thread stopped by a tracer (state t: a debugger at a breakpoint) is never killed.
//  * A checkpoint's freeze (freezer.hpp) stops clients too, but only while the server's heap_mu_
//    is held, and the server runs check() under heap_mu_: no check sees a stop of its own freeze.
//  * Stopped: a holder is killed only when each check over a span of at least the stopped timeout
//    saw the same thread stopped holding the lock; any other sighting restarts its clock.
//  * Held: a holder is killed only when each check over a span of at least the held timeout saw
//    the same thread and the same count of acquisitions (RobustMutex::holds). The count grows at
//    every acquisition, so a thread that takes the lock again and again, however often the checks
//    find it holding, restarts the clock at each check; only one continuous hold keeps both equal
//    (robust_mutex.hpp, the invariant of holds_).
//  * Time a checkpoint's freeze kept a holder stopped never counts toward the held timeout: the
//    server calls restart_held_clocks() after every thaw, under heap_mu_ (so before any check).
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "layout.hpp"

namespace colors::server {

class LockHolderWatch {
 public:
  enum class Rule { kStopped, kHeld };

  struct Kill {
    pid_t pid;
    pid_t tid;
    const char* lock;          // the lock's name in the segment's metadata
    Rule rule;
    std::int64_t for_ns;       // how long checks saw it stopped holding the lock, or holding it
  };

  // Timeouts in ns; 0 turns a rule off. REQUIRES: at least one positive.
  LockHolderWatch(std::int64_t stopped_timeout_ns, std::int64_t held_timeout_ns)
      : stopped_timeout_ns_(stopped_timeout_ns), held_timeout_ns_(held_timeout_ns) {}

  // One check at `now_ns` (monotonic). `clients`: the processes that may be ended. Returns the
  // holders to kill (the caller kills and logs).
  std::vector<Kill> check(detail::Metadata* m, const std::vector<pid_t>& clients, std::int64_t now_ns);

  // How often the server should check: often enough to act within about 1.25x either timeout.
  std::int64_t interval_ns() const;

  // Forgets the held rule's sightings: the server froze its clients meanwhile (a checkpoint), and
  // a holder it stopped was not holding the lock by its own doing.
  void restart_held_clocks() {
    for (Sighting& s : held_) s = {};
  }

 private:
  struct Sighting {
    pid_t tid = 0;
    std::uint64_t holds = 0;  // the held rule's count of acquisitions; unused by the stopped rule
    std::int64_t since = 0;
  };
  static constexpr int kLocks = 3;
  std::int64_t stopped_timeout_ns_;
  std::int64_t held_timeout_ns_;
  Sighting stopped_[kLocks];
  Sighting held_[kLocks];
};

}  // namespace colors::server
