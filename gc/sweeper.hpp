// Parallel concurrent sweep: frees the objects neither marked nor recent in this cycle and
// coalesces them, with fillers and free chunks next to them, into freelist chunks.
//
// Invariants:
//  * Dead objects and fillers are touched by nobody but the sweeper; free chunks are also touched
//    by allocating mutators, so a run containing one is scanned and rewritten under heap_lock.
//  * A run is rewritten as one block by a single header store at its start (plus the freelist
//    links behind it); the headers inside it stay as they were, so a walker that was already
//    inside the run still reaches its end. Walkers that could be inside a run are other sweep
//    threads (which stay within their partitions) and dead-client reclaim (serialised with the
//    sweep by the collector's walk lock).
//  * A run never crosses a partition boundary while the partitions are swept in parallel. Then,
//    with no other sweep thread left, free space on both sides of each boundary is merged under
//    heap_lock (left to right, so a merged block can reach further boundaries), and the boundary
//    moves to the merged block's start; partitions left empty are dropped. So boundaries stay
//    block boundaries, and partitions never cut the free space into pieces (a heap with 16
//    partitions could otherwise never offer more than a sixteenth of itself to one allocation).
//  * Surviving objects whose `recent` is from an older cycle get recent = 0, so that the 8-bit
//    epoch wrapping around never makes an old object look recent.
#pragma once
#include <cstdint>
#include <vector>

#include "heap_walk.hpp"
#include "layout.hpp"
#include "worker_pool.hpp"

namespace colors::gc {

struct SweepResult {
  std::uint64_t objects_freed = 0, bytes_freed = 0;
  // Bytes of surviving objects per allocating client id (a block's `owner`), unordered.
  std::vector<std::pair<std::uint32_t, std::uint64_t>> live_by_client;
  void count_live(std::uint32_t owner, std::uint64_t bytes) {
    // Objects of one client lie in runs (its TLABs): the last entry is almost always the one.
    if (!live_by_client.empty() && live_by_client.back().first == owner) {
      live_by_client.back().second += bytes;
      return;
    }
    for (auto& e : live_by_client)
      if (e.first == owner) {
        e.second += bytes;
        std::swap(e, live_by_client.back());
        return;
      }
    live_by_client.emplace_back(owner, bytes);
  }
};

// Sweeps `parts` and moves their boundaries where it merges free space across them.
SweepResult sweep(detail::Metadata* m, WorkerPool& pool, std::vector<Partition>& parts, std::uint8_t epoch,
                  bool poison);

}  // namespace colors::gc
