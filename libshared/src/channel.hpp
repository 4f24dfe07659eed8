// Channels: named, bounded FIFO queues of references with blocking send/receive (timeouts, and
// try variants with timeout 0), which can be deleted. GC roots.
//
// Layout: a ChannelRecord in the classes space, chained in Metadata::channel_buckets exactly like
// repositories (append-only chains, records complete before a release store links them,
// creation under Metadata::classes_lock with a re-check of the chain), and its slots in a slot
// block (classes.hpp). The capacity is fixed at creation: find_or_create_channel on an existing
// name returns the existing channel whatever capacity it is given (the first creator's capacity
// wins; read ChannelRecord::capacity to see it).
//
// Deletion and reuse (as for repositories, repository.hpp): the record stays in its chain for
// good and never changes its name; deletion makes it a tombstone (generation even, capacity 0,
// slots nullptr) and frees its slot block, which holds the bulk of a channel's memory, to the
// free list of its size class, whence a later channel of any name takes it. Creating the name
// again revives the record (next odd generation, a slot block of the new capacity).
//   * A handle (ChanRef, or a generation passed to send/receive) names the generation it was
//     taken at. try_send / try_receive compare it with the record's under the record's lock, and
//     delete changes the generation under the same lock, so an operation runs entirely on the
//     generation it checked: a stale handle never touches another generation's slots, head or
//     tail. It raises KeyError naming the channel.
//   * Delete: under classes_lock and the record's lock, generation -> even, every slot cleared
//     with store_ref (the deletion barrier flags each value dropped, as for any overwrite during
//     a collector cycle), slots -> nullptr, capacity -> 0, head = tail; then the block is freed
//     and both seq words are bumped and woken unconditionally. Blocked senders and receivers
//     check the generation before each sleep and after each wake-up (not while spinning: see
//     wait_until in channel.cpp), so they wake, retry under the lock and raise KeyError.
//   * Lock-free readers of a record (the waiters' readiness polls, the collector's root scan,
//     the verifier) may still hold the old slots pointer after the block was freed and reused.
//     A slot block stays a slot block for good and its header (its capacity) never changes, so
//     they read slots of some channel: null, or a value a live channel held at that moment,
//     which the collector may mark (a conservative root) without harm. The root scan reads the
//     block's capacity from the block, never the record's capacity, so a revival that changes
//     the record's capacity cannot make it read past a block.
//
// Queue state, guarded by the record's robust lock (never held across a wait):
//   head  monotonic count of receives, tail  monotonic count of sends,
//   live values are slots[i % capacity] for head <= i < tail; every other slot is null.
// Waiting is lock-free polling, then futex waits on not_empty_seq / not_full_seq (see
// channel.cpp for the wake-up protocol and the crash-consistency argument).
#pragma once
#include <atomic>
#include <cstdint>
#include <string_view>

#include "classes.hpp"
#include "layout.hpp"

namespace colors::detail {

// 65536 slots = 512 KiB of the classes space (1/128 of the default 64 MiB): large enough for any
// queue a program waits on, small enough that one channel cannot take the space.
inline constexpr std::uint32_t kMaxChannelCapacity = 1u << 16;

struct ChanRef {
  ChannelRecord* rec = nullptr;
  std::uint64_t generation = 0;
};

// The live channel called `name`, created (or revived) with `capacity` slots
// (1..kMaxChannelCapacity) if it does not exist. Throws InvalidArgumentError (bad name or
// capacity), OutOfMemoryError (classes space full).
ChanRef open_channel(Metadata* m, std::string_view name, std::uint64_t capacity);
ChannelRecord* find_or_create_channel(Metadata* m, std::string_view name, std::uint32_t capacity);
// Lookup only; nullptr when no live channel of that name exists. Never blocks.
ChannelRecord* find_channel(Metadata* m, std::string_view name);
// Deletes the channel called `name`: what it holds is dropped, its slot block is reused, handles
// become stale and blocked senders and receivers raise KeyError. False when there is none.
bool delete_channel(Metadata* m, std::string_view name);

// Appends `value` (not null: InvalidArgumentError), waiting while the channel is full.
// timeout_ns < 0: forever; 0: try once without waiting. Returns false on timeout (nothing sent).
// spin_ns < 0: use spin_budget_ns() (benchmarks and tests pass their own).
// generation: the handle's (0: the record's generation when the call starts).
// Throws InterruptedError / ServerGoneError from a blocking wait, KeyError when the channel's
// generation is not (or no longer) `generation`.
bool channel_send(Metadata* m, ChannelRecord* c, Word value, std::int64_t timeout_ns = -1,
                  std::int64_t spin_ns = -1, std::uint64_t generation = 0);
// Takes the oldest value into *out, waiting while the channel is empty. Same timeout, spin,
// generation and error rules as channel_send. Returns false on timeout (*out untouched). With
// `root`, a reference is made a root of this process (roots.hpp) before it leaves the channel
// and the root slot is returned there (nullptr for scalars); the caller releases it.
bool channel_receive(Metadata* m, ChannelRecord* c, Word* out, std::int64_t timeout_ns = -1,
                     std::int64_t spin_ns = -1, std::atomic<Word>** root = nullptr, std::uint64_t generation = 0);
// Number of values queued (a snapshot).
std::uint64_t channel_size(const ChannelRecord* c);
// The capacity; KeyError when the handle is stale.
std::uint32_t channel_capacity(const ChanRef& c);

// Visits every channel (collector root scan, verifier). Lock-free.
template <typename F>
void for_each_channel(Metadata* m, F&& f) {
  for (std::size_t b = 0; b < kNameBuckets; ++b) {
    for (ChannelRecord* c = m->channel_buckets[b].load(std::memory_order_acquire); c != nullptr;
         c = c->next_in_bucket.load(std::memory_order_acquire)) {
      f(c);
    }
  }
}

// Visits every non-null slot of `c`: f(std::atomic<Word>* slot, Word value). Lock-free; scans
// the whole slot block rather than [head, tail) so that it never needs the lock and also covers
// a value left by a sender that died between writing its slot and bumping tail (conservative).
// A value moving out concurrently is covered by the deletion barrier of the receive; a block
// freed or reused meanwhile holds only slots (see "Deletion and reuse" above).
template <typename F>
void for_each_channel_slot(ChannelRecord* c, F&& f) {
  std::atomic<Word>* slots = c->slots.load(std::memory_order_acquire);
  if (slots == nullptr) return;
  const std::uint64_t n = slot_block_capacity(slots);
  for (std::uint64_t i = 0; i < n; ++i) {
    const Word w = slots[i].load(std::memory_order_acquire);
    if (w != kNull) f(&slots[i], w);
  }
}

}  // namespace colors::detail
