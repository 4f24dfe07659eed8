#include "monitor.hpp"

#include "format.hpp"

#include <dirent.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
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
static_assert(offsetof(MonitorEntry, poison) + sizeof(MonitorEntry::poison) <= 64,
              "the uncontended enter and exit must touch one cache line of the entry");

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
// uncontended enter/exit path, which must stay within 1.5x of a bare mutex). The bits in
// Metadata::monitor_index_clear (a test hook, 0 in production) are then cleared, so tests can
// force every object onto a few entries. Internal inline copies: with -fPIC the exported
// functions could be interposed and are not inlined.
inline std::size_t index_of(const Metadata* m, const void* obj) {
  constexpr unsigned kBits = std::countr_zero(kMonitorCount);
  const std::uint64_t x = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(obj)) >> 4;
  const auto full = static_cast<std::size_t>((x * 0x9e3779b97f4a7c15ULL) >> (64 - kBits));
  return full & ~static_cast<std::size_t>(m->monitor_index_clear.load(std::memory_order_relaxed));
}

inline MonitorEntry& entry_of(Metadata* m, const void* obj) { return m->monitors[index_of(m, obj)]; }

inline std::uint64_t addr_of(const void* obj) { return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(obj)); }

// ---- what the owner holds through an entry (only the owner writes these; see monitor.hpp) ----

// The extra[] slot holding `a`, or nullptr.
MonitorHold* find_extra(MonitorEntry& e, std::uint64_t a) {
  for (MonitorHold& h : e.extra) {
    if (h.obj.load(std::memory_order_relaxed) == a) return &h;
  }
  return nullptr;
}

bool holds(MonitorEntry& e, std::uint64_t a) {
  return e.held.load(std::memory_order_relaxed) == a || find_extra(e, a) != nullptr ||
         e.overflow.load(std::memory_order_relaxed) != 0;
}

// Clears everything the owner records, `held` first: once it is 0 a death is no longer
// reported for it (the critical section is over).
void clear_holds(MonitorEntry& e) {
  e.held.store(0, std::memory_order_relaxed);
  for (MonitorHold& h : e.extra) {
    h.obj.store(0, std::memory_order_relaxed);
    h.count.store(0, std::memory_order_relaxed);
  }
  e.extra_used.store(0, std::memory_order_relaxed);
  e.overflow.store(0, std::memory_order_relaxed);
  e.recursion.store(0, std::memory_order_relaxed);
}

// After extra[] or overflow changed: kMonitorOthersHeld says whether they hold anything.
void sync_others_flag(MonitorEntry& e) {
  const bool others = (e.extra_used.load(std::memory_order_relaxed) | e.overflow.load(std::memory_order_relaxed)) != 0;
  const std::uint32_t r = e.recursion.load(std::memory_order_relaxed) & ~kMonitorOthersHeld;
  e.recursion.store(others ? r | kMonitorOthersHeld : r, std::memory_order_relaxed);
}

// ---- poison marks (see "Owner death" in monitor.hpp) ----

// REQUIRES: e.mutex held. Records that the next acquirer of `a` must get OwnerDiedError.
void add_poison(MonitorEntry& e, std::uint64_t a) {
  for (auto& p : e.poisoned) {
    if (p.load(std::memory_order_seq_cst) == a) return;
  }
  // The count goes up before the mark appears and down after it went, so it never
  // understates the marks present (the uncontended enter reads only the count).
  e.poison.fetch_add(1, std::memory_order_seq_cst);
  for (auto& p : e.poisoned) {
    std::uint64_t expected = 0;
    if (p.compare_exchange_strong(expected, a, std::memory_order_seq_cst)) return;
  }
  // Overflow fallback: the entry's next acquirer, whatever its object, gets the report.
  e.poison.fetch_add(kMonitorPoisonWide - 1, std::memory_order_seq_cst);
}

// Removes the mark of `a` if present; true when this call removed it. Lock-free (also used by
// the collector's sweep, which never takes monitors).
bool remove_poison(MonitorEntry& e, std::uint64_t a) {
  for (auto& p : e.poisoned) {
    std::uint64_t expected = a;
    if (p.load(std::memory_order_seq_cst) == a && p.compare_exchange_strong(expected, 0, std::memory_order_seq_cst)) {
      e.poison.fetch_sub(1, std::memory_order_seq_cst);
      return true;
    }
  }
  return false;
}

// REQUIRES: e.mutex held by the caller, who is about to acquire `a`. Consumes `a`'s report (and
// the wide fallback); true when the caller must get OwnerDiedError.
bool take_poison(MonitorEntry& e, std::uint64_t a) {
  bool report = false;
  if (e.poison.load(std::memory_order_seq_cst) >= kMonitorPoisonWide) {
    e.poison.fetch_sub(kMonitorPoisonWide, std::memory_order_seq_cst);
    report = true;
  }
  return remove_poison(e, a) || report;
}

// REQUIRES: e.mutex just acquired with EOWNERDEAD and made consistent. Turns every object the
// dead owner held through this entry into a poison mark and clears its records.
//
// Against the sweep (monitor_forget_freed): the sweep first clears a freed object's address from
// the holder records (CAS a -> 0), then removes its poison mark. Here a mark is added first,
// then the record is cleared by CAS a -> 0; if that CAS fails, the sweep cleared the record
// first and the mark is taken back. All seq_cst: either the sweep's record CAS precedes ours
// (ours fails, we remove the mark) or ours precedes it, and then our mark precedes the sweep's
// mark removal, which finds and removes it. So no mark outlives the freed object.
void recover_dead_holds(MonitorEntry& e) {
  auto take = [&](std::atomic<std::uint64_t>& rec) {
    const std::uint64_t a = rec.load(std::memory_order_seq_cst);
    if (a == 0) return;
    add_poison(e, a);
    std::uint64_t expected = a;
    if (!rec.compare_exchange_strong(expected, 0, std::memory_order_seq_cst)) remove_poison(e, a);
  };
  take(e.held);
  for (MonitorHold& h : e.extra) take(h.obj);
  if (e.overflow.load(std::memory_order_relaxed) != 0 && e.poison.load(std::memory_order_seq_cst) < kMonitorPoisonWide) {
    e.poison.fetch_add(kMonitorPoisonWide, std::memory_order_seq_cst);
  }
  e.owner.store(0, std::memory_order_relaxed);
  clear_holds(e);
}

[[noreturn]] void throw_owner_died(const void* obj) {
  throw OwnerDiedError("a process died while holding the monitor of object " + hex(obj) +
                       "; the object's state may be inconsistent (check or repair it before relying "
                       "on it). The monitor has been released and is usable again: enter it again.");
}

}  // namespace

std::size_t monitor_index(Metadata* m, const void* obj) { return index_of(m, obj); }

MonitorEntry& monitor_for(Metadata* m, const void* obj) { return entry_of(m, obj); }

void set_monitor_table_bits(Metadata* m, unsigned bits) {
  constexpr unsigned kBits = std::countr_zero(kMonitorCount);
  if (bits > kBits) bits = kBits;
  const auto used = static_cast<std::uint32_t>((std::size_t{1} << bits) - 1);
  m->monitor_index_clear.store(static_cast<std::uint32_t>(kMonitorCount - 1) & ~used, std::memory_order_relaxed);
}

bool monitor_held_by_me(Metadata* m, const void* obj) {
  MonitorEntry& e = entry_of(m, obj);
  return e.owner.load(std::memory_order_relaxed) == owner_word() && holds(e, addr_of(obj));
}

MonitorHolds monitors_held_here(Metadata* m) {
  std::vector<std::uint32_t> tids;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (const dirent* de = ::readdir(d)) {
      if (de->d_name[0] >= '0' && de->d_name[0] <= '9') tids.push_back(static_cast<std::uint32_t>(std::strtoul(de->d_name, nullptr, 10)));
    }
    ::closedir(d);
  }
  std::sort(tids.begin(), tids.end());
  const std::vector<std::uint32_t> ids = own_client_ids();
  const auto self = static_cast<std::uint32_t>(syscall(SYS_gettid));
  MonitorHolds out;
  for (MonitorEntry& e : m->monitors) {
    const std::uint64_t owner = e.owner.load(std::memory_order_acquire);
    if (owner == 0) continue;
    if (e.held.load(std::memory_order_relaxed) == 0 && e.extra_used.load(std::memory_order_relaxed) == 0 &&
        e.overflow.load(std::memory_order_relaxed) == 0)
      continue;  // between a waiter's clear and its owner reset, or an owner that just left
    // A dead process's holder stays recorded until the monitor's next acquirer recovers it, and
    // the kernel may have given its thread id to one of ours: the client id tells them apart.
    const auto client = static_cast<std::uint32_t>(owner >> 32);
    if (std::find(ids.begin(), ids.end(), client) == ids.end()) continue;
    const auto tid = static_cast<std::uint32_t>(owner);
    if (tid == self) ++out.thread;
    if (tid == self || std::binary_search(tids.begin(), tids.end(), tid)) ++out.process;
  }
  return out;
}

void monitor_forget_freed(Metadata* m, const void* obj) {
  MonitorEntry& e = entry_of(m, obj);
  const std::uint64_t a = addr_of(obj);
  // Records first, then the mark (see recover_dead_holds for the argument).
  std::uint64_t expected = a;
  e.held.compare_exchange_strong(expected, 0, std::memory_order_seq_cst);
  for (MonitorHold& h : e.extra) {
    expected = a;
    h.obj.compare_exchange_strong(expected, 0, std::memory_order_seq_cst);
  }
  remove_poison(e, a);
}

void monitor_addresses_in_use(Metadata* m, std::vector<std::uint64_t>* out) {
  // Only the entries' first cache lines, unless an entry names more: extra[] names exist only
  // while kMonitorOthersHeld is set (it is set before a name is stored and cleared after the
  // last one went), and marks only while `poison` counts them.
  for (MonitorEntry& e : m->monitors) {
    if (std::uint64_t a = e.held.load(std::memory_order_seq_cst)) out->push_back(a);
    if ((e.recursion.load(std::memory_order_seq_cst) & kMonitorOthersHeld) != 0) {
      for (MonitorHold& h : e.extra) {
        if (std::uint64_t a = h.obj.load(std::memory_order_seq_cst)) out->push_back(a);
      }
    }
    if (e.poison.load(std::memory_order_seq_cst) == 0) continue;
    for (auto& p : e.poisoned) {
      if (std::uint64_t a = p.load(std::memory_order_seq_cst)) out->push_back(a);
    }
  }
}

namespace {

// REQUIRES: e.mutex held by the caller (just acquired, records clear). Either reports `obj`'s
// poison (releasing the mutex) or makes the caller its owner.
bool finish_acquire(MonitorEntry& e, const void* obj, std::uint64_t me) {
  if (e.poison.load(std::memory_order_seq_cst) != 0 && take_poison(e, addr_of(obj))) {
    pthread_mutex_unlock(&e.mutex);
    throw_owner_died(obj);
  }
  e.owner.store(me, std::memory_order_relaxed);
  e.recursion.store(1, std::memory_order_relaxed);
  e.held.store(addr_of(obj), std::memory_order_relaxed);  // last: from here a death is reported
  return true;
}

// Everything but the uncontended path, kept out of line so that monitor_enter's fast path
// needs no stack frame (it is measured against a bare mutex lock+unlock).
[[gnu::noinline, gnu::cold]] bool enter_slow(Metadata* m, MonitorEntry& e, const void* obj, std::uint64_t me,
                                             int rc, std::int64_t timeout_ns) {
  if (rc == EBUSY) rc = acquire_slow(m, e, timeout_ns);
  if (rc == ETIMEDOUT) return false;
  if (rc == EOWNERDEAD) {
    // The previous holder died inside its critical section. Recover the monitor, mark the
    // objects it held, and wake the waiters so they re-check.
    pthread_mutex_consistent(&e.mutex);
    recover_dead_holds(e);
    e.cv_seq.fetch_add(1, std::memory_order_seq_cst);
    if (e.waiters.load(std::memory_order_seq_cst) != 0) futex_wake_all(&e.cv_seq);
  } else if (rc != 0) {
    throw_lock_error(rc, obj);
  }
  return finish_acquire(e, obj, me);
}

// The caller owns the entry already, for other objects (or for none while only untracked
// holds remain): `obj` hashes to an entry this thread holds.
[[gnu::noinline, gnu::cold]] bool enter_colliding(MonitorEntry& e, const void* obj) {
  const std::uint64_t a = addr_of(obj);
  if (MonitorHold* h = find_extra(e, a)) {
    h->count.store(h->count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return true;
  }
  if (e.poison.load(std::memory_order_seq_cst) != 0 && take_poison(e, a)) throw_owner_died(obj);
  if (e.held.load(std::memory_order_relaxed) == 0) {
    e.recursion.store((e.recursion.load(std::memory_order_relaxed) & kMonitorOthersHeld) | 1, std::memory_order_relaxed);
    e.held.store(a, std::memory_order_relaxed);
    return true;
  }
  for (MonitorHold& h : e.extra) {
    if (h.obj.load(std::memory_order_relaxed) == 0) {
      h.count.store(1, std::memory_order_relaxed);
      e.extra_used.store(e.extra_used.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      sync_others_flag(e);  // before the name: no extra[] name without the flag (the sweep relies on it)
      h.obj.store(a, std::memory_order_relaxed);  // last: from here a death is reported
      return true;
    }
  }
  // More distinct objects on one entry than the records hold: counted, not named; a death
  // then falls back to the wide report (monitor.hpp).
  e.overflow.store(e.overflow.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  sync_others_flag(e);
  return true;
}

void release_if_idle(MonitorEntry& e) {
  if (e.held.load(std::memory_order_relaxed) != 0 || e.extra_used.load(std::memory_order_relaxed) != 0 ||
      e.overflow.load(std::memory_order_relaxed) != 0) {
    return;
  }
  e.recursion.store(0, std::memory_order_relaxed);
  e.owner.store(0, std::memory_order_relaxed);
  pthread_mutex_unlock(&e.mutex);
}

// Exit of an object other than `held`, or of `held`'s last level while other objects remain.
[[gnu::noinline, gnu::cold]] void exit_colliding(MonitorEntry& e, const void* obj) {
  const std::uint64_t a = addr_of(obj);
  if (e.held.load(std::memory_order_relaxed) == a) {  // last level of `held`
    e.held.store(0, std::memory_order_relaxed);
    e.recursion.store(e.recursion.load(std::memory_order_relaxed) & kMonitorOthersHeld, std::memory_order_relaxed);
  } else if (MonitorHold* h = find_extra(e, a)) {
    const std::uint32_t c = h->count.load(std::memory_order_relaxed);
    if (c > 1) {
      h->count.store(c - 1, std::memory_order_relaxed);
      return;
    }
    h->obj.store(0, std::memory_order_relaxed);
    h->count.store(0, std::memory_order_relaxed);
    e.extra_used.store(e.extra_used.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
    sync_others_flag(e);
  } else if (const std::uint32_t o = e.overflow.load(std::memory_order_relaxed); o != 0) {
    e.overflow.store(o - 1, std::memory_order_relaxed);
    sync_others_flag(e);
  } else {
    throw_not_owner("exit", obj);
  }
  release_if_idle(e);
}

// What a thread holds through an entry, saved across monitor_wait.
struct SavedHolds {
  std::uint64_t held;
  std::uint32_t recursion;
  std::uint64_t extra_obj[kMonitorExtraHolds];
  std::uint32_t extra_count[kMonitorExtraHolds];
  std::uint32_t extra_used;
  std::uint32_t overflow;
};

SavedHolds save_holds(MonitorEntry& e) {
  SavedHolds s{};
  s.held = e.held.load(std::memory_order_relaxed);
  s.recursion = e.recursion.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < kMonitorExtraHolds; ++i) {
    s.extra_obj[i] = e.extra[i].obj.load(std::memory_order_relaxed);
    s.extra_count[i] = e.extra[i].count.load(std::memory_order_relaxed);
  }
  s.extra_used = e.extra_used.load(std::memory_order_relaxed);
  s.overflow = e.overflow.load(std::memory_order_relaxed);
  return s;
}

// REQUIRES: e.mutex held, records clear. Restores `s` and consumes the poison marks of the
// restored objects (the waiter is their next acquirer); true when one was marked.
bool restore_holds(MonitorEntry& e, const SavedHolds& s, std::uint64_t me) {
  bool died = false;
  if (e.poison.load(std::memory_order_seq_cst) != 0) {
    if (s.held != 0 && take_poison(e, s.held)) died = true;
    for (std::size_t i = 0; i < kMonitorExtraHolds; ++i) {
      if (s.extra_obj[i] != 0 && take_poison(e, s.extra_obj[i])) died = true;
    }
  }
  e.owner.store(me, std::memory_order_relaxed);
  e.recursion.store(s.recursion, std::memory_order_relaxed);
  for (std::size_t i = 0; i < kMonitorExtraHolds; ++i) {
    e.extra[i].count.store(s.extra_count[i], std::memory_order_relaxed);
    e.extra[i].obj.store(s.extra_obj[i], std::memory_order_relaxed);
  }
  e.extra_used.store(s.extra_used, std::memory_order_relaxed);
  e.overflow.store(s.overflow, std::memory_order_relaxed);
  e.held.store(s.held, std::memory_order_relaxed);
  return died;
}

}  // namespace

bool monitor_enter(Metadata* m, const void* obj, std::int64_t timeout_ns) {
  MonitorEntry& e = entry_of(m, obj);
  const std::uint64_t me = owner_word();
  if (e.owner.load(std::memory_order_relaxed) == me) {
    if (__builtin_expect(e.held.load(std::memory_order_relaxed) != addr_of(obj), 0)) return enter_colliding(e, obj);
    e.recursion.store(e.recursion.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return true;
  }
  const int rc = pthread_mutex_trylock(&e.mutex);
  if (__builtin_expect(rc != 0, 0)) return enter_slow(m, e, obj, me, rc, timeout_ns);
  if (__builtin_expect(e.poison.load(std::memory_order_relaxed) != 0, 0)) return finish_acquire(e, obj, me);
  e.owner.store(me, std::memory_order_relaxed);
  e.recursion.store(1, std::memory_order_relaxed);
  e.held.store(addr_of(obj), std::memory_order_relaxed);  // last: from here a death is reported
  return true;
}

void monitor_exit(Metadata* m, const void* obj) {
  MonitorEntry& e = entry_of(m, obj);
  if (__builtin_expect(e.owner.load(std::memory_order_relaxed) != owner_word(), 0)) throw_not_owner("exit", obj);
  if (__builtin_expect(e.held.load(std::memory_order_relaxed) != addr_of(obj), 0)) return exit_colliding(e, obj);
  const std::uint32_t r = e.recursion.load(std::memory_order_relaxed);
  if ((r & ~kMonitorOthersHeld) > 1) {
    e.recursion.store(r - 1, std::memory_order_relaxed);
    return;
  }
  if (__builtin_expect((r & kMonitorOthersHeld) != 0, 0)) return exit_colliding(e, obj);
  e.held.store(0, std::memory_order_relaxed);  // first: from here a death is not reported
  e.recursion.store(0, std::memory_order_relaxed);
  e.owner.store(0, std::memory_order_relaxed);
  pthread_mutex_unlock(&e.mutex);  // release: the next holder sees owner == 0
}

bool monitor_wait(Metadata* m, const void* obj, std::int64_t timeout_ns, std::int64_t spin_ns) {
  MonitorEntry& e = entry_of(m, obj);
  const std::uint64_t me = owner_word();
  if (e.owner.load(std::memory_order_relaxed) != me || !holds(e, addr_of(obj))) throw_not_owner("wait", obj);
  const std::int64_t start = monotonic_ns();
  const std::int64_t deadline = deadline_after(start, timeout_ns);
  const std::int64_t spin = spin_ns < 0 ? spin_budget_ns() : spin_ns;
  const SavedHolds saved = save_holds(e);

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
  clear_holds(e);  // while waiting this thread holds nothing: a death then is not ours to report
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
  int rc = pthread_mutex_lock(&e.mutex);
  if (rc == EOWNERDEAD) {
    pthread_mutex_consistent(&e.mutex);
    recover_dead_holds(e);
  } else if (rc != 0) {
    throw_lock_error(rc, obj);  // cannot happen: we always make the mutex consistent
  }
  // The waiter is the next acquirer of every object it held: it gets their reports.
  const bool owner_died = restore_holds(e, saved, me);
  if (error) std::rethrow_exception(error);
  if (owner_died) {
    throw OwnerDiedError("a process died while holding the monitor of object " + hex(obj) +
                         " (or of another object this thread holds through the same monitor entry) while this "
                         "thread was waiting on it; the object's state may be inconsistent (check or repair it). "
                         "This thread holds the monitor again and it stays usable.");
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
