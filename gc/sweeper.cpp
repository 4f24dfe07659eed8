#include "sweeper.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "collector.hpp"
#include "heap.hpp"
#include "monitor.hpp"
#include "pending_bits.hpp"

namespace colors::gc {

using namespace colors::detail;

namespace {

bool is_dead_object(BlockHeader* h, std::uint64_t w, std::uint8_t epoch) {
  return BlockHeader::kind_of(w) == BlockKind::kObject && h->marked.load(std::memory_order_acquire) != epoch &&
         h->recent.load(std::memory_order_acquire) != epoch;
}

void fill_poison(std::uintptr_t from, std::uintptr_t to) {
  for (auto* p = reinterpret_cast<std::uint64_t*>(from); reinterpret_cast<std::uintptr_t>(p) < to; ++p) *p = kPoison;
}

struct PartSweep {
  Metadata* m;
  std::uint8_t epoch;
  bool poison;
  PendingBits pb;
  const std::vector<std::uint64_t>* monitored;  // sorted: addresses monitor records name
  SweepResult r;

  // Scans [p, end) from a reclaimable block under heap_lock and rewrites the run as one block.
  // Returns the first address after the run.
  std::uintptr_t coalesce(std::uintptr_t start, std::uintptr_t end) {
    HeapLockGuard g(m);
    std::uintptr_t p = start;
    while (p < end) {
      BlockHeader* h = header_at(p);
      std::uint64_t w = h->load();
      std::size_t size = BlockHeader::size_of(w);
      if (size == 0) break;
      BlockKind k = BlockHeader::kind_of(w);
      if (k == BlockKind::kFree) {
        freelist_unlink(m, p);  // its pending bits are clear (pending_bits.hpp)
      } else if (k == BlockKind::kFiller) {
        clear_pending_bits(pb, p, p + size);  // a retired TLAB tail may hold an abandoned, flagged block
      } else if (is_dead_object(h, w, epoch)) {
        clear_pending_bits(pb, p, p + size);
        // Before the block can be reused: a dead owner's report for this object must not reach
        // an object allocated here later (monitor.hpp, "Owner death").
        if (!monitored->empty() && std::binary_search(monitored->begin(), monitored->end(), p)) {
          monitor_forget_freed(m, reinterpret_cast<const void*>(p));
        }
        r.objects_freed += 1;
        r.bytes_freed += size;
      } else {
        break;
      }
      p += size;
    }
    std::size_t size = p - start;
    if (size == 0) return start;
    if (poison) fill_poison(start + sizeof(BlockHeader) + 16, p);
    BlockHeader* h = header_at(start);
    h->marked.store(0, std::memory_order_relaxed);
    h->recent.store(0, std::memory_order_relaxed);
    h->owner.store(0, std::memory_order_relaxed);
    if (size >= kTlabSize) {
      freelist_push(m, start, size);
    } else {
      h->publish(size, BlockKind::kFiller);
    }
    return p;
  }

  void run(const Partition& part) {
    std::uintptr_t p = part.begin;
    while (p < part.end) {
      BlockHeader* h = header_at(p);
      std::uint64_t w = h->load();
      std::size_t size = BlockHeader::size_of(w);
      if (size == 0) return;
      BlockKind k = BlockHeader::kind_of(w);
      bool reclaimable = k == BlockKind::kFiller || is_dead_object(h, w, epoch);
      // A lone free chunk is already what coalescing would make of it; only merge it with
      // reclaimable neighbours.
      if (k == BlockKind::kFree && p + size < part.end) {
        std::uint64_t nw = header_at(p + size)->load();
        BlockKind nk = BlockHeader::kind_of(nw);
        reclaimable = nk == BlockKind::kFiller || nk == BlockKind::kFree || is_dead_object(header_at(p + size), nw, epoch);
      }
      if (reclaimable) {
        std::uintptr_t next = coalesce(p, part.end);
        if (next != p) {
          p = next;
          continue;
        }
        w = h->load();
        size = BlockHeader::size_of(w);
      }
      if (BlockHeader::kind_of(w) == BlockKind::kObject) {
        std::uint8_t rec = h->recent.load(std::memory_order_relaxed);
        if (rec != 0 && rec != epoch) h->recent.store(0, std::memory_order_relaxed);
      }
      p += size;
    }
  }
};

}  // namespace

SweepResult sweep(Metadata* m, WorkerPool& pool, const std::vector<Partition>& parts, std::uint8_t epoch, bool poison) {
  std::atomic<std::size_t> next{0};
  std::vector<SweepResult> results(pool.size());
  // Every address a monitor record or poison mark names now. An object dead in this cycle was
  // unreachable at the snapshot, so no thread can enter its monitor afterwards: the records
  // that can name it already exist (a recovery may move one from holder record to mark, and
  // monitor_forget_freed clears both places).
  std::vector<std::uint64_t> monitored;
  monitor_addresses_in_use(m, &monitored);
  std::sort(monitored.begin(), monitored.end());
  pool.run([&](unsigned i) {
    // Orders this cycle's gc_started_seq bump (which happens-before this task) before every write
    // to freed memory below: the other half of read_without_cycle() (libshared/src/objects.hpp).
    std::atomic_thread_fence(std::memory_order_release);
    PartSweep s{m, epoch, poison, pending_bits_of(m), &monitored, {}};
    for (std::size_t k; (k = next.fetch_add(1, std::memory_order_acq_rel)) < parts.size();) s.run(parts[k]);
    results[i] = s.r;
  });
  SweepResult total;
  for (auto& r : results) {
    total.objects_freed += r.objects_freed;
    total.bytes_freed += r.bytes_freed;
  }
  return total;
}

}  // namespace colors::gc
