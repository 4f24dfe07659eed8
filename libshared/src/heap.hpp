// Allocation in the objects space: per-thread TLABs for small objects, and freelist chunks
// placed by the kind of request for new TLABs, medium and large objects.
//
// Placement. Objects never move, so where a block is carved decides how fragmented the heap can
// get. Small objects (TLABs) fill the space from its low end upward, large objects
// (kLargeObjectBytes and more) from its high end downward, both address-ordered first fit:
//  * a TLAB takes the lowest-addressed chunk that fits, carved from its front;
//  * a large object takes the highest-addressed chunk that fits, carved from its tail;
//  * a medium object (too large for a TLAB, below kLargeObjectBytes) takes the lowest-addressed
//    chunk that fits, carved from its tail: a hole among small objects holds it there, and in the
//    free space between the two ends it goes next to the large objects, not among small ones.
// So long-lived small objects pack at the low end and never pepper the space large objects leave
// behind, the free space gathers between the two ends, and a freed large object coalesces with
// its free neighbours (across the sweep's partitions too, gc/sweeper.hpp) into a chunk that holds
// a large object again. Finding a chunk walks the freelist (chunks of 32 KiB and more), once per
// TLAB or medium/large object.
//
// Invariants (besides parsability, see block.hpp):
//  * A walkable block whose header says kFree is genuinely free, and has size >= kTlabSize; it is
//    on the freelist except while a holder of heap_lock is between the two stores that move a
//    chunk's place in the list to its rest (front carving). The list is changed only under
//    Metadata::heap_lock (HeapLockGuard). Pushing links a block before its header turns kFree;
//    taking a chunk off makes its header something else before unlinking it; counters are
//    updated last. So a holder killed mid-operation (a client, kill -9) leaves list entries that
//    are no longer kFree, a kFree block not yet listed, and stale counters; the next holder
//    rebuilds the list and counters from a walk of the heap (repair_freelist) when the robust
//    lock reports the death.
//  * Free chunks are split from their tail (the new block's header is written inside the chunk
//    first, then the chunk's size shrinks with one release store, and the chunk stays where it is
//    in the list) or from their front (the rest's header and links are written inside the chunk
//    first, then the front turns kTlab with one release store, then the rest takes the chunk's
//    place in the list).
//  * The rest of a thread's TLAB is always one block of kind kTlab whose `owner` is the thread's
//    client id. Allocating from it writes the header of the shrunk rest first, then turns the front
//    into the object. So a dead client's TLABs are exactly the kTlab blocks carrying its id.
//  * Objects are born `recent` (see gc/README.md) and zero-filled; the payload is initialised
//    before the header turns kObject (release). A reserved, unpublished block is never of a kind
//    the sweeper frees: inside a TLAB it is covered by the kTlab rest block, and a block carved
//    from a chunk is a kTlab block owned by the client until it is published.
//  * When no space is left, the allocator asks the collector for a cycle and retries before it
//    raises OutOfMemoryError; after two such cycles it signals heap pressure to every process
//    (signal_heap_pressure), calls its own heap-pressure hook once (if set) and asks for three
//    more (see set_heap_pressure_hook).
#pragma once
#include <cstddef>
#include <cstdint>

#include "layout.hpp"

namespace colors::detail {

void init_objects_space(Metadata* m);

// Objects of this size and more are large (see "Placement" above).
inline constexpr std::size_t kLargeObjectBytes = std::size_t{1} << 20;
// What a block is carved for, which decides where it is placed.
enum class Request { kTlab, kMedium, kLarge };

// The calling thread's TLAB cursor: `cur` is the kTlab block holding the unallocated rest, which
// ends at `end`; `epoch` ties it to one attachment of this process (a stale epoch means "none").
// Trivially destructible and constinit so that the fast path reads it without a TLS wrapper call.
struct TlabCursor {
  std::uintptr_t cur;
  std::uintptr_t end;
  std::uint64_t epoch;
};
extern constinit thread_local TlabCursor t_tlab_cursor;
extern std::atomic<std::uint64_t> g_tlab_epoch;

BlockHeader* reserve_block_slow(Metadata* m, std::uint32_t client_id, std::size_t bytes);

// Reserves a block of `bytes` (multiple of kGranule, >= 32) for a new object for the calling
// thread of client `client_id`: payload zero-filled, header not yet published. Throws
// OutOfMemoryError when no space is left. `kZeroed` false: the payload may hold old bytes (the
// caller writes every word of it before publishing; the slow path zero-fills anyway).
template <bool kZeroed = true>
inline BlockHeader* reserve_block(Metadata* m, std::uint32_t client_id, std::size_t bytes) {
  TlabCursor& t = t_tlab_cursor;
  // Fast path: the object fits and leaves a non-empty rest (exact fits take the slow path).
  if (__builtin_expect(t.epoch == g_tlab_epoch.load(std::memory_order_relaxed) && t.end - t.cur > bytes, 1)) {
    std::uintptr_t obj = t.cur;
    // The rest becomes the TLAB block before the front turns into the object (parsability).
    BlockHeader* rest = header_at(obj + bytes);
    rest->marked.store(0, std::memory_order_relaxed);
    rest->recent.store(0, std::memory_order_relaxed);
    rest->owner.store(client_id, std::memory_order_relaxed);
    rest->word.store(BlockHeader::pack(t.end - obj - bytes, BlockKind::kTlab), std::memory_order_release);
    t.cur = obj + bytes;
    BlockHeader* h = header_at(obj);
    if constexpr (kZeroed) {
      auto* p = reinterpret_cast<std::uint64_t*>(h->payload());
      for (std::size_t i = 0, n = (bytes - sizeof(BlockHeader)) / 8; i < n; ++i) p[i] = 0;
    }
    return h;
  }
  return reserve_block_slow(m, client_id, bytes);
}

// Publishes a reserved block as an object, born recent (recent = the current GC epoch).
// `marked` is left as it is: reserve zeroed it, and the collector may have marked the block
// since, through the root that protects it while it is being initialised.
inline void publish_object(Metadata* m, BlockHeader* h, std::size_t bytes) {
  // Ordered after the store of the block's root by root_fence (roots.hpp): either the root pass
  // sees the root, or this load sees the flip.
  h->recent.store(m->gc_epoch.load(std::memory_order_seq_cst), std::memory_order_relaxed);
  h->publish(bytes, BlockKind::kObject);
}

// Holds heap_lock; repairs the freelist when the previous holder died holding it.
class HeapLockGuard {
 public:
  explicit HeapLockGuard(Metadata* m);
  ~HeapLockGuard();
  HeapLockGuard(const HeapLockGuard&) = delete;
  HeapLockGuard& operator=(const HeapLockGuard&) = delete;

 private:
  Metadata* m_;
};

// ---- freelist primitives. REQUIRES: heap_lock held. ----
void freelist_push(Metadata* m, std::uintptr_t p, std::size_t size);
// Unlinks a listed block and subtracts its current size from the counters.
void freelist_unlink(Metadata* m, std::uintptr_t p);
// Unlinks the listed block whose links were `next` and `prev`; the caller fixes the counters.
void freelist_unlink_links(Metadata* m, std::uint64_t next, std::uint64_t prev);
// Rebuilds the list and its counters from a walk of the heap: every kFree block, in address order.
void repair_freelist(Metadata* m);
// Whether the freelist's structure is sound (the level-3 check of every carve, check.hpp): links
// inside the objects space, listed chunks kFree and at least kTlabSize, back links naming each
// predecessor, no cycle. REQUIRES: heap_lock held.
bool freelist_sound(Metadata* m);
inline std::atomic<std::uint64_t>* free_next(std::uintptr_t p) {
  return reinterpret_cast<std::atomic<std::uint64_t>*>(header_at(p)->payload());
}
inline std::atomic<std::uint64_t>* free_prev(std::uintptr_t p) {
  return reinterpret_cast<std::atomic<std::uint64_t>*>(header_at(p)->payload() + 8);
}

// Asks the collector for a cycle and waits until one that started after the request finished
// (or timeout_ns passes; -1: no limit). Returns false on timeout. Used by collect() and by the
// allocator before it gives up with OutOfMemoryError.
bool request_gc_and_wait(Metadata* m, std::int64_t timeout_ns);

// Per-client limit (Metadata::client_live_limit, set by colors-server --client-live-limit; 0: none).
// What a client holds is measured by what it allocated: every object's header keeps the id of the
// client that allocated it (`owner`), each sweep sums the surviving bytes per client id into its
// slot's `live_bytes` and zeroes `allocated_since`, and every refill or medium/large allocation
// adds its bytes to `allocated_since` (heap.cpp, charge_client). When live_bytes + allocated_since
// would pass the limit, the allocating thread asks for one cycle (what it allocated may be garbage
// by now) and then throws OutOfMemoryError naming the three largest holders; inside a read scope,
// which that cycle would wait for, it throws at once (a scoped copy then takes its rooted path,
// which may wait). Bounds:
//  * An object is charged to the client that allocated it, whoever keeps it alive afterwards (an
//    object handed to another client through a repository still counts for its allocator); the
//    objects of a client that is gone count for nobody, so a reused slot starts at 0.
//  * The figure is as of the last sweep plus what was charged since: allocations made during a
//    sweep after it passed them may be missed once (one cycle's allocation at most).
//  * TLAB refills are charged whole (32 KiB), so the limit has TLAB granularity.

// ---- heap pressure ----
// A process-wide hook that lets a binding's own garbage collector drop its dead references to
// shared objects (the JNI library: System.gc() and the release of the roots of dead proxies) when
// the heap is still full after the collector's cycles. carve_or_collect calls it at most once per
// failing allocation, on the allocating thread, after two cycles did not make room and before its
// last two cycle requests and retries; never when the allocation succeeds at once or after a cycle,
// and never when no collector runs (nothing would reclaim what the hook releases). Not re-entered
// on a thread (an allocation inside the hook does not call it again).
//
// What the caller holds: no lock of the allocator (heap_lock is released before the call), but the
// allocating thread may hold other libshared locks: roots.cpp's process mutex (a new root-table
// chunk is allocated under it, and every root_acquire/root_release may need it), classes_lock
// (add_field allocates storage under it; other processes wait for it meanwhile), rpc's client and
// schema mutexes, and any shared monitor of its caller.
// REQUIRES of the hook: it takes none of these locks and waits for no thread that may (so it must
// not release roots through root_release or Value's destructor: it empties root slots itself and
// keeps them), it waits only for a bounded time (well below a second or two: other threads and
// processes may wait for the locks its thread holds), it throws nothing, and it does nothing on
// threads that are not its language's (any thread of the process may allocate).
using HeapPressureHook = void (*)() noexcept;
// Installs the hook (nullptr: none, the default). Process-wide; the last call wins.
void set_heap_pressure_hook(HeapPressureHook hook);
HeapPressureHook heap_pressure_hook();

// Heap pressure across processes. A process whose language frees proxies lazily (the JVM: a
// proxy's root goes when its GC finds the proxy dead) can pin garbage that another process needs
// room for, and that process's own hook cannot help (measured: a Java client dropping 1024-node
// replies of a Python server pinned the whole 1 GiB heap before its JVM collected once, and the
// Python server failed with OutOfMemoryError). So an allocation that two cycles could not satisfy
// also bumps Metadata::heap_pressure_seq and wakes its waiters before it runs its own hook and
// asks for three more cycles (enough for a watcher's System.gc() and for its dropped roots' objects
// to be freed, by the second cycle after the drop). A binding whose proxies need it runs a
// watcher thread in await_heap_pressure that drops what its language no longer needs when woken.
void signal_heap_pressure(Metadata* m);
// A watcher of this client (process) counts in the client's slot from now on (until the slot is
// released: detach or death). An allocation that signalled pressure waits (up to 2 s) for some
// watcher's relief only while another active client has one: other processes' GCs take longer
// than the few milliseconds a cycle of a small heap takes. Its own process's watcher is not waited
// for: the hook did that process's relief on the allocating thread just before.
void register_pressure_watcher(Metadata* m);
// A watcher has done what it could after a signal: wakes allocations waiting for relief.
void note_heap_relief(Metadata* m);
// Blocks until heap_pressure_seq differs from `seen`, `timeout_ns` passed or stop() returns true
// (checked every 50 ms and after every wake-up); returns the current value. stop may be null.
std::uint32_t await_heap_pressure(Metadata* m, std::uint32_t seen, std::int64_t timeout_ns, bool (*stop)());

// Turns the calling thread's TLAB rest into filler (e.g. before detach or thread exit).
void retire_thread_tlab();
// Forgets every thread's TLAB of this process without touching the segment (after detach).
void forget_all_tlabs();

// Server side, after a client died: turns every kTlab block owned by `client_id` back into free
// space. Returns the number of bytes reclaimed.
std::size_t reclaim_client_tlabs(Metadata* m, std::uint32_t client_id);

struct HeapUsage {
  std::size_t capacity = 0;    // bytes in the objects space
  std::size_t free_bytes = 0;  // bytes on the freelist
  std::size_t free_chunks = 0;
  std::size_t largest_free = 0;
};
HeapUsage heap_usage(Metadata* m);

}  // namespace colors::detail
