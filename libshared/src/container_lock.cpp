#include "container_lock.hpp"

#include "futex.hpp"
#include "segment.hpp"
#include "session.hpp"

namespace colors::detail {

namespace {

// How long a waiter polls before it sleeps, and how long one sleep lasts at most: container
// operations are short, so a waiter normally gets the lock while polling; a sleeper wakes at
// least every kSleepNs to see whether the owner died (a dead owner never wakes anyone).
constexpr std::int64_t kPollNs = 20'000;
constexpr std::int64_t kSleepNs = 2'000'000;

std::atomic<std::uint32_t>* futex_half(std::atomic<std::uint64_t>* word) {
  static_assert(sizeof(std::atomic<std::uint64_t>) == 8 && alignof(std::atomic<std::uint64_t>) == 8);
  // The low half on a little-endian machine: slot and state bits.
  return reinterpret_cast<std::atomic<std::uint32_t>*>(word);
}

// Whether the client that owns `w` is gone: its slot no longer holds it as an active client.
// A slot is reused only after the server finished reclaiming it, and ids are never reused, so a
// live owner is never reported dead. A thread of this process is never dead to us.
bool owner_dead(Metadata* m, std::uint64_t w) {
  const auto id = static_cast<std::uint32_t>(w >> 32);
  const auto slot = static_cast<std::uint32_t>((w >> 8) & 0xff);
  if (id == current_client_id() || id == kServerLockOwner) return false;
  const ClientSlot& cs = m->clients[slot];
  return cs.state.load(std::memory_order_acquire) != static_cast<std::uint32_t>(ClientState::kActive) ||
         cs.client_id.load(std::memory_order_acquire) != id;
}

}  // namespace

std::uint64_t container_owner_word() {
  return std::uint64_t{current_client_id()} << 32 | std::uint64_t{current_client_slot() & 0xff} << 8 | kLockHeld;
}

std::uint64_t container_lock_slow(std::atomic<std::uint64_t>* word, std::uint64_t mine) {
  Metadata* m = current_meta();
  const std::int64_t start = monotonic_ns();
  std::int64_t next_check = start + kInterruptSliceNs;
  {
    Poller poller;
    for (std::int64_t now = start; now - start < kPollNs; now = monotonic_ns()) {
      std::uint64_t w = word->load(std::memory_order_relaxed);
      if (w == 0 && word->compare_exchange_weak(w, mine, std::memory_order_acquire, std::memory_order_relaxed)) return 0;
      poller.poll(now);
    }
  }
  // From now on this thread may sleep: it takes the lock with kLockSleepers, because other
  // sleepers may remain that its release must wake.
  const std::uint64_t mine_sleeping = (mine & ~kLockStateMask) | kLockSleepers;
  for (;;) {
    std::uint64_t w = word->load(std::memory_order_relaxed);
    if (w == 0) {
      if (word->compare_exchange_weak(w, mine_sleeping, std::memory_order_acquire, std::memory_order_relaxed)) return 0;
      continue;
    }
    if (owner_dead(m, w)) {
      // Take the lock over, from exactly the value seen (only one waiter wins it).
      if (word->compare_exchange_strong(w, mine_sleeping, std::memory_order_acquire, std::memory_order_relaxed)) return w;
      continue;
    }
    if ((w & kLockStateMask) != kLockSleepers) {
      const std::uint64_t flagged = (w & ~kLockStateMask) | kLockSleepers;
      if (!word->compare_exchange_weak(w, flagged, std::memory_order_relaxed, std::memory_order_relaxed)) continue;
      w = flagged;
    }
    futex_wait(futex_half(word), static_cast<std::uint32_t>(w), kSleepNs);
    if (monotonic_ns() >= next_check) {
      check_wait_interrupts(m);
      next_check = monotonic_ns() + kInterruptSliceNs;
    }
  }
}

void ContainerGuard::wake() { futex_wake_all(futex_half(word_)); }

}  // namespace colors::detail
