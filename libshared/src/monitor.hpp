// Shared monitors: a fixed table of MonitorEntry in the metadata space (Metadata::monitors); an
// object's monitor is chosen by hashing its address (objects never move, so the choice is stable
// in every process).
//
// Semantics (Java-like):
//  * Re-entrant: the entry records its owner (client id << 32 | kernel thread id, the layout of
//    client id << 32 | kernel thread id, cached per thread: see monitor.cpp) and a recursion count;
//    only the outermost enter/exit touch the mutex.
//  * Distinct objects may hash to the same entry. That only adds contention and spurious
//    wakeups; it is why notify is always notify-all (a notify meant for one object could
//    otherwise wake a waiter of another object and be lost).
//  * Owner death: the mutex is robust. If a process dies holding a monitor, the next
//    monitor_enter makes it consistent, leaves it FREE, and throws OwnerDiedError once (the
//    guarded object's state may be half-updated; the caller decides). The next enter succeeds.
//    If the death is noticed while re-acquiring inside monitor_wait, the waiter keeps the
//    monitor (as Java throws InterruptedException with the monitor held) and then gets the
//    OwnerDiedError: its scope guard releases it normally.
//  * Errors instead of undefined behaviour: exit/wait/notify by a thread that does not own the
//    monitor throw NotOwnerError.
//  * Blocking waits wake at least every kInterruptSliceNs and call check_wait_interrupts(), which
//    throws InterruptedError (binding's hook) or ServerGoneError (server stopped).
//
// Invariants:
//  * entry.owner == W (W != 0) only while the thread with owner word W holds entry.mutex, and
//    only that thread writes W into it. So `owner == my word` is a race-free "do I hold it?"
//    test even with relaxed loads.
//  * entry.recursion is read and written only by the holder of entry.mutex.
//  * entry.cv_seq changes only under entry.mutex (notify requires ownership); waiters read it
//    under the mutex before releasing it, so a notify that happens after a waiter released the
//    monitor always changes the value the waiter compares against.
#pragma once
#include <cstdint>

#include "layout.hpp"

namespace colors::detail {

// The entry guarding `obj` (any address; normally an object's BlockHeader).
MonitorEntry& monitor_for(Metadata* m, const void* obj);
// Index of `obj`'s entry in Metadata::monitors (exposed for tests and diagnostics).
std::size_t monitor_index(const void* obj);

// Acquires `obj`'s monitor, re-entrantly. timeout_ns < 0: wait forever; 0: try once.
// Returns false on timeout. Throws OwnerDiedError (monitor left free), InterruptedError,
// ServerGoneError.
bool monitor_enter(Metadata* m, const void* obj, std::int64_t timeout_ns = -1);
// Releases one level of ownership. Throws NotOwnerError if the caller does not hold it.
void monitor_exit(Metadata* m, const void* obj);
// Releases the monitor completely, waits for a notify_all on the same entry (spurious wakeups
// allowed) or the timeout (< 0: forever), re-acquires it and restores the recursion count.
// Returns false on timeout. Throws NotOwnerError (not held; nothing changed), and, always with
// the monitor held again: InterruptedError, ServerGoneError, OwnerDiedError.
// spin_ns < 0: use spin_budget_ns().
bool monitor_wait(Metadata* m, const void* obj, std::int64_t timeout_ns = -1, std::int64_t spin_ns = -1);
// Wakes every thread waiting on `obj`'s entry. Throws NotOwnerError if the caller does not hold it.
void monitor_notify_all(Metadata* m, const void* obj);
bool monitor_held_by_me(Metadata* m, const void* obj);

// RAII holder: enter in the constructor (no timeout), exit in the destructor.
class MonitorGuard {
 public:
  MonitorGuard(Metadata* m, const void* obj) : m_(m), obj_(obj) { monitor_enter(m, obj); }
  ~MonitorGuard() {
    try {
      monitor_exit(m_, obj_);
    } catch (...) {  // cannot happen while we hold it; never throw from a destructor
    }
  }
  MonitorGuard(const MonitorGuard&) = delete;
  MonitorGuard& operator=(const MonitorGuard&) = delete;

 private:
  Metadata* m_;
  const void* obj_;
};

}  // namespace colors::detail
