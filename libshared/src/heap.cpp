#include "heap.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "check.hpp"
#include "colors/errors.hpp"
#include "futex.hpp"
#include "pending_bits.hpp"
#include "read_scope.hpp"
#include "segment.hpp"
#include "session.hpp"

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

std::string out_of_memory_message(Metadata* m, std::size_t bytes) {
  HeapUsage u = heap_usage(m);
  return "shared heap exhausted: needed " + std::to_string(bytes) + " bytes, " + std::to_string(u.free_bytes) +
         " bytes free in " + std::to_string(u.free_chunks) + " chunks (largest " + std::to_string(u.largest_free) +
         "); drop references you no longer need or restart colors-server with a larger --heap-size";
}

// The per-client limit (heap.hpp, "Per-client limit"). Charges `want` new bytes to this thread's
// client; over the limit, first a collector cycle measures again what the client holds, then
// OutOfMemoryError names the largest holders. Runs on the slow path only (a refill or a medium or
// large object), so the fast path pays nothing.
std::string client_limit_message(Metadata* m, std::uint32_t slot, std::uint64_t held, std::uint64_t limit) {
  struct Holder {
    std::uint64_t bytes;
    std::uint32_t id;
    std::int32_t pid;
  };
  std::vector<Holder> holders;
  for (ClientSlot& s : m->clients) {
    if (s.state.load(std::memory_order_acquire) != static_cast<std::uint32_t>(ClientState::kActive)) continue;
    holders.push_back({s.live_bytes.load(std::memory_order_acquire) + s.allocated_since.load(std::memory_order_relaxed),
                       s.client_id.load(std::memory_order_relaxed), s.pid.load(std::memory_order_relaxed)});
  }
  std::sort(holders.begin(), holders.end(), [](const Holder& a, const Holder& b) { return a.bytes > b.bytes; });
  std::string msg = "client " + std::to_string(m->clients[slot].client_id.load(std::memory_order_relaxed)) + " (pid " +
                    std::to_string(m->clients[slot].pid.load(std::memory_order_relaxed)) + ") would hold " +
                    std::to_string(held) + " bytes of live objects it allocated, over the per-client limit of " +
                    std::to_string(limit) + " bytes (colors-server --client-live-limit); largest holders:";
  for (std::size_t i = 0; i < holders.size() && i < 3; ++i)
    msg += (i ? ", " : " ") + std::string("client ") + std::to_string(holders[i].id) + " (pid " +
           std::to_string(holders[i].pid) + ") " + std::to_string(holders[i].bytes) + " bytes";
  return msg + "; drop references this client no longer needs, or ask the operator to raise the limit";
}

void charge_client(Metadata* m, std::uint64_t want) {
  const std::uint64_t limit = m->client_live_limit.load(std::memory_order_relaxed);
  const std::uint32_t slot = current_client_slot();
  if (limit == 0 || current_client_id() == 0 || slot >= kMaxClients) return;
  ClientSlot& s = m->clients[slot];
  auto held = [&s] {
    return s.live_bytes.load(std::memory_order_acquire) + s.allocated_since.load(std::memory_order_relaxed);
  };
  if (held() + want > limit) {
    // Inside a read scope the recount's cycle would wait for this thread (read_scope.hpp): the
    // limit is reported as a full heap is there (carve_or_collect), so that a scoped copy takes its
    // rooted path, which may wait.
    if (in_read_scope())
      throw OutOfMemoryError(client_limit_message(m, slot, held() + want, limit) +
                             " (this thread is inside a read scope, which the cycle that would count again waits "
                             "for: leave the scope and retry)");
    // What it allocated may be garbage by now: a cycle counts again (and resets allocated_since).
    request_gc_and_wait(m, std::int64_t{10'000'000'000});
    if (held() + want > limit) throw OutOfMemoryError(client_limit_message(m, slot, held() + want, limit));
  }
  s.allocated_since.fetch_add(want, std::memory_order_relaxed);
}

// Placement (heap.hpp, "Placement"): the chunk a request is carved from, and from which end.
// A large object takes the highest-addressed chunk that fits; a TLAB or a medium object the
// lowest-addressed one. Returns {0, ...} when no chunk fits. REQUIRES: heap_lock held.
struct Placement {
  std::uintptr_t chunk;
  bool tail;  // carve from the chunk's tail (else its front)
};
Placement choose_chunk(Metadata* m, std::size_t bytes, Request kind) {
  const bool highest = kind == Request::kLarge;
  std::uintptr_t best = 0;
  for (std::uint64_t p = m->freelist_head.load(std::memory_order_acquire); p != 0;
       p = free_next(p)->load(std::memory_order_acquire)) {
    COLORS_CHECK(p >= m->objects_begin && p < m->objects_end && p % kGranule == 0, "a freelist link points into the objects space");
    std::uint64_t w = header_at(p)->load();
    if (BlockHeader::kind_of(w) != BlockKind::kFree) continue;  // only after a holder died; repaired
    if (BlockHeader::size_of(w) < bytes) continue;
    if (best == 0 || (highest ? p > best : p < best)) best = p;
  }
  return {best, kind != Request::kTlab};
}

// Initialises the header fields of a block carved for `owner` that its word does not carry.
void init_carved(BlockHeader* h, std::uint32_t owner) {
  h->marked.store(0, std::memory_order_relaxed);
  h->recent.store(0, std::memory_order_relaxed);
  h->owner.store(owner, std::memory_order_relaxed);
}

// Carves `bytes` from the chunk at `p` as a kTlab block owned by `owner` (a new TLAB, or an object
// until it is published), from its tail or its front. Returns the block's address.
// REQUIRES: heap_lock held, p a listed kFree chunk of at least `bytes`.
std::uintptr_t carve_from(Metadata* m, std::uintptr_t p, std::size_t bytes, std::uint32_t owner, bool tail) {
  BlockHeader* h = header_at(p);
  const std::uint64_t w = h->load();
  const std::size_t size = BlockHeader::size_of(w);
  COLORS_CHECK(BlockHeader::kind_of(w) == BlockKind::kFree && size >= bytes && size <= m->objects_end - p,
               "a chunk chosen from the freelist is free, inside the space and large enough");
  const std::size_t rest = size - bytes;
  // The chunk's links live in its first payload words, which a carved header may overwrite: read
  // them first. Structure first, counters last (a holder killed in between leaves counters that
  // the next holder recomputes, see HeapLockGuard).
  const std::uint64_t next = free_next(p)->load(std::memory_order_relaxed);
  const std::uint64_t prev = free_prev(p)->load(std::memory_order_relaxed);
  m->allocated_bytes_total.fetch_add(bytes, std::memory_order_relaxed);
  if (rest == 0) {
    init_carved(h, owner);
    h->publish(bytes, BlockKind::kTlab);  // the chunk stops being kFree before it leaves the list
    freelist_unlink_links(m, next, prev);
    m->free_chunks.fetch_sub(1, std::memory_order_relaxed);
    m->free_bytes.fetch_sub(size, std::memory_order_relaxed);
    return p;
  }
  if (tail) {
    // Tail: the new block's header first, then the chunk shrinks in place (one release store).
    std::uintptr_t block = p + rest;
    BlockHeader* nb = header_at(block);
    init_carved(nb, owner);
    nb->word.store(BlockHeader::pack(bytes, BlockKind::kTlab), std::memory_order_relaxed);
    if (rest >= kTlabSize) {
      h->publish(rest, BlockKind::kFree);  // stays listed
      m->free_bytes.fetch_sub(bytes, std::memory_order_relaxed);
    } else {
      h->publish(rest, BlockKind::kFiller);  // too small to stay on the freelist
      freelist_unlink_links(m, next, prev);
      m->free_chunks.fetch_sub(1, std::memory_order_relaxed);
      m->free_bytes.fetch_sub(size, std::memory_order_relaxed);
    }
    return block;
  }
  // Front: the rest's header (and, when it stays free, its links: the chunk's) is written inside
  // the chunk, unseen by walkers; the front turning kTlab (release) makes the rest a block; then
  // the rest takes the chunk's place in the list. A holder killed between the last two leaves a
  // kFree block off the list, which the walk of repair_freelist finds.
  std::uintptr_t r = p + bytes;
  BlockHeader* rh = header_at(r);
  const bool keep = rest >= kTlabSize;
  if (keep) {
    free_next(r)->store(next, std::memory_order_relaxed);
    free_prev(r)->store(prev, std::memory_order_relaxed);
  }
  init_carved(rh, 0);
  rh->word.store(BlockHeader::pack(rest, keep ? BlockKind::kFree : BlockKind::kFiller), std::memory_order_relaxed);
  init_carved(h, owner);
  h->publish(bytes, BlockKind::kTlab);
  if (keep) {
    if (prev == 0) m->freelist_head.store(r, std::memory_order_release);
    else free_next(prev)->store(r, std::memory_order_release);
    if (next != 0) free_prev(next)->store(r, std::memory_order_relaxed);
    m->free_bytes.fetch_sub(bytes, std::memory_order_relaxed);
  } else {
    freelist_unlink_links(m, next, prev);
    m->free_chunks.fetch_sub(1, std::memory_order_relaxed);
    m->free_bytes.fetch_sub(size, std::memory_order_relaxed);
  }
  return p;
}

// Carves `bytes` as a kTlab block owned by `owner`, placed by its kind (heap.hpp, "Placement").
// Returns its address or 0.
std::uintptr_t carve(Metadata* m, std::size_t bytes, std::uint32_t owner, Request kind) {
  HeapLockGuard g(m);
  COLORS_CHECK_EXPENSIVE(freelist_sound(m), "the freelist is a chain of free chunks in the space, linked both ways");
  Placement c = choose_chunk(m, bytes, kind);
  return c.chunk == 0 ? 0 : carve_from(m, c.chunk, bytes, owner, c.tail);
}

std::atomic<HeapPressureHook> g_pressure_hook{nullptr};
// True while this thread runs the hook: an allocation made by the hook itself does not call it again.
constinit thread_local bool t_in_pressure_hook = false;

struct PressureHookScope {
  PressureHookScope() { t_in_pressure_hook = true; }
  ~PressureHookScope() { t_in_pressure_hook = false; }
  PressureHookScope(const PressureHookScope&) = delete;
  PressureHookScope& operator=(const PressureHookScope&) = delete;
};

// Whether an active client other than this process runs a heap-pressure watcher. This process's
// own relief is its hook's, run on the allocating thread just before the wait; its watcher would
// only repeat it, and may need what the allocating thread holds (Python's needs the GIL), so
// waiting for it would only time out.
bool pressure_watched(const Metadata* m) {
  const std::uint32_t self = current_client_id() != 0 ? current_client_slot() : kMaxClients;  // the server: none
  for (std::uint32_t i = 0; i < std::size(m->clients); ++i) {
    const ClientSlot& s = m->clients[i];
    if (i != self && s.state.load(std::memory_order_acquire) == static_cast<std::uint32_t>(ClientState::kActive) &&
        s.pressure_watchers.load(std::memory_order_acquire) != 0)
      return true;
  }
  return false;
}

// Waits (at most kReliefWaitNs) until heap_relief_seq moves past `seen`: some watcher released
// what its process held. Its process's GC takes tens to hundreds of milliseconds, which the
// cycles alone would not wait for on a small heap. Interruptible like the cycle waits.
void await_relief(Metadata* m, std::uint32_t seen) {
  constexpr std::int64_t kReliefWaitNs = 2'000'000'000;
  const std::int64_t deadline = monotonic_ns() + kReliefWaitNs;
  for (;;) {
    if (m->heap_relief_seq.load(std::memory_order_seq_cst) != seen) return;
    const std::int64_t left = deadline - monotonic_ns();
    if (left <= 0) return;
    futex_wait(&m->heap_relief_seq, seen, std::min<std::int64_t>(left, kInterruptSliceNs));
    check_wait_interrupts(m);
  }
}

// Carves, asking the collector for up to two cycles when the heap is full; if that does not make
// room, signals heap pressure to every process and calls this process's heap-pressure hook once
// (bindings drop roots their language no longer needs, heap.hpp), then asks for three more cycles:
// a dropped root's object is freed by the second cycle after the drop (the deletion barrier flags
// it pending for the first, gc/README.md), and another process's watcher needs a moment to drop
// its roots.
// Invariants: carve() holds heap_lock only inside itself, so neither the hook nor the waits run
// under it; the relief (signal and hook) runs at most once per call, only after a cycle finished
// (a collector runs); the hook is not called from inside itself.
std::uintptr_t carve_or_collect(Metadata* m, std::size_t bytes, std::uint32_t owner, Request kind, std::size_t want) {
  bool relieved = false;
  for (int cycles = 0;;) {
    if (std::uintptr_t p = carve(m, bytes, owner, kind)) return p;
    if (cycles == 2) {
      if (relieved) break;
      relieved = true;
      const std::uint32_t relief = m->heap_relief_seq.load(std::memory_order_seq_cst);
      signal_heap_pressure(m);
      HeapPressureHook hook = g_pressure_hook.load(std::memory_order_acquire);
      if (hook != nullptr && !t_in_pressure_hook) {
        PressureHookScope scope;
        hook();
      }
      if (pressure_watched(m)) await_relief(m, relief);
      cycles = -1;
    }
    // Inside a read scope a cycle would wait for this thread (read_scope.hpp): say so instead.
    if (in_read_scope())
      throw OutOfMemoryError("the heap has no room for " + std::to_string(want) +
                             " bytes without a collector cycle, and this thread is inside a read scope, which such a cycle "
                             "waits for: leave the scope and retry");
    if (!request_gc_and_wait(m, 10'000'000'000LL)) break;
    ++cycles;
  }
  throw OutOfMemoryError(out_of_memory_message(m, want));
}

}  // namespace

void set_heap_pressure_hook(HeapPressureHook hook) { g_pressure_hook.store(hook, std::memory_order_release); }

void register_pressure_watcher(Metadata* m) {
  m->clients[current_client_slot()].pressure_watchers.fetch_add(1, std::memory_order_seq_cst);
}

void note_heap_relief(Metadata* m) {
  m->heap_relief_seq.fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(&m->heap_relief_seq);
}

void signal_heap_pressure(Metadata* m) {
  m->heap_pressure_seq.fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(&m->heap_pressure_seq);
}

std::uint32_t await_heap_pressure(Metadata* m, std::uint32_t seen, std::int64_t timeout_ns, bool (*stop)()) {
  constexpr std::int64_t kStopCheckNs = 50'000'000;
  const std::int64_t deadline = monotonic_ns() + timeout_ns;
  for (;;) {
    // A bump between this load and futex_wait makes the wait return at once (the kernel compares).
    const std::uint32_t cur = m->heap_pressure_seq.load(std::memory_order_seq_cst);
    if (cur != seen || (stop != nullptr && stop())) return cur;
    const std::int64_t left = deadline - monotonic_ns();
    if (left <= 0) return cur;
    futex_wait(&m->heap_pressure_seq, seen, std::min(left, kStopCheckNs));
  }
}

HeapPressureHook heap_pressure_hook() { return g_pressure_hook.load(std::memory_order_acquire); }

TlabExitGuard::~TlabExitGuard() {
  if (armed) retire_thread_tlab();
}

void freelist_push(Metadata* m, std::uintptr_t p, std::size_t size) {
  BlockHeader* h = header_at(p);
  std::uint64_t head = m->freelist_head.load(std::memory_order_relaxed);
  free_next(p)->store(head, std::memory_order_relaxed);
  free_prev(p)->store(0, std::memory_order_relaxed);
  if (head != 0) free_prev(head)->store(p, std::memory_order_relaxed);
  m->freelist_head.store(p, std::memory_order_release);
  // Linked first, kFree last: a block that says kFree is always on the list.
  h->publish(size, BlockKind::kFree);
  m->free_bytes.fetch_add(size, std::memory_order_relaxed);
  m->free_chunks.fetch_add(1, std::memory_order_relaxed);
}

void freelist_unlink_links(Metadata* m, std::uint64_t next, std::uint64_t prev) {
  if (prev == 0) m->freelist_head.store(next, std::memory_order_release);
  else free_next(prev)->store(next, std::memory_order_release);
  if (next != 0) free_prev(next)->store(prev, std::memory_order_relaxed);
}

void freelist_unlink(Metadata* m, std::uintptr_t p) {
  std::size_t size = BlockHeader::size_of(header_at(p)->load());
  freelist_unlink_links(m, free_next(p)->load(std::memory_order_relaxed), free_prev(p)->load(std::memory_order_relaxed));
  m->free_bytes.fetch_sub(size, std::memory_order_relaxed);
  m->free_chunks.fetch_sub(1, std::memory_order_relaxed);
}

void repair_freelist(Metadata* m) {
  // The list is rebuilt from a walk of the heap: every kFree block, in address order, with its
  // counters. Whatever order of single stores the dead holder was in, each one left the heap
  // parsable with kFree only on genuinely free blocks (heap.hpp), so the walk finds exactly the
  // free chunks, including one it had not linked yet; a block it had taken but not published is
  // kTlab and carries its client id, so the server reclaims it with the client's TLABs. Walkers
  // that rewrite blocks (the sweep, dead-client reclamation) do so only under heap_lock, which
  // the caller holds.
  std::uint64_t prev = 0, bytes = 0, chunks = 0;
  std::atomic<std::uint64_t>* link = &m->freelist_head;
  std::uintptr_t p = m->objects_begin;
  while (p < m->objects_end) {
    std::uint64_t w = header_at(p)->load();
    std::size_t size = BlockHeader::size_of(w);
    if (size == 0 || size > m->objects_end - p) break;  // corrupt; the verifier reports it
    if (BlockHeader::kind_of(w) == BlockKind::kFree) {
      free_prev(p)->store(prev, std::memory_order_relaxed);
      link->store(p, std::memory_order_release);
      link = free_next(p);
      prev = p;
      bytes += size;
      ++chunks;
    }
    p += size;
  }
  link->store(0, std::memory_order_release);
  m->free_bytes.store(bytes, std::memory_order_relaxed);
  m->free_chunks.store(chunks, std::memory_order_relaxed);
}

// No cycle: at most one chunk per kTlabSize of space.
bool freelist_sound(Metadata* m) {
  const std::uint64_t max_chunks = (m->objects_end - m->objects_begin) / kTlabSize + 1;
  std::uint64_t prev = 0, n = 0;
  for (std::uint64_t p = m->freelist_head.load(std::memory_order_acquire); p != 0;
       p = free_next(p)->load(std::memory_order_acquire)) {
    if (p < m->objects_begin || p >= m->objects_end || p % kGranule != 0 || ++n > max_chunks) return false;
    const std::uint64_t w = header_at(p)->load();
    if (BlockHeader::kind_of(w) != BlockKind::kFree || BlockHeader::size_of(w) < kTlabSize) return false;
    if (free_prev(p)->load(std::memory_order_relaxed) != prev) return false;
    prev = p;
  }
  return true;
}

HeapLockGuard::HeapLockGuard(Metadata* m) : m_(m) {
  if (m_->heap_lock.lock()) repair_freelist(m_);  // the previous holder died mid-operation
}
HeapLockGuard::~HeapLockGuard() { m_->heap_lock.unlock(); }

bool request_gc_and_wait(Metadata* m, std::int64_t timeout_ns) {
  // The cycle would wait for this thread's scope to end (read_scope.hpp): refuse, never hang.
  if (in_read_scope())
    throw InvalidArgumentError("cannot wait for a collector cycle inside a read scope (the cycle waits for the scope to end): "
                               "leave the ReadScope first (an allocation that found the heap full also lands here)");
  if (m->gc_running.load(std::memory_order_acquire) == 0) {
    // A server stopped with --keep-heap stopped its collector: wait for its successor (which
    // starts its collector before it takes clients back), or fail after the attach timeout.
    check_server(m);
    if (m->gc_running.load(std::memory_order_acquire) == 0) return false;  // nobody would answer
  }
  // A cycle that starts after this point sees everything dropped before it.
  std::uint32_t target = m->gc_started_seq.load(std::memory_order_acquire) + 1;
  m->gc_request_seq.fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(&m->gc_request_seq);
  std::int64_t deadline = timeout_ns < 0 ? -1 : monotonic_ns() + timeout_ns;
  m->gc_waiters.fetch_add(1, std::memory_order_seq_cst);
  bool ok = true;
  for (;;) {
    std::uint32_t done = m->gc_done_seq.load(std::memory_order_seq_cst);
    if (static_cast<std::int32_t>(done - target) >= 0) break;
    check_wait_interrupts(m);
    std::int64_t slice = kInterruptSliceNs;
    if (deadline >= 0) {
      std::int64_t left = deadline - monotonic_ns();
      if (left <= 0) {
        ok = false;
        break;
      }
      slice = std::min(slice, left);
    }
    futex_wait(&m->gc_done_seq, done, slice);
  }
  m->gc_waiters.fetch_sub(1, std::memory_order_seq_cst);
  return ok;
}

void init_objects_space(Metadata* m) {
  m->gc_epoch.store(1, std::memory_order_relaxed);
  std::uintptr_t p = m->objects_begin;
  while (p < m->objects_end) {
    std::size_t size = std::min<std::size_t>(m->objects_end - p, kMaxBlock);
    if (size >= kTlabSize) {
      freelist_push(m, p, size);
    } else {
      header_at(p)->publish(size, BlockKind::kFiller);
    }
    p += size;
  }
}

BlockHeader* reserve_block_slow(Metadata* m, std::uint32_t client_id, std::size_t bytes) {
  // No server needed: a refill carves from the freelist in the segment, which a successor
  // adopts with the heap. Only a full heap waits for the collector (carve_or_collect), and that
  // wait reattaches to a successor or gives up (check_wait_interrupts).
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
    charge_client(m, bytes);
    std::uintptr_t p =
        carve_or_collect(m, bytes, client_id, bytes >= kLargeObjectBytes ? Request::kLarge : Request::kMedium, bytes);
    BlockHeader* h = header_at(p);
    std::memset(h->payload(), 0, bytes - sizeof(BlockHeader));
    return h;
  }
  // Retire the current TLAB (its rest becomes filler) and take a fresh one.
  if (t.cur != 0) header_at(t.cur)->publish(t.end - t.cur, BlockKind::kFiller);
  t.cur = t.end = 0;
  charge_client(m, kTlabSize);
  std::uintptr_t p = carve_or_collect(m, kTlabSize, client_id, Request::kTlab, bytes);
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
      HeapLockGuard g(m);
      // A block the dead client had reserved may be flagged (its root was dropped above).
      clear_pending_bits(pending_bits_of(m), p, p + size);
      if (size >= kTlabSize) {
        freelist_push(m, p, size);
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
  HeapLockGuard g(m);
  for (std::uint64_t p = m->freelist_head.load(std::memory_order_acquire); p != 0;
       p = free_next(p)->load(std::memory_order_relaxed)) {
    std::size_t size = BlockHeader::size_of(header_at(p)->load());
    u.free_bytes += size;
    u.free_chunks += 1;
    if (size > u.largest_free) u.largest_free = size;
  }
  return u;
}

}  // namespace colors::detail
