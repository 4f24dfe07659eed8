// A process-shared, robust pthread mutex living in the segment.
//
// Robustness: if the holder dies, the kernel hands the mutex to the next locker with EOWNERDEAD.
// lock() reports that (returns true) after making the mutex consistent again, so callers decide
// whether the state it guarded needs repair (internal locks) or must be reported (user monitors).
//
// Invariant (holds_): every acquisition (lock, lock_for) adds one to holds_ before its unlock,
// and nothing else writes it, so holds_ only grows, and two sightings of the same holder_tid()
// and the same holds() are one continuous hold unless a hold began between them whose holder had
// not counted itself yet (a window of a few instructions). The server's lock-holder watch uses it
// to tell a thread that never lets the lock go from one that takes it often.
#pragma once
#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>

namespace colors::detail {

class RobustMutex {
 public:
  // REQUIRES: called once, by the segment's creator, before any other process maps the segment.
  void init();
  // Returns true when the previous holder died while holding the mutex.
  bool lock();
  // As lock(), giving up after timeout_ns; returns 0 (locked), 1 (locked, owner died), -1 (timeout).
  int lock_for(std::int64_t timeout_ns);
  void unlock();
  // The kernel thread id of the holder (in the pid namespace of the process that took it), or 0
  // while the mutex is free. A snapshot that may change at once: for watching (the server's
  // lock-holder watch), never for deciding who owns what.
  pid_t holder_tid() const;
  // How many times the mutex was acquired since init() (the invariant above). For watching.
  std::uint64_t holds() const { return holds_.load(std::memory_order_relaxed); }
  // For a segment restored from a checkpoint: the thread the mutex word names as its holder
  // existed only in the checkpointed instant, and no kernel will ever report its death. Marks
  // such a held mutex as its holder's death would (FUTEX_OWNER_DIED, no waiters), so the next
  // lock() takes it with EOWNERDEAD and the usual repair. Returns whether it was held.
  // REQUIRES: no process maps the segment but the caller's.
  bool mark_holder_dead();

 private:
  // Only the holder writes it, so a plain increment suffices; atomic for the watch's reads.
  void count_hold() { holds_.store(holds_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }

  pthread_mutex_t m_;
  std::atomic<std::uint64_t> holds_;
};

// mark_holder_dead for a robust pthread mutex of the segment that is not a RobustMutex (monitors).
bool mark_mutex_holder_dead(pthread_mutex_t* m);

// Scoped holder for internal locks, whose guarded state is kept consistent step by step (each
// step a single store), so a previous holder's death needs no repair.
class RobustLockGuard {
 public:
  explicit RobustLockGuard(RobustMutex& m) : m_(m) { m_.lock(); }
  ~RobustLockGuard() { m_.unlock(); }
  RobustLockGuard(const RobustLockGuard&) = delete;
  RobustLockGuard& operator=(const RobustLockGuard&) = delete;

 private:
  RobustMutex& m_;
};

}  // namespace colors::detail
