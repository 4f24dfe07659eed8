// Channels: named, permanent, bounded FIFO queues of references with blocking send/receive
// (timeouts, and try variants with timeout 0). GC roots.
//
// Layout: a ChannelRecord and its `capacity` slots (std::atomic<Word>) live in the classes space
// (immortal), chained in Metadata::channel_buckets exactly like repositories (append-only
// chains, records complete before a release store links them, creation under
// Metadata::classes_lock with a re-check of the chain). The capacity is fixed at creation:
// find_or_create_channel on an existing name returns the existing channel whatever capacity it
// is given (the first creator's capacity wins; read ChannelRecord::capacity to see it).
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

#include "layout.hpp"

namespace colors::detail {

inline constexpr std::uint32_t kMaxChannelCapacity = 1u << 20;

// The channel called `name`, created with `capacity` slots (1..kMaxChannelCapacity) on first use.
// Throws InvalidArgumentError (bad name or capacity), OutOfMemoryError (classes space full).
ChannelRecord* find_or_create_channel(Metadata* m, std::string_view name, std::uint32_t capacity);
// Lookup only; nullptr when no channel of that name exists yet. Never blocks.
ChannelRecord* find_channel(Metadata* m, std::string_view name);

// Appends `value` (not null: InvalidArgumentError), waiting while the channel is full.
// timeout_ns < 0: forever; 0: try once without waiting. Returns false on timeout (nothing sent).
// spin_ns < 0: use spin_budget_ns() (benchmarks and tests pass their own).
// Throws InterruptedError / ServerGoneError from a blocking wait.
bool channel_send(Metadata* m, ChannelRecord* c, Word value, std::int64_t timeout_ns = -1,
                  std::int64_t spin_ns = -1);
// Takes the oldest value into *out, waiting while the channel is empty. Same timeout, spin and
// error rules as channel_send. Returns false on timeout (*out untouched). With `root`, a
// reference is made a root of this process (roots.hpp) before it leaves the channel and the
// root slot is returned there (nullptr for scalars); the caller releases it.
bool channel_receive(Metadata* m, ChannelRecord* c, Word* out, std::int64_t timeout_ns = -1,
                     std::int64_t spin_ns = -1, std::atomic<Word>** root = nullptr);
// Number of values queued (a snapshot).
std::uint64_t channel_size(const ChannelRecord* c);

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

// Visits every non-null slot of `c`: f(std::atomic<Word>* slot, Word value). Lock-free; scans all
// `capacity` slots rather than [head, tail) so that it never needs the lock and also covers a
// value left by a sender that died between writing its slot and bumping tail (conservative).
// A value moving out concurrently is covered by the deletion barrier of the receive.
template <typename F>
void for_each_channel_slot(ChannelRecord* c, F&& f) {
  for (std::uint32_t i = 0; i < c->capacity; ++i) {
    const Word w = c->slots[i].load(std::memory_order_acquire);
    if (w != kNull) f(&c->slots[i], w);
  }
}

}  // namespace colors::detail
