#include "restored_segment.hpp"

#include "robust_mutex.hpp"

namespace colors::detail {

std::size_t mark_restored_lock_holders_dead(Metadata* m) {
  std::size_t held = 0;
  held += m->classes_lock.mark_holder_dead();
  held += m->heap_lock.mark_holder_dead();
  held += m->gc_cycle_lock.mark_holder_dead();
  for (MonitorEntry& e : m->monitors) held += mark_mutex_holder_dead(&e.mutex);
  for (std::size_t b = 0; b < kNameBuckets; ++b) {
    for (RepositoryRecord* r = m->repository_buckets[b].load(std::memory_order_relaxed); r != nullptr;
         r = r->next_in_bucket.load(std::memory_order_relaxed))
      held += r->lock.mark_holder_dead();
    for (ChannelRecord* c = m->channel_buckets[b].load(std::memory_order_relaxed); c != nullptr;
         c = c->next_in_bucket.load(std::memory_order_relaxed))
      held += c->lock.mark_holder_dead();
  }
  return held;
}

}  // namespace colors::detail
