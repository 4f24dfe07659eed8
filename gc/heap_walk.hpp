// Walking the objects space block by block (the parsability invariant, libshared/src/block.hpp)
// and cutting it into partitions of about equal bytes at block boundaries.
//
// Invariant: partition boundaries stay block boundaries, in this cycle and in later ones. Blocks
// are only split inside themselves (TLAB allocation, carving a free chunk), turned into another
// kind in place (dead-client reclamation), or merged by the sweep, whose runs stay inside a
// partition and which moves a boundary to the start of a block it merges across it
// (sweeper.hpp). So cycles reuse partitions and only walk the heap again now and then, to
// rebalance them.
#pragma once
#include <cstdint>
#include <vector>

#include "layout.hpp"

namespace colors::gc {

struct Partition {
  std::uintptr_t begin, end;
};

// Visits every block of [begin, end): f(address, header word). Stops early at a malformed header
// (size 0), which the verifier reports.
template <class F>
void walk_blocks(std::uintptr_t begin, std::uintptr_t end, F&& f) {
  std::uintptr_t p = begin;
  while (p < end) {
    std::uint64_t w = detail::header_at(p)->load();
    std::size_t size = detail::BlockHeader::size_of(w);
    if (size == 0) return;
    f(p, w);
    p += size;
  }
}

// The flag-clearing walk of the paper: flags here are epoch-stamped, so the walk has no flags to
// clear (gc/README.md); it cuts the heap into `count` partitions of about equal bytes.
std::vector<Partition> compute_partitions(detail::Metadata* m, unsigned count);

}  // namespace colors::gc
