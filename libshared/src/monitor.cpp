#include "monitor.hpp"

#include "format.hpp"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <limits>
#include <string>

#include "colors/errors.hpp"
#include "futex.hpp"
#include "session.hpp"

// Why the condition is a futex word (MonitorEntry::cv_seq) and not a process-shared
// pthread_cond_t:
//  * A condition variable is not robust. POSIX gives robust mutexes EOWNERDEAD but says nothing
//    of a waiter that dies inside pthread_cond_wait, and glibc's condvar (since 2.25) keeps
//    waiter/group reference counts inside the pthread_cond_t that a waiter updates when it
//    leaves. A waiter killed in between leaves those counts behind, and later waits,
//    broadcasts or destroys can block on them forever. Reported in practice for a
//    process-shared condvar after a waiting client was stopped with Ctrl-C: both the restarted
//    reader and the writer froze, the writer inside pthread_cond_broadcast
//    (https://github.com/matgoebl/kogmo-rtdb/issues/2, "Freezes/deadlocks with glibc v2.25");
//    LTP's process-shared pthread_cond_destroy test hangs on glibc 2.32 for the same reason
//    (waiters that never came back: https://github.com/linux-test-project/ltp/issues/746).
//    Killing clients with kill -9 is something colors must survive, so no shared state may
//    depend on a waiter coming back.
//  * With a bare sequence word a dead waiter leaves nothing behind but a stale `waiters` count,
//    which only costs its notifiers a FUTEX_WAKE syscall that finds nobody.
//  * The futex lets a waiter spin on the word before blocking (a cross-core futex wake costs
//    ~70 us here, a polled cache line ~0.1 us) and wake every kInterruptSliceNs to run the
//    interrupt hook, neither of which pthread_cond_timedwait allows without re-locking.

namespace colors::detail {

static_assert((kMonitorCount & (kMonitorCount - 1)) == 0, "kMonitorCount must be a power of two");

namespace {

constexpr std::int64_t kForever = std::numeric_limits<std::int64_t>::max();

std::string hex(const void* p) { return detail::hex(reinterpret_cast<std::uintptr_t>(p)); }

// The calling thread's owner word, cached per thread: computing it out of line on both enter and
// exit costs ~3 ns, a third of a bare robust mutex lock+unlock (the budget is 1.5x). The word is
// client id << 32 | kernel thread id, taken at the thread's first monitor operation, with the thread id read fresh from the kernel.
// What matters for correctness is that no two live threads, in any process, share a word, and
// that a thread's word does not change while it holds monitors: the kernel thread id alone is
// unique among live threads machine-wide (and a live thread's id is never reused), so a client
// id that changed since (detach + attach) cannot create a collision. A fork child inherits the
// cache of the forking thread, which would make it the owner of every monitor its parent's
// thread holds: a pthread_atfork child handler clears it.
thread_local std::uint64_t t_owner = 0;

void clear_owner_cache_in_child() { t_owner = 0; }

[[gnu::noinline]] std::uint64_t compute_owner_word() {
  static const bool registered = (pthread_atfork(nullptr, nullptr, &clear_owner_cache_in_child) == 0);
  (void)registered;
  const auto tid = static_cast<std::uint32_t>(syscall(SYS_gettid));
  t_owner = (static_cast<std::uint64_t>(current_client_id()) << 32) | tid;
  return t_owner;
}

inline std::uint64_t owner_word() {
  const std::uint64_t w = t_owner;
  return __builtin_expect(w != 0, 1) ? w : compute_owner_word();
}

[[noreturn, gnu::noinline, gnu::cold]] void throw_not_owner(const char* op, const void* obj) {
  throw NotOwnerError(std::string("monitor ") + op + " on object " + hex(obj) +
                      " by a thread that does not hold its monitor: enter the monitor first (and exit it "
                      "only as many times as you entered it)");
}

[[noreturn]] void throw_lock_error(int rc, const void* obj) {
  throw Error(ErrorCode::kGeneric,
              "locking the monitor of object " + hex(obj) + " failed: " + std::strerror(rc));
}

std::int64_t deadline_after(std::int64_t start, std::int64_t timeout_ns) {
  if (timeout_ns < 0 || timeout_ns > kForever - start) return kForever;
  return start + timeout_ns;
}

// One timed lock until monotonic time `until_ns`: pthread_mutex_clocklock on CLOCK_MONOTONIC
// (immune to wall-clock jumps). ThreadSanitizer (GCC 12) has no interceptor for clocklock and
// would miss the acquisition, so sanitized builds use timedlock with an equivalent
// CLOCK_REALTIME deadline (a slice is at most kInterruptSliceNs long).
int lock_until(pthread_mutex_t* mu, std::int64_t until_ns) {
  timespec ts{};
#if defined(__SANITIZE_THREAD__)
  const std::int64_t left = std::max<std::int64_t>(0, until_ns - monotonic_ns());
  clock_gettime(CLOCK_REALTIME, &ts);
  const std::int64_t real = static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec + left;
  ts.tv_sec = static_cast<time_t>(real / 1000000000);
  ts.tv_nsec = static_cast<long>(real % 1000000000);
  return pthread_mutex_timedlock(mu, &ts);
#else
  ts.tv_sec = static_cast<time_t>(until_ns / 1000000000);
  ts.tv_nsec = static_cast<long>(until_ns % 1000000000);
  return pthread_mutex_clocklock(mu, CLOCK_MONOTONIC, &ts);
#endif
}

// Contended acquisition: a short trylock spin, then timed locks in kInterruptSliceNs slices
// with the interrupt check between them. Returns 0, EOWNERDEAD or ETIMEDOUT (other errors throw).
[[gnu::noinline]] int acquire_slow(Metadata* m, MonitorEntry& e, std::int64_t timeout_ns) {
  if (timeout_ns == 0) return ETIMEDOUT;
  const std::int64_t start = monotonic_ns();
  const std::int64_t deadline = deadline_after(start, timeout_ns);
  const std::int64_t spin_end = std::min(deadline, start + spin_budget_ns());
  for (std::int64_t now = start; now < spin_end; now = monotonic_ns()) {
    for (int i = 0; i < 8; ++i) cpu_relax();
    int rc = pthread_mutex_trylock(&e.mutex);
    if (rc != EBUSY) return rc;
  }
  for (;;) {
    const std::int64_t now = monotonic_ns();
    if (now >= deadline) return ETIMEDOUT;
    const std::int64_t until = deadline - now > kInterruptSliceNs ? now + kInterruptSliceNs : deadline;
    int rc = lock_until(&e.mutex, until);
    if (rc != ETIMEDOUT) return rc;
    check_wait_interrupts(m);
  }
}

}  // namespace

namespace {

// Objects are 16-byte aligned and cluster in the heap: drop the always-zero low bits, then
// Fibonacci hashing (multiply by 2^64/phi, keep the top bits), which spreads neighbouring
// addresses over the whole table at the cost of one multiplication (this is on the
// uncontended enter/exit path, which must stay within 1.5x of a bare mutex). Internal inline
// copies: with -fPIC the exported functions could be interposed and are not inlined.
inline std::size_t index_of(const void* obj) {
  constexpr unsigned kBits = std::countr_zero(kMonitorCount);
  const std::uint64_t x = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(obj)) >> 4;
  return static_cast<std::size_t>((x * 0x9e3779b97f4a7c15ULL) >> (64 - kBits));
}

inline MonitorEntry& entry_of(Metadata* m, const void* obj) { return m->monitors[index_of(obj)]; }

}  // namespace

std::size_t monitor_index(const void* obj) { return index_of(obj); }

MonitorEntry& monitor_for(Metadata* m, const void* obj) { return entry_of(m, obj); }

bool monitor_held_by_me(Metadata* m, const void* obj) {
  return entry_of(m, obj).owner.load(std::memory_order_relaxed) == owner_word();
}

namespace {

// Everything but the uncontended path, kept out of line so that monitor_enter's fast path
// needs no stack frame (it is measured against a bare mutex lock+unlock).
[[gnu::noinline, gnu::cold]] bool enter_slow(Metadata* m, MonitorEntry& e, const void* obj, std::uint64_t me,
                                             int rc, std::int64_t timeout_ns) {
  if (rc == EBUSY) rc = acquire_slow(m, e, timeout_ns);
  if (rc == ETIMEDOUT) return false;
  if (rc == EOWNERDEAD) {
    // The previous holder died inside its critical section. Recover the monitor itself, leave
    // it free, wake its waiters so they re-check, and report once.
    pthread_mutex_consistent(&e.mutex);
    e.owner.store(0, std::memory_order_relaxed);
    e.recursion.store(0, std::memory_order_relaxed);
    e.cv_seq.fetch_add(1, std::memory_order_seq_cst);
    if (e.waiters.load(std::memory_order_seq_cst) != 0) futex_wake_all(&e.cv_seq);
    pthread_mutex_unlock(&e.mutex);
    throw OwnerDiedError("a process died while holding the monitor of object " + hex(obj) +
                         "; the object's state may be inconsistent (check or repair it before relying "
                         "on it). The monitor has been released and is usable again: enter it again.");
  }
  if (rc != 0) throw_lock_error(rc, obj);
  e.owner.store(me, std::memory_order_relaxed);
  e.recursion.store(1, std::memory_order_relaxed);
  return true;
}

}  // namespace

bool monitor_enter(Metadata* m, const void* obj, std::int64_t timeout_ns) {
  MonitorEntry& e = entry_of(m, obj);
  const std::uint64_t me = owner_word();
  if (e.owner.load(std::memory_order_relaxed) == me) {
    e.recursion.store(e.recursion.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return true;
  }
  const int rc = pthread_mutex_trylock(&e.mutex);
  if (__builtin_expect(rc != 0, 0)) return enter_slow(m, e, obj, me, rc, timeout_ns);
  e.owner.store(me, std::memory_order_relaxed);
  e.recursion.store(1, std::memory_order_relaxed);
  return true;
}

void monitor_exit(Metadata* m, const void* obj) {
  MonitorEntry& e = entry_of(m, obj);
  if (__builtin_expect(e.owner.load(std::memory_order_relaxed) != owner_word(), 0)) throw_not_owner("exit", obj);
  const std::uint32_t r = e.recursion.load(std::memory_order_relaxed);
  if (r > 1) {
    e.recursion.store(r - 1, std::memory_order_relaxed);
    return;
  }
  e.recursion.store(0, std::memory_order_relaxed);
  e.owner.store(0, std::memory_order_relaxed);
  pthread_mutex_unlock(&e.mutex);  // release: the next holder sees owner == 0
}

bool monitor_wait(Metadata* m, const void* obj, std::int64_t timeout_ns, std::int64_t spin_ns) {
  MonitorEntry& e = entry_of(m, obj);
  const std::uint64_t me = owner_word();
  if (e.owner.load(std::memory_order_relaxed) != me) throw_not_owner("wait", obj);
  const std::int64_t start = monotonic_ns();
  const std::int64_t deadline = deadline_after(start, timeout_ns);
  const std::int64_t spin = spin_ns < 0 ? spin_budget_ns() : spin_ns;
  const std::uint32_t saved = e.recursion.load(std::memory_order_relaxed);

  // Lost-wakeup argument. Both the registration (waiters++) and the read of cv_seq happen while
  // we still hold the mutex, and monitor_notify_all requires the mutex. So any notify that can
  // matter to us runs after our unlock and therefore (mutex release -> acquire) both sees
  // waiters >= 1 and increments cv_seq past `seq`. Our futex_wait(cv_seq, seq) then either
  // finds the word changed (returns at once) or is already queued in the kernel when
  // futex_wake_all arrives (the kernel checks the word and queues atomically w.r.t. wake).
  // The seq_cst orders additionally make the pair (waiters++ ; load seq) vs
  // (seq++ ; load waiters) a correct Dekker handshake even without the mutex.
  e.waiters.fetch_add(1, std::memory_order_seq_cst);
  const std::uint32_t seq = e.cv_seq.load(std::memory_order_seq_cst);
  e.recursion.store(0, std::memory_order_relaxed);
  e.owner.store(0, std::memory_order_relaxed);
  pthread_mutex_unlock(&e.mutex);

  bool notified = false;
  std::exception_ptr error;
  try {
    // Spin phase: poll the word (no syscall) for a short while; a notifier on another core is
    // usually much quicker than a futex round trip.
    const std::int64_t spin_end = std::min(deadline, start + spin);
    for (std::int64_t now = start; now < spin_end;) {
      if (e.cv_seq.load(std::memory_order_acquire) != seq) {
        notified = true;
        break;
      }
      cpu_relax();
      now = monotonic_ns();
    }
    while (!notified) {
      if (e.cv_seq.load(std::memory_order_acquire) != seq) {
        notified = true;
        break;
      }
      const std::int64_t now = monotonic_ns();
      if (now >= deadline) break;
      const std::int64_t slice = deadline - now > kInterruptSliceNs ? kInterruptSliceNs : deadline - now;
      futex_wait(&e.cv_seq, seq, slice);
      if (e.cv_seq.load(std::memory_order_acquire) != seq) {
        notified = true;
        break;
      }
      check_wait_interrupts(m);
    }
  } catch (...) {
    error = std::current_exception();
  }
  e.waiters.fetch_sub(1, std::memory_order_seq_cst);

  // Re-acquire unconditionally (not interruptible): whatever happens, the caller holds the
  // monitor again when monitor_wait returns or throws, so its scope guard stays correct.
  bool owner_died = false;
  int rc = pthread_mutex_lock(&e.mutex);
  if (rc == EOWNERDEAD) {
    pthread_mutex_consistent(&e.mutex);
    owner_died = true;
  } else if (rc != 0) {
    throw_lock_error(rc, obj);  // cannot happen: we always make the mutex consistent
  }
  e.owner.store(me, std::memory_order_relaxed);
  e.recursion.store(saved, std::memory_order_relaxed);
  if (error) std::rethrow_exception(error);
  if (owner_died) {
    throw OwnerDiedError("a process died while holding the monitor of object " + hex(obj) +
                         " while this thread was waiting on it; the object's state may be inconsistent "
                         "(check or repair it). This thread holds the monitor again and it stays usable.");
  }
  return notified;
}

void monitor_notify_all(Metadata* m, const void* obj) {
  MonitorEntry& e = entry_of(m, obj);
  if (e.owner.load(std::memory_order_relaxed) != owner_word()) throw_not_owner("notify_all", obj);
  // Publish first, then look for sleepers (see the argument in monitor_wait). Skipping the
  // syscall when nobody is registered is what keeps an uncontended notify cheap.
  e.cv_seq.fetch_add(1, std::memory_order_seq_cst);
  if (e.waiters.load(std::memory_order_seq_cst) != 0) futex_wake_all(&e.cv_seq);
}

}  // namespace colors::detail
