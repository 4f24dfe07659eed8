// The pending set of the collector: one bit per granule of the objects space, set for the granule
// where an object starts when the write barrier overwrites a reference to it (barrier.hpp), taken
// by the collector's pending passes (gc/marker.cpp), cleared by the sweep for what it frees.
//
// Why a side bitmap and not a flag in each block header: a pending pass must find every flagged
// object, and with a header flag it had to read the header of every block of the heap, twice per
// cycle (the second pass to confirm that nothing is left). That streamed the whole used heap
// through the caches and took most of a cycle (7-13 ms of 10-16 ms with ~50 MB in use). The
// bitmap is 1/128 of the objects space and is read sequentially; a set bit names its object's
// address directly, so no block walk is needed to find it.
//
// Invariants:
//  * A set bit is at the first granule of a block that is, or was when the bit was set, an object
//    or a block reserved for one (only those are referenced from slots). Memory returned to the
//    heap has its bits cleared first: the sweep clears the whole range of every run it coalesces
//    (dead objects, fillers, free chunks) and dead-client reclamation the range of every TLAB rest
//    it frees. So a pass that reads a set bit reads a real block header, never the middle of an
//    object; it processes the block only if it is a published object (kObject), and may drop the
//    bit of a reserved block: an object published later in the cycle is recent, which the cycle
//    spares anyway.
//  * The barrier sets a bit with a release RMW after the overwritten value was read and before
//    the new value is stored (store_ref's order); a pass takes a whole word with a seq_cst
//    exchange before it reads the objects it names, so a bit set after that exchange is seen by
//    the next pass (the termination argument of gc/README.md, unchanged).
//  * Bits are set and taken only by atomic RMWs (fetch_or, exchange, fetch_and): several threads
//    of several processes share a word, and a plain store would lose another thread's bit.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "block.hpp"

namespace colors::detail {

// The pending set of the segment attached in this process (segment.cpp keeps it in step with
// current_meta): words == nullptr when none is.
struct PendingBits {
  std::uintptr_t objects_begin = 0;
  std::uintptr_t objects_end = 0;
  std::atomic<std::uint64_t>* words = nullptr;
  // The segment's Metadata::gc_phase (a GcPhase) and gc_epoch: whether a dropped root must be
  // flagged (roots.hpp, root_release_flags).
  const std::atomic<std::uint8_t>* gc_phase = nullptr;
  const std::atomic<std::uint8_t>* gc_epoch = nullptr;
};
extern PendingBits g_pending_bits;

// Bytes of bitmap for an objects space of `heap_bytes` (a multiple of kGranule).
inline constexpr std::size_t pending_bits_bytes(std::size_t heap_bytes) {
  return round_up(heap_bytes / kGranule / 8, 8);
}

inline std::size_t pending_index(std::uintptr_t objects_begin, std::uintptr_t addr) {
  return (addr - objects_begin) / kGranule;
}

// Flags the object at `addr` pending. Reads the word first: most objects overwritten often are
// flagged already, and a plain load leaves the cache line shared between cores. An address outside
// the objects space flags nothing: it is no object of this heap, only a word a buggy or hostile
// client wrote where a reference goes (a root slot, a field), and its index would land outside the
// bitmap (the server dropping a dead client's roots crashed on one).
inline void set_pending_bit(const PendingBits& pb, std::uintptr_t addr) {
  if (addr - pb.objects_begin >= pb.objects_end - pb.objects_begin) return;
  const std::size_t i = pending_index(pb.objects_begin, addr);
  std::atomic<std::uint64_t>& w = pb.words[i / 64];
  const std::uint64_t bit = std::uint64_t{1} << (i % 64);
  if ((w.load(std::memory_order_relaxed) & bit) == 0) w.fetch_or(bit, std::memory_order_release);
}

inline bool pending_bit(const PendingBits& pb, std::uintptr_t addr) {
  const std::size_t i = pending_index(pb.objects_begin, addr);
  return (pb.words[i / 64].load(std::memory_order_acquire) >> (i % 64) & 1) != 0;
}

// Clears the bits of [from, to) (granule-aligned addresses). REQUIRES: nothing in the range is
// an object any thread can still reference (memory being returned to the heap), so no barrier
// sets a bit inside it meanwhile; the edge words are shared with live neighbours and are cleared
// with fetch_and.
inline void clear_pending_bits(const PendingBits& pb, std::uintptr_t from, std::uintptr_t to) {
  std::size_t i = pending_index(pb.objects_begin, from);
  const std::size_t end = pending_index(pb.objects_begin, to);
  while (i < end) {
    const std::size_t word = i / 64;
    const std::size_t lo = i % 64;
    const std::size_t hi = (end - word * 64 < 64) ? end - word * 64 : 64;  // exclusive, in this word
    if (lo == 0 && hi == 64) {
      if (pb.words[word].load(std::memory_order_relaxed) != 0) pb.words[word].store(0, std::memory_order_relaxed);
    } else {
      const std::uint64_t mask = (hi == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << hi) - 1) & ~((std::uint64_t{1} << lo) - 1);
      if ((pb.words[word].load(std::memory_order_relaxed) & mask) != 0)
        pb.words[word].fetch_and(~mask, std::memory_order_relaxed);
    }
    i = word * 64 + hi;
  }
}

// The address of the first set bit in [from, to) (granule-aligned), or 0 (the verifier).
inline std::uintptr_t find_pending_bit(const PendingBits& pb, std::uintptr_t from, std::uintptr_t to) {
  std::size_t i = pending_index(pb.objects_begin, from);
  const std::size_t end = pending_index(pb.objects_begin, to);
  while (i < end) {
    const std::size_t word = i / 64;
    std::uint64_t bits = pb.words[word].load(std::memory_order_acquire) >> (i % 64);
    if (bits != 0) {
      const std::size_t at = i + static_cast<std::size_t>(__builtin_ctzll(bits));
      return at < end ? pb.objects_begin + at * kGranule : 0;
    }
    i = (word + 1) * 64;
  }
  return 0;
}

// The pending set of segment `m` (the collector and the verifier work on a given segment).
struct Metadata;
PendingBits pending_bits_of(const Metadata* m);

}  // namespace colors::detail
