#include "sweeper.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

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
    BlockHeader* h = header_at(start);
    h->marked.store(0, std::memory_order_relaxed);
    h->recent.store(0, std::memory_order_relaxed);
    h->owner.store(0, std::memory_order_relaxed);
    // The run is one filler before anything inside it is overwritten: a server killed from here
    // on leaves a parsable heap to its successor (gc/README.md, "A server that dies mid-cycle").
    h->publish(size, BlockKind::kFiller);
    if (poison) fill_poison(start + sizeof(BlockHeader) + 16, p);
    if (size >= kTlabSize) freelist_push(m, start, size);
    return p;
  }

  // Sweeps one partition; returns the start of its last block.
  std::uintptr_t run(const Partition& part) {
    std::uintptr_t p = part.begin, last = part.begin;
    while (p < part.end) {
      last = p;
      BlockHeader* h = header_at(p);
      std::uint64_t w = h->load();
      std::size_t size = BlockHeader::size_of(w);
      if (size == 0) return last;
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
        r.count_live(h->owner.load(std::memory_order_relaxed), size);
      }
      p += size;
    }
    return last;
  }

  // Whether a block can be merged with a neighbour: free or filler. Once read under heap_lock,
  // either stays what it is: free chunks change only under heap_lock, fillers only by the sweep
  // (a thread retiring its TLAB turns kTlab into kFiller without the lock, so a kTlab block read
  // here may become a filler meanwhile; it is then merged by a later cycle).
  static bool mergeable(std::uint64_t w) {
    BlockKind k = BlockHeader::kind_of(w);
    return k == BlockKind::kFree || k == BlockKind::kFiller;
  }

  // Merges the free space on both sides of the boundary between parts[i] and parts[i + 1] into one
  // block, and moves the boundary to that block's start. `from` is a block start in parts[i] at or
  // before its last block. Returns the end of the merged block, or 0 when nothing was merged.
  // Runs alone: the parallel sweep is over and dead-client reclamation waits for the walk lock.
  std::uintptr_t merge_boundary(std::vector<Partition>& parts, std::size_t i, std::uintptr_t from) {
    const std::uintptr_t b = parts[i].end;
    HeapLockGuard g(m);
    // The block that ends at the boundary: mutators may have split blocks since the sweep.
    std::uintptr_t l = from;
    for (;;) {
      std::size_t size = BlockHeader::size_of(header_at(l)->load());
      if (size == 0) return 0;
      if (l + size >= b) break;
      l += size;
    }
    BlockHeader* lh = header_at(l);
    BlockHeader* rh = header_at(b);
    const std::uint64_t lw = lh->load(), rw = rh->load();
    if (l + BlockHeader::size_of(lw) != b || !mergeable(lw) || !mergeable(rw)) return 0;
    const std::size_t rsize = BlockHeader::size_of(rw);
    if (BlockHeader::kind_of(lw) == BlockKind::kFree) freelist_unlink(m, l);
    else clear_pending_bits(pb, l, b);  // a retired TLAB tail may hold an abandoned, flagged block
    if (BlockHeader::kind_of(rw) == BlockKind::kFree) freelist_unlink(m, b);
    else clear_pending_bits(pb, b, b + rsize);
    const std::size_t size = b + rsize - l;
    if (poison) fill_poison(b, b + std::min<std::size_t>(rsize, 2 * sizeof(BlockHeader)));  // the stale header inside
    lh->marked.store(0, std::memory_order_relaxed);
    lh->recent.store(0, std::memory_order_relaxed);
    lh->owner.store(0, std::memory_order_relaxed);
    if (size >= kTlabSize) freelist_push(m, l, size);
    else lh->publish(size, BlockKind::kFiller);
    parts[i].end = parts[i + 1].begin = l;
    return b + rsize;
  }
};

}  // namespace

// What each attached client holds (ClientSlot::live_bytes): the bytes of surviving objects it
// allocated, counted by the sweep just finished; what it allocated since starts again from 0.
// Objects of clients that are gone count for nobody, so a reused slot starts clean.
static void publish_client_live_bytes(Metadata* m, const SweepResult& r) {
  for (ClientSlot& s : m->clients) {
    if (s.state.load(std::memory_order_acquire) != static_cast<std::uint32_t>(ClientState::kActive)) continue;
    const std::uint32_t id = s.client_id.load(std::memory_order_relaxed);
    std::uint64_t live = 0;
    for (const auto& [owner, bytes] : r.live_by_client)
      if (owner == id) live = bytes;
    s.live_bytes.store(live, std::memory_order_release);
    s.allocated_since.store(0, std::memory_order_relaxed);
  }
}

SweepResult sweep(Metadata* m, WorkerPool& pool, std::vector<Partition>& parts, std::uint8_t epoch, bool poison) {
  std::atomic<std::size_t> next{0};
  std::vector<SweepResult> results(pool.size());
  // Every address a monitor record or poison mark names now. An object dead in this cycle was
  // unreachable at the snapshot, so no thread can enter its monitor afterwards: the records
  // that can name it already exist (a recovery may move one from holder record to mark, and
  // monitor_forget_freed clears both places).
  std::vector<std::uint64_t> monitored;
  monitor_addresses_in_use(m, &monitored);
  std::sort(monitored.begin(), monitored.end());
  std::vector<std::uintptr_t> last(parts.size());
  pool.run([&](unsigned i) {
    // Orders this cycle's gc_started_seq bump and its kSweeping phase store (which happen-before
    // this task) before every write to freed memory below: the collector's half of the windows
    // in which nothing is freed (no_sweep_window_begin/_end, libshared/src/objects.hpp).
    std::atomic_thread_fence(std::memory_order_release);
    PartSweep s{m, epoch, poison, pending_bits_of(m), &monitored, {}};
    for (std::size_t k; (k = next.fetch_add(1, std::memory_order_acq_rel)) < parts.size();) last[k] = s.run(parts[k]);
    results[i] = s.r;
  });
  // Free space across partition boundaries, left to right: a block merged at one boundary may
  // reach the next (its partition then becomes empty and is dropped). Merging frees no object, so
  // no monitor name is forgotten here.
  PartSweep s{m, epoch, poison, pending_bits_of(m), &monitored, {}};
  std::uintptr_t merged_end = 0;
  for (std::size_t k = 0; k + 1 < parts.size(); ++k) {
    // A last block inside the block merged at the previous boundary is no block any more: parts[k]
    // then begins at the merged block, and its walk starts there.
    std::uintptr_t from = last[k] < merged_end ? parts[k].begin : last[k];
    merged_end = s.merge_boundary(parts, k, from);
  }
  std::erase_if(parts, [](const Partition& p) { return p.begin == p.end; });
  SweepResult total;
  for (auto& r : results) {
    total.objects_freed += r.objects_freed;
    total.bytes_freed += r.bytes_freed;
    for (const auto& [owner, bytes] : r.live_by_client) total.count_live(owner, bytes);
  }
  publish_client_live_bytes(m, total);
  return total;
}

}  // namespace colors::gc
