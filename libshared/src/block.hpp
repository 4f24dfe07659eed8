// Block headers of the objects space.
//
// Invariants (the whole design hangs on the first one):
//  * Parsability: at every instant, any thread may walk the objects space from its first byte to
//    its last, block by block, reading only `BlockHeader::word`, without taking any lock. Every
//    block's size is a non-zero multiple of kGranule and the last block ends exactly at the end of
//    the space.
//  * A header is published (its `word` stored with release order) only after everything a walker
//    may read behind it is valid: for a split, the header of the new tail block is written before
//    the head block's size shrinks; for a new object, its payload is initialised before its kind
//    becomes kObject.
//  * `word` is changed only by single aligned 8-byte atomic stores, so a walker sees either the old
//    or the new (size, kind), never a mix.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace colors::detail {

inline constexpr std::size_t kGranule = 16;

enum class BlockKind : std::uint8_t {
  kInvalid = 0,  // never stored: a zero word means corruption
  kFree = 1,     // on the freelist (size >= kTlabSize); next-pointer at payload offset 0
  kFiller = 2,   // unusable gap (retired TLAB tail, small remainder); the sweeper coalesces it
  kTlab = 3,     // unallocated rest of a thread's TLAB; `owner` names the client using it
  kObject = 4,   // an object; class pointer at payload offset 0
};

struct BlockHeader {
  // size in bytes << 8 | kind. Single-store publication point of the block.
  std::atomic<std::uint64_t> word;
  // GC flags, one byte each so that mutators and collector threads never race on a shared word.
  std::uint8_t unused;                // free for a future flag (the pending set is pending_bits.hpp)
  std::atomic<std::uint8_t> marked;   // has been marked in this cycle
  std::atomic<std::uint8_t> recent;   // allocated since the cycle's flag clearing
  std::uint8_t reserved;
  // Client id of the TLAB's user (kTlab only). Left untouched when the front of a TLAB becomes an
  // object, so that a walker that read the old kTlab word still reads the right owner.
  std::atomic<std::uint32_t> owner;

  static constexpr std::uint64_t pack(std::size_t size, BlockKind kind) {
    return (static_cast<std::uint64_t>(size) << 8) | static_cast<std::uint8_t>(kind);
  }
  static constexpr std::size_t size_of(std::uint64_t w) { return static_cast<std::size_t>(w >> 8); }
  static constexpr BlockKind kind_of(std::uint64_t w) { return static_cast<BlockKind>(w & 0xff); }

  std::uint64_t load(std::memory_order mo = std::memory_order_acquire) const { return word.load(mo); }
  void publish(std::size_t size, BlockKind kind) { word.store(pack(size, kind), std::memory_order_release); }
  char* payload() { return reinterpret_cast<char*>(this) + sizeof(BlockHeader); }
};
static_assert(sizeof(BlockHeader) == kGranule);

inline constexpr std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

inline BlockHeader* header_at(std::uintptr_t addr) { return reinterpret_cast<BlockHeader*>(addr); }

}  // namespace colors::detail
