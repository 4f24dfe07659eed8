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
//  * A run never crosses a partition boundary, so boundaries stay block boundaries.
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
};

SweepResult sweep(detail::Metadata* m, WorkerPool& pool, const std::vector<Partition>& parts, std::uint8_t epoch,
                  bool poison);

}  // namespace colors::gc
