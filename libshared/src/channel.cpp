#include "channel.hpp"
#include "transaction.hpp"

#include "roots.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <string>

#include "barrier.hpp"
#include "block.hpp"
#include "classes.hpp"
#include "colors/errors.hpp"
#include "futex.hpp"
#include "robust_mutex.hpp"
#include "session.hpp"

// Crash consistency (a process may be killed anywhere, also while holding the channel's lock).
// The lock is robust: the next locker gets it (RobustMutex::lock() returns true) and continues
// with no repair, because every operation moves the queue between consistent states with single
// stores, in an order that makes each intermediate state consistent too:
//   send:    (1) store_ref(slots[tail % cap], v)   (2) tail = tail + 1
//     Death after (1): slot tail % cap lies outside [head, tail) (there was room), so the value
//     is not part of the queue; the next send to that index overwrites it (the barrier flags
//     it). Until then the collector sees it as a root (it scans all slots): a harmless leak.
//   receive: (1) v = slots[head % cap]   (2) store_ref(slots[head % cap], null)   (3) head + 1
//     Death after (1): nothing changed; the value is delivered to the next receiver (the dead
//     process never delivered it, so survivors still see every value exactly once).
//     Death after (2): the live range starts with a null slot. Null can never be sent, so a
//     receiver that finds null at head knows it is such a remnant and skips it (the value went
//     down with the receiver that took it).
//   The wake-up counters (seq words) may miss the bump of an operation whose process died;
//   waiters re-check the queue at least every kInterruptSliceNs, so they recover within one
//   slice. A waiter killed inside futex_wait leaves its waiters count incremented, which only
//   costs later wakers a FUTEX_WAKE that finds nobody.
//
// Wake-up protocol (no lost wake-ups). Waiter (receive shown; send is symmetric with
// not_full_seq / send_waiters and "tail - head < capacity"):
//     W1 recv_waiters.fetch_add(1)     [seq_cst]
//     W2 s = not_empty_seq.load()      [seq_cst]
//     W3 if tail != head: retry        [seq_cst loads]
//     W4 futex_wait(not_empty_seq, s)  (the kernel compares *word == s atomically with queueing)
// Waker (after a send):
//     K1 tail = t + 1                  (release, under the lock; then unlock)
//     KF atomic_thread_fence(seq_cst)
//     K3 if recv_waiters.load() > 0:   [relaxed]
//     K4   not_empty_seq.fetch_add(1); futex_wake_all(not_empty_seq)
// The published state itself (tail) is what waiters re-check, so the seq word only needs to
// change when somebody may sleep on it; an uncontended send touches no extra shared cache line.
//   * If K3 reads a count from before W1, K3 is coherence-ordered before the seq_cst W1, so the
//     fence KF precedes W1 in the single total order S, hence precedes W3 (W1 is sequenced
//     before W3); K1 is sequenced before KF, so W3 observes K1 ([atomics.order]: a seq_cst load
//     that follows in S a fence sequenced after a store observes that store or a later one).
//     The waiter sees the new tail and does not sleep.
//   * Otherwise K3 sees W1 and the waker bumps the word and wakes. If W2 read the word before
//     K4, futex_wait either finds it changed (returns at once) or is queued before the wake and
//     is woken. If W2 read K4's value, it synchronizes with K4, so W3 sees the new tail.
// Either way a waiter never sleeps through a send that made its condition true.
//
// Cache lines: records are placed so that the lock word, head, tail and both seq words share
// one 64-byte line and the waiter counts (read by every waker, rarely written) sit on the next:
// a send or receive then moves about two lines between cores (that one and the slot's).

namespace colors::detail {

namespace {

constexpr std::int64_t kForever = std::numeric_limits<std::int64_t>::max();

ChannelRecord* find_in_chain(ChannelRecord* c, std::string_view name) {
  for (; c != nullptr; c = c->next_in_bucket.load(std::memory_order_acquire)) {
    if (name_view(c->name) == name) return c;
  }
  return nullptr;
}

[[noreturn]] void throw_stale(const ChannelRecord* c) {
  throw KeyError("channel '" + std::string(name_view(c->name)) +
                 "' was deleted: this handle no longer refers to it (open the channel again by name to use a "
                 "channel created since)");
}

// The generation an operation runs on: the handle's, or (0) the record's current one.
std::uint64_t generation_for(const ChannelRecord* c, std::uint64_t generation) {
  if (generation != 0) return generation;
  generation = c->generation.load(std::memory_order_acquire);
  if ((generation & 1) == 0) throw_stale(c);
  return generation;
}

// REQUIRES: c->lock held. Clears every slot through the deletion barrier and frees the block.
void drop_slots(Metadata* m, ChannelRecord* c) {
  std::atomic<Word>* slots = c->slots.load(std::memory_order_relaxed);
  if (slots == nullptr) return;
  const std::uint64_t n = slot_block_capacity(slots);
  for (std::uint64_t i = 0; i < n; ++i) {
    if (slots[i].load(std::memory_order_relaxed) != kNull) store_ref(&slots[i], kNull);
  }
  c->slots.store(nullptr, std::memory_order_release);
  c->capacity.store(0, std::memory_order_relaxed);
  slot_block_free(m, slots);  // REQUIRES classes_lock: held by every caller
}

void check_capacity(std::uint64_t capacity) {
  if (capacity < 1 || capacity > kMaxChannelCapacity) {
    throw InvalidArgumentError("channel capacity must be between 1 and " + std::to_string(kMaxChannelCapacity) +
                               " (the maximum), got " + std::to_string(capacity));
  }
}

void wake(std::atomic<std::uint32_t>& seq, std::atomic<std::uint32_t>& waiters) {
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer does not model fences: use the equivalent seq_cst read-modify-write (it
  // orders K1 before a later W1 through the modification order of `waiters`).
  if (waiters.fetch_add(0, std::memory_order_seq_cst) != 0) {
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);  // KF (see the protocol above)
  if (waiters.load(std::memory_order_relaxed) != 0) {
#endif
    seq.fetch_add(1, std::memory_order_seq_cst);
    futex_wake_all(&seq);
  }
}

// head is read before tail: both only grow and head <= tail, so the later tail is >= the head
// we read and the difference never underflows (it may overstate the fill level transiently,
// which a waiter corrects on the next seq change or slice).
bool has_room(const ChannelRecord* c) {
  const std::uint64_t h = c->head.load(std::memory_order_seq_cst);
  const std::uint64_t t = c->tail.load(std::memory_order_seq_cst);
  return t - h < c->capacity.load(std::memory_order_relaxed);
}
bool has_data(const ChannelRecord* c) {
  const std::uint64_t h = c->head.load(std::memory_order_seq_cst);
  const std::uint64_t t = c->tail.load(std::memory_order_seq_cst);
  return t != h;
}

bool try_send(ChannelRecord* c, Word value, std::uint64_t generation) {
  bool sent = false;
  c->lock.lock();  // owner died: state is consistent by construction (see top of file)
  if (c->generation.load(std::memory_order_relaxed) != generation) {
    c->lock.unlock();
    throw_stale(c);
  }
  const std::uint64_t h = c->head.load(std::memory_order_relaxed);
  const std::uint64_t t = c->tail.load(std::memory_order_relaxed);
  const std::uint32_t cap = c->capacity.load(std::memory_order_relaxed);
  if (t - h < cap) {
    store_ref(&c->slots.load(std::memory_order_relaxed)[t % cap], value);
    c->tail.store(t + 1, std::memory_order_release);
    sent = true;
  }
  c->lock.unlock();
  if (sent) wake(c->not_empty_seq, c->recv_waiters);
  return sent;
}

bool try_receive(ChannelRecord* c, Word* out, std::atomic<Word>** root, std::uint64_t generation) {
  bool got = false;
  bool advanced = false;
  c->lock.lock();  // owner died: state is consistent by construction (see top of file)
  if (c->generation.load(std::memory_order_relaxed) != generation) {
    c->lock.unlock();
    throw_stale(c);
  }
  const std::uint32_t cap = c->capacity.load(std::memory_order_relaxed);
  std::atomic<Word>* const slots = c->slots.load(std::memory_order_relaxed);
  for (;;) {
    const std::uint64_t h = c->head.load(std::memory_order_relaxed);
    const std::uint64_t t = c->tail.load(std::memory_order_relaxed);
    if (h == t) break;
    std::atomic<Word>* slot = &slots[h % cap];
    const Word v = slot->load(std::memory_order_acquire);
    // The receiver roots the value before it leaves the channel, so no collector cycle can
    // find it in neither place; the deletion barrier of the clearing store flags it too.
    if (root != nullptr && is_ref(v)) *root = root_acquire(v);
    store_ref(slot, kNull);
    c->head.store(h + 1, std::memory_order_release);
    advanced = true;
    if (v == kNull) continue;  // remnant of a receiver that died after clearing the slot
    *out = v;
    got = true;
    break;
  }
  c->lock.unlock();
  if (advanced) wake(c->not_full_seq, c->send_waiters);
  return got;
}

// Spin, then block in slices, until `attempt` succeeds or the deadline passes.
// `stale` (the channel was deleted: attempt() then throws) is checked only in the block phase, so
// the spin phase keeps to the head/tail line: a deletion sets head = tail and bumps and wakes the
// seq word after changing the generation, so a waiter that read the seq word before the bump is
// woken, and one that read it after sees the new generation.
template <typename Attempt, typename Ready, typename Stale>
bool wait_until(Metadata* m, std::atomic<std::uint32_t>& seq, std::atomic<std::uint32_t>& waiters,
                std::int64_t timeout_ns, std::int64_t spin_ns, Attempt attempt, Ready ready, Stale stale) {
  if (attempt()) return true;
  if (timeout_ns == 0) return false;
  const std::int64_t start = monotonic_ns();
  const std::int64_t deadline = (timeout_ns < 0 || timeout_ns > kForever - start) ? kForever : start + timeout_ns;
  const std::int64_t spin = spin_ns < 0 ? spin_budget_ns() : spin_ns;
  const std::int64_t spin_end = std::min(deadline, start + spin);
  Poller poller;  // one per wait (futex.hpp)
  for (;;) {
    // Spin phase: loads of head/tail only (no lock, no syscall).
    std::int64_t now = monotonic_ns();
    while (now < spin_end && !ready()) {
      poller.poll(now);
      now = monotonic_ns();
    }
    if (ready()) {
      if (attempt()) return true;
      continue;  // another process got there first; the spin budget is absolute, so this ends
    }
    if (now >= deadline) return false;
    // Block phase (see the wake-up protocol at the top of the file).
    waiters.fetch_add(1, std::memory_order_seq_cst);
    const std::uint32_t s = seq.load(std::memory_order_seq_cst);
    if (ready() || stale()) {
      waiters.fetch_sub(1, std::memory_order_seq_cst);
      if (attempt()) return true;
      continue;
    }
    const std::int64_t slice = std::min<std::int64_t>(kInterruptSliceNs, deadline - now);
    futex_wait(&seq, s, slice);
    waiters.fetch_sub(1, std::memory_order_seq_cst);
    if ((ready() || stale()) && attempt()) return true;
    check_wait_interrupts(m);  // InterruptedError / ServerGoneError
  }
}

}  // namespace

ChannelRecord* find_channel(Metadata* m, std::string_view name) {
  const std::uint32_t h = name_hash(name);
  ChannelRecord* c = find_in_chain(m->channel_buckets[h % kNameBuckets].load(std::memory_order_acquire), name);
  return c != nullptr && (c->generation.load(std::memory_order_acquire) & 1) != 0 ? c : nullptr;
}

ChanRef open_channel(Metadata* m, std::string_view name, std::uint64_t capacity) {
  check_name(name, "channel name");
  check_capacity(capacity);
  const std::uint32_t h = name_hash(name);
  std::atomic<ChannelRecord*>& bucket = m->channel_buckets[h % kNameBuckets];
  if (ChannelRecord* c = find_in_chain(bucket.load(std::memory_order_acquire), name)) {
    const std::uint64_t g = c->generation.load(std::memory_order_acquire);
    if ((g & 1) != 0) return {c, g};
  }

  // A holder of classes_lock that died leaves at most unreachable bytes: nothing is linked
  // before it is complete.
  RobustLockGuard g(m->classes_lock);
  ChannelRecord* head = bucket.load(std::memory_order_acquire);
  if (ChannelRecord* c = find_in_chain(head, name)) {  // created meanwhile, or a tombstone
    RobustLockGuard cl(c->lock);
    std::uint64_t gen = c->generation.load(std::memory_order_relaxed);
    if ((gen & 1) != 0) return {c, gen};
    // Revival. A deleter that died midway left slots behind: drop them first.
    drop_slots(m, c);
    std::atomic<Word>* slots = slot_block_alloc(m, static_cast<std::uint32_t>(capacity));
    c->head.store(0, std::memory_order_relaxed);
    c->tail.store(0, std::memory_order_relaxed);
    c->capacity.store(static_cast<std::uint32_t>(capacity), std::memory_order_relaxed);
    c->slots.store(slots, std::memory_order_release);
    ++gen;
    c->generation.store(gen, std::memory_order_release);
    return {c, gen};
  }
  std::atomic<Word>* slots = slot_block_alloc(m, static_cast<std::uint32_t>(capacity));
  // Place the record so that its lock starts a cache line (see "Cache lines" above); the record
  // only needs 8-byte alignment.
  static_assert(alignof(ChannelRecord) <= 8 && offsetof(ChannelRecord, lock) % 8 == 0);
  constexpr std::size_t kLockOffset = offsetof(ChannelRecord, head);
  std::uintptr_t raw;
  try {
    raw = reinterpret_cast<std::uintptr_t>(classes_alloc(m, sizeof(ChannelRecord) + 64));  // zero-filled
  } catch (...) {
    slot_block_free(m, slots);
    throw;
  }
  auto* c = reinterpret_cast<ChannelRecord*>(round_up(raw + kLockOffset, 64) - kLockOffset);
  c->name = make_name(m, name);
  c->capacity.store(static_cast<std::uint32_t>(capacity), std::memory_order_relaxed);
  c->slots.store(slots, std::memory_order_relaxed);  // every slot null
  c->generation.store(1, std::memory_order_relaxed);
  c->lock.init();
  c->head.store(0, std::memory_order_relaxed);
  c->tail.store(0, std::memory_order_relaxed);
  c->next_in_bucket.store(head, std::memory_order_relaxed);
  bucket.store(c, std::memory_order_release);  // publication point
  return {c, 1};
}

ChannelRecord* find_or_create_channel(Metadata* m, std::string_view name, std::uint32_t capacity) {
  return open_channel(m, name, capacity).rec;
}

bool delete_channel(Metadata* m, std::string_view name) {
  check_name(name, "channel name");
  const std::uint32_t h = name_hash(name);
  ChannelRecord* c = find_in_chain(m->channel_buckets[h % kNameBuckets].load(std::memory_order_acquire), name);
  if (c == nullptr) return false;
  {
    // Lock order: classes_lock (the slot free lists), then the record's lock.
    RobustLockGuard g(m->classes_lock);
    RobustLockGuard cl(c->lock);
    const std::uint64_t gen = c->generation.load(std::memory_order_relaxed);
    if ((gen & 1) == 0) return false;
    c->generation.store(gen + 1, std::memory_order_seq_cst);  // first: every later operation fails
    drop_slots(m, c);
    c->head.store(c->tail.load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
  // Wake every blocked sender and receiver: their wait condition includes the generation.
  for (std::atomic<std::uint32_t>* seq : {&c->not_empty_seq, &c->not_full_seq}) {
    seq->fetch_add(1, std::memory_order_seq_cst);
    futex_wake_all(seq);
  }
  return true;
}

bool channel_send(Metadata* m, ChannelRecord* c, Word value, std::int64_t timeout_ns, std::int64_t spin_ns,
                  std::uint64_t generation) {
  tx_refuse("sending on a channel");
  if (value == kNull) {
    throw InvalidArgumentError("cannot send null through a channel (null marks an empty slot); wrap it or send "
                               "a sentinel value instead");
  }
  const std::uint64_t gen = generation_for(c, generation);
  return wait_until(
      m, c->not_full_seq, c->send_waiters, timeout_ns, spin_ns, [&] { return try_send(c, value, gen); },
      [&] { return has_room(c); }, [&] { return c->generation.load(std::memory_order_seq_cst) != gen; });
}

bool channel_receive(Metadata* m, ChannelRecord* c, Word* out, std::int64_t timeout_ns, std::int64_t spin_ns,
                     std::atomic<Word>** root, std::uint64_t generation) {
  tx_refuse("receiving from a channel");
  const std::uint64_t gen = generation_for(c, generation);
  return wait_until(
      m, c->not_empty_seq, c->recv_waiters, timeout_ns, spin_ns, [&] { return try_receive(c, out, root, gen); },
      [&] { return has_data(c); }, [&] { return c->generation.load(std::memory_order_seq_cst) != gen; });
}

std::uint32_t channel_capacity(const ChanRef& c) {
  const std::uint32_t cap = c.rec->capacity.load(std::memory_order_acquire);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (c.rec->generation.load(std::memory_order_acquire) != c.generation) throw_stale(c.rec);
  return cap;
}

std::uint64_t channel_size(const ChannelRecord* c) {
  const std::uint64_t h = c->head.load(std::memory_order_acquire);
  const std::uint64_t t = c->tail.load(std::memory_order_acquire);
  return t >= h ? t - h : 0;
}

}  // namespace colors::detail
