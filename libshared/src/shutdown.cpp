#include "shutdown.hpp"

#include "futex.hpp"

namespace colors::detail {

namespace {
// Release: a waiter that observes the new sequence number also observes everything stored before
// it, in particular server_state == kStopped.
void bump_and_wake(std::atomic<std::uint32_t>& seq) {
  seq.fetch_add(1, std::memory_order_release);
  futex_wake_all(&seq);
}
}  // namespace

void wake_all_waiters(Metadata* m) {
  for (MonitorEntry& mon : m->monitors) bump_and_wake(mon.cv_seq);
  bump_and_wake(m->gc_request_seq);
  bump_and_wake(m->gc_done_seq);
  // The bucket array lives in the classes space and is set up when the segment is formatted;
  // the null check only guards a half-formatted segment (startup failure).
  if (m->channel_buckets == nullptr) return;
  for (std::size_t b = 0; b < kNameBuckets; ++b) {
    // Chains are append-only and records immortal: walking them without a lock is safe.
    for (ChannelRecord* c = m->channel_buckets[b].load(std::memory_order_acquire); c != nullptr;
         c = c->next_in_bucket.load(std::memory_order_acquire)) {
      bump_and_wake(c->not_empty_seq);
      bump_and_wake(c->not_full_seq);
    }
  }
}

}  // namespace colors::detail
