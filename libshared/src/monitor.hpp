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
//  * Owner death: the mutex is robust. The entry records which objects its owner holds through
//    it (`held`, then `extra[]` for further objects hashing to the same entry that the same
//    thread holds re-entrantly). When a process dies holding the entry, the next thread to lock
//    the mutex (whatever object it came for) turns those records into poison marks
//    (`poisoned[]`) and clears them. The next acquirer of each marked object, and only it, gets
//    OwnerDiedError once (the object's state may be half-updated; the caller decides); the mark
//    is then gone and later enters succeed. An enter that gets the report does not enter: the
//    monitor is left free (or, re-entrantly, as it was). If the report is taken while
//    re-acquiring inside monitor_wait, the waiter keeps the monitor (as Java throws
//    InterruptedException with the monitor held) and then gets the OwnerDiedError: its scope
//    guard releases it normally.
//    Bounds and fallback: one owner can name kMonitorExtraHolds + 1 distinct objects on one
//    entry, and an entry keeps kMonitorPoisonSlots marks. Beyond either (a thread holding more
//    than 4 objects that all hash to one of 4096 entries, or more than 4 unreported dead objects
//    on one entry), the entry gets the wide mark kMonitorPoisonWide instead: its next acquirer,
//    whatever its object, gets the report once. Reporting too widely is the safe side: an
//    object that may be half-updated is never silently handed over as consistent, except for
//    the overflowed objects' own later acquirers.
//    A record or mark names an address; when the collector's sweep frees the object at that
//    address it clears both (monitor_forget_freed), so a later object at the same address
//    never gets a dead owner's report (the race with a concurrent recovery is argued at
//    recover_dead_holds in monitor.cpp).
//  * Errors instead of undefined behaviour: exit/wait/notify by a thread that does not own the
//    monitor throw NotOwnerError; so do exit and wait of an object the thread does not hold
//    even when it holds the entry for another object (unless more objects than the entry
//    names are held: those are only counted).
//  * wait() on one object releases the whole entry, so other objects this thread holds through
//    the same entry are released while it waits and re-acquired with it (a collision costs
//    that, as it costs contention).
//  * Blocking waits wake at least every kInterruptSliceNs and call check_wait_interrupts(), which
//    throws InterruptedError (binding's hook) or ServerGoneError (server stopped).
//
// Invariants:
//  * entry.owner == W (W != 0) only while the thread with owner word W holds entry.mutex, and
//    only that thread writes W into it. So `owner == my word` is a race-free "do I hold it?"
//    test even with relaxed loads.
//  * entry.recursion, held, extra[] and overflow are written only by the holder of entry.mutex
//    (and by the sweep, which clears the address of an object it frees: no live thread can
//    hold an unreachable object's monitor through the public APIs, which keep the object
//    rooted). A record names an object from just before monitor_enter returns until just after
//    monitor_exit starts releasing it, so a death in between is reported and no other is.
//  * poisoned[] and poison change under entry.mutex when marks are added and consumed, and by
//    lock-free CAS when the sweep removes a freed object's mark; `poison` never understates
//    the marks present, so the uncontended enter only needs `poison == 0` to skip them.
//  * entry.cv_seq changes only under entry.mutex (notify requires ownership); waiters read it
//    under the mutex before releasing it, so a notify that happens after a waiter released the
//    monitor always changes the value the waiter compares against.
#pragma once
#include <cstdint>
#include <vector>

#include "layout.hpp"

namespace colors::detail {

// The entry guarding `obj` (any address; normally an object's BlockHeader).
MonitorEntry& monitor_for(Metadata* m, const void* obj);
// Index of `obj`'s entry in Metadata::monitors (exposed for tests and diagnostics).
std::size_t monitor_index(Metadata* m, const void* obj);
// Test hook: makes the table behave as if it had 2^bits entries (bits >= 12: the whole table),
// so that tests can make distinct objects share entries. Only while no monitor is in use.
void set_monitor_table_bits(Metadata* m, unsigned bits);

// For the collector's sweep: every address named by a holder record or poison mark (a
// superset of the objects monitor_forget_freed must be told about).
void monitor_addresses_in_use(Metadata* m, std::vector<std::uint64_t>* out);
// The sweep frees the object at `obj`: forgets its holder records and its poison mark, so that
// an object later allocated at the same address is not reported. Lock-free.
void monitor_forget_freed(Metadata* m, const void* obj);

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

// The monitor entries held (entered, not waiting) by threads of this process, and by the calling
// thread. A detach refuses while any is held (colors::detach): the segment's range becomes a
// private copy, so a monitor still held then is never released for other processes, not even by
// its holder's death (the kernel's robust-list cleanup writes into the copy). A holder is this
// process's when its owner word names one of this process's client ids (own_client_ids) and a
// thread of /proc/self/task (kernel thread ids are unique among live threads machine-wide; a dead
// process's holder, recorded until its monitor is next acquired, has another client id).
struct MonitorHolds {
  std::size_t process = 0;  // entries held by any thread of this process
  std::size_t thread = 0;   // of those, by the calling thread
};
MonitorHolds monitors_held_here(Metadata* m);

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
