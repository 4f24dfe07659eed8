// The lock word of a shared list, set or map (ListObject::lock, HashObject::lock): every container
// operation runs under it, so each one is linearizable across the threads of every process.
//
// Word layout (64 bits; 0 = free):
//   bits 63..32  owner's client id (never 0 while held)
//   bits 15..8   owner's client slot (Metadata::clients index)
//   bit  2       kTorn: the holder is inside a multi-slot change of a list (shift, replace, extend)
//   bits 1..0    1 = held, 2 = held and a thread may sleep on the futex
// The futex is the low 32-bit half of the word (slot and state), little-endian.
//
// Invariants:
//  * The word is non-zero exactly while some thread owns the container; only the owner clears it
//    (exchange to 0, release), except that a waiter that finds the owner's client dead (its slot no
//    longer kActive with that client id) takes the word over by compare-exchange from the exact
//    value it observed. So a lock held by a process killed with SIGKILL passes to the next waiter
//    instead of staying held forever; client ids are never reused, so a live owner is never robbed.
//  * Acquire (compare-exchange, acquire) and release (exchange, release) order every access to the
//    container's size, storage and slots between consecutive owners: all of them happen under the
//    lock. The collector reads containers without the lock; it needs none (barrier.hpp, gc/README.md)
//    because every reference store still goes through store_ref.
//  * A waiter sets state 2 before sleeping; the releasing exchange then sees 2 and wakes the futex.
//    Both are read-modify-writes of one word, so a wake is never missed.
//  * No container operation takes a second container lock or calls back into user code while it
//    holds one (allocation may wait for the collector, which takes no container lock), so these
//    locks never nest and cannot deadlock. They are not re-entrant.
//  * Taking over from a dead owner repairs what its interrupted operation may have left: the caller
//    of ContainerGuard decides how (ContainerGuard::recovered, ::torn).
#pragma once
#include <atomic>
#include <cstdint>

#include "layout.hpp"
#include "roots.hpp"

namespace colors::detail {

inline constexpr std::uint64_t kLockHeld = 1;
inline constexpr std::uint64_t kLockSleepers = 2;
inline constexpr std::uint64_t kLockStateMask = 3;
inline constexpr std::uint64_t kLockTorn = 4;
// The client id the server takes lock words with while it rolls back a dead client's transaction
// (transaction.hpp); never a client's id, and never taken for a dead owner's.
inline constexpr std::uint32_t kServerLockOwner = 0xffffffffu;

// This thread's owner word (client id, slot, state kLockHeld); 0 when not attached.
std::uint64_t container_owner_word();

// Slow path of container_lock: spins, then sleeps on the futex; takes over from a dead owner.
// Returns the word it was acquired from when that came from a dead owner (non-zero), else 0.
// Throws InterruptedError / ServerGoneError (check_wait_interrupts) while waiting.
std::uint64_t container_lock_slow(std::atomic<std::uint64_t>* word, std::uint64_t mine);

// Holds a container's lock for one operation.
class ContainerGuard {
 public:
  explicit ContainerGuard(std::atomic<std::uint64_t>* word) : word_(word) { acquire(); }
  ~ContainerGuard() {
    if (held_) release();
  }
  ContainerGuard(const ContainerGuard&) = delete;
  ContainerGuard& operator=(const ContainerGuard&) = delete;

  // Whether the lock was taken over from a dead owner (its operation may be unfinished).
  bool recovered() const { return dead_owner_ != 0; }
  // Whether that owner died inside a multi-slot list change.
  bool torn() const { return (dead_owner_ & kLockTorn) != 0; }

  // Releases the lock, runs `wait`, and takes the lock again; recovered() and torn() then describe
  // the new acquisition. If `wait` or the new acquisition throws, the guard holds nothing.
  // REQUIRES: what the caller repaired after a dead owner is repaired (the lock passes to others).
  template <class Wait>
  void relock_after(Wait&& wait) {
    held_ = false;
    release();
    wait();
    acquire();
    held_ = true;
  }

  // Brackets a multi-slot change of a list, so a taker-over knows it may be half done.
  void begin_torn() { word_->fetch_or(kLockTorn, std::memory_order_acq_rel); }  // before the slot stores
  void end_torn() { word_->fetch_and(~kLockTorn, std::memory_order_release); }  // after them

 private:
  void acquire() {
    const std::uint64_t mine = container_owner_word();
    std::uint64_t expected = 0;
    dead_owner_ = 0;
    if (word_->compare_exchange_strong(expected, mine, std::memory_order_acquire, std::memory_order_relaxed)) return;
    dead_owner_ = container_lock_slow(word_, mine);
  }
  void release() {
    const std::uint64_t old = word_->exchange(0, std::memory_order_release);
    if ((old & kLockStateMask) == kLockSleepers) wake();
  }
  void wake();
  std::atomic<std::uint64_t>* word_;
  std::uint64_t dead_owner_ = 0;
  bool held_ = true;  // false only inside relock_after
};

// root_load for a slot of a container whose lock the caller holds: the slot cannot change until the
// lock is released (every mutator store to it is made under the lock; the collector never writes
// container slots), and the root is published (a seq_cst store) before that, so the value was in
// the slot at an instant when this process already held it as a root, which is what root_load
// re-reads the slot to establish (roots.hpp).
inline Rooted root_locked(const std::atomic<Word>* slot) {
  Word w = slot->load(std::memory_order_acquire);
  if (!is_ref(w)) return Rooted(w, nullptr);
  return Rooted(w, root_acquire(w));
}

}  // namespace colors::detail
