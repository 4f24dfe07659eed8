#include "heap.hpp"

#include <cstring>
#include <mutex>
#include <string>
#include <unordered_set>

#include "colors/errors.hpp"
#include "segment.hpp"

namespace colors::detail {

constinit thread_local TlabCursor t_tlab_cursor{0, 0, 0};
std::atomic<std::uint64_t> g_tlab_epoch{1};

namespace {

constexpr std::size_t kMaxBlock = std::size_t{1} << 40;  // keeps sizes far below the 56-bit field

// Retires the thread's TLAB when the thread exits. Armed on the slow path only, so that the fast
// path never touches a thread_local with a destructor.
struct TlabExitGuard {
  bool armed = false;
  ~TlabExitGuard();
};
thread_local TlabExitGuard t_exit_guard;

void free_chunk_push(Metadata* m, std::uintptr_t p, std::size_t size) {
  // REQUIRES: heap_lock held; [p, p+size) is a block nobody else uses.
  BlockHeader* h = header_at(p);
  reinterpret_cast<std::atomic<std::uint64_t>*>(h->payload())->store(m->freelist_head.load(std::memory_order_relaxed),
                                                                      std::memory_order_relaxed);
  h->publish(size, BlockKind::kFree);
  m->freelist_head.store(p, std::memory_order_release);
  m->free_bytes.fetch_add(size, std::memory_order_relaxed);
  m->free_chunks.fetch_add(1, std::memory_order_relaxed);
}

std::atomic<std::uint64_t>* next_of(std::uintptr_t p) {
  return reinterpret_cast<std::atomic<std::uint64_t>*>(header_at(p)->payload());
}

std::string out_of_memory_message(Metadata* m, std::size_t bytes) {
  HeapUsage u = heap_usage(m);
  return "shared heap exhausted: needed " + std::to_string(bytes) + " bytes, " + std::to_string(u.free_bytes) +
         " bytes free in " + std::to_string(u.free_chunks) + " chunks (largest " + std::to_string(u.largest_free) +
         "); drop references you no longer need or restart colors-server with a larger --heap-size";
}

// Carves `bytes` from the tail of a first-fit freelist chunk. The carved block gets header
// `kind`/`owner` (kFiller until the caller publishes it, or kTlab). Returns its address or 0.
std::uintptr_t carve(Metadata* m, std::size_t bytes, BlockKind kind, std::uint32_t owner) {
  RobustLockGuard g(m->heap_lock);
  std::atomic<std::uint64_t>* link = &m->freelist_head;
  for (std::uint64_t p = link->load(std::memory_order_acquire); p != 0; p = link->load(std::memory_order_acquire)) {
    BlockHeader* h = header_at(p);
    std::size_t size = BlockHeader::size_of(h->load());
    if (size >= bytes) {
      std::size_t rest = size - bytes;
      std::uintptr_t block = p + rest;
      BlockHeader* nb = header_at(block);
      nb->pending.store(0, std::memory_order_relaxed);
      nb->marked.store(0, std::memory_order_relaxed);
      nb->recent.store(0, std::memory_order_relaxed);
      nb->owner.store(owner, std::memory_order_relaxed);
      nb->word.store(BlockHeader::pack(bytes, kind), std::memory_order_relaxed);
      if (rest >= kTlabSize) {
        h->publish(rest, BlockKind::kFree);  // chunk shrinks; stays linked
      } else {
        // Too small to stay on the freelist: unlink, then (if anything is left) make it filler.
        link->store(next_of(p)->load(std::memory_order_relaxed), std::memory_order_release);
        m->free_chunks.fetch_sub(1, std::memory_order_relaxed);
        if (rest == 0) {
          // The carved header *is* the chunk's header: publish the carved kind with release.
          nb->publish(bytes, kind);
        } else {
          h->publish(rest, BlockKind::kFiller);
        }
      }
      m->free_bytes.fetch_sub(size - (rest >= kTlabSize ? rest : 0), std::memory_order_relaxed);
      m->allocated_bytes_total.fetch_add(bytes, std::memory_order_relaxed);
      return block;
    }
    link = next_of(p);
  }
  return 0;
}

}  // namespace

TlabExitGuard::~TlabExitGuard() {
  if (armed) retire_thread_tlab();
}

void init_objects_space(Metadata* m) {
  std::uintptr_t p = m->objects_begin;
  while (p < m->objects_end) {
    std::size_t size = std::min<std::size_t>(m->objects_end - p, kMaxBlock);
    if (size >= kTlabSize) {
      free_chunk_push(m, p, size);
    } else {
      header_at(p)->publish(size, BlockKind::kFiller);
    }
    p += size;
  }
}

BlockHeader* reserve_block_slow(Metadata* m, std::uint32_t client_id, std::size_t bytes) {
  TlabCursor& t = t_tlab_cursor;
  const std::uint64_t epoch = g_tlab_epoch.load(std::memory_order_relaxed);
  if (t.epoch != epoch) t = TlabCursor{0, 0, epoch};
  t_exit_guard.armed = true;
  if (t.cur != 0 && t.end - t.cur == bytes) {
    // Exact fit: the object takes the whole rest of the TLAB.
    BlockHeader* h = header_at(t.cur);
    t.cur = t.end = 0;
    std::memset(h->payload(), 0, bytes - sizeof(BlockHeader));
    return h;
  }
  if (bytes > kTlabSize / 4) {
    std::uintptr_t p = carve(m, bytes, BlockKind::kFiller, 0);
    if (p == 0) throw OutOfMemoryError(out_of_memory_message(m, bytes));
    BlockHeader* h = header_at(p);
    std::memset(h->payload(), 0, bytes - sizeof(BlockHeader));
    return h;
  }
  // Retire the current TLAB (its rest becomes filler) and take a fresh one.
  if (t.cur != 0) header_at(t.cur)->publish(t.end - t.cur, BlockKind::kFiller);
  t.cur = t.end = 0;
  std::uintptr_t p = carve(m, kTlabSize, BlockKind::kTlab, client_id);
  if (p == 0) throw OutOfMemoryError(out_of_memory_message(m, bytes));
  header_at(p)->publish(kTlabSize, BlockKind::kTlab);
  t.cur = p;
  t.end = p + kTlabSize;
  return reserve_block(m, client_id, bytes);  // fits: bytes <= kTlabSize / 4
}

void retire_thread_tlab() {
  TlabCursor& t = t_tlab_cursor;
  if (t.cur != 0 && t.epoch == g_tlab_epoch.load(std::memory_order_acquire) && current_meta_or_null() != nullptr) {
    header_at(t.cur)->publish(t.end - t.cur, BlockKind::kFiller);
  }
  t.cur = t.end = 0;
}

void forget_all_tlabs() { g_tlab_epoch.fetch_add(1, std::memory_order_acq_rel); }

std::size_t reclaim_client_tlabs(Metadata* m, std::uint32_t client_id) {
  std::size_t reclaimed = 0;
  std::uintptr_t p = m->objects_begin;
  while (p < m->objects_end) {
    BlockHeader* h = header_at(p);
    std::uint64_t w = h->load();
    std::size_t size = BlockHeader::size_of(w);
    if (size == 0) break;  // corrupt; the verifier reports it
    if (BlockHeader::kind_of(w) == BlockKind::kTlab && h->owner.load(std::memory_order_relaxed) == client_id) {
      RobustLockGuard g(m->heap_lock);
      if (size >= kTlabSize) {
        free_chunk_push(m, p, size);
      } else {
        h->publish(size, BlockKind::kFiller);
      }
      reclaimed += size;
    }
    p += size;
  }
  return reclaimed;
}

HeapUsage heap_usage(Metadata* m) {
  HeapUsage u;
  u.capacity = m->objects_end - m->objects_begin;
  RobustLockGuard g(m->heap_lock);
  for (std::uint64_t p = m->freelist_head.load(std::memory_order_acquire); p != 0;
       p = next_of(p)->load(std::memory_order_relaxed)) {
    std::size_t size = BlockHeader::size_of(header_at(p)->load());
    u.free_bytes += size;
    u.free_chunks += 1;
    if (size > u.largest_free) u.largest_free = size;
  }
  return u;
}

}  // namespace colors::detail
