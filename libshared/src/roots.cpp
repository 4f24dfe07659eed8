#include "roots.hpp"

#include <mutex>
#include <new>
#include <vector>

#include "barrier.hpp"
#include "heap.hpp"
#include "objects.hpp"
#include "segment.hpp"
#include "session.hpp"

namespace colors::detail {

namespace {
// Slot 0 of every chunk links to the next chunk, so the chain is itself ordinary heap data that
// the collector traces from ClientSlot::roots.
constexpr std::size_t kChunkSlots = 1024;

std::mutex g_mu;
// Never destroyed, as client.cpp's segment: threads may drop roots while the process exits.
std::vector<std::atomic<Word>*>& g_free = *new std::vector<std::atomic<Word>*>();  // GUARDED_BY(g_mu)

constexpr std::uint32_t kBatch = 32;  // slots moved between a thread and g_free at once

// Hands this thread's cached slots back to the process at thread exit. Armed (constructed) by the
// slow paths, which every thread takes before its first cached slot.
struct RootCacheExitGuard {
  bool armed = false;
  ~RootCacheExitGuard() {
    RootCache& c = t_root_cache;
    if (c.n == 0 || c.gen != g_roots_gen.load(std::memory_order_acquire)) return;
    std::lock_guard<std::mutex> g(g_mu);
    g_free.insert(g_free.end(), c.slots, c.slots + c.n);
    c.n = 0;
  }
};
thread_local RootCacheExitGuard t_root_exit_guard;

// The calling thread's cache, emptied if it belongs to an older attachment.
RootCache& current_cache() {
  RootCache& c = t_root_cache;
  std::uint64_t gen = g_roots_gen.load(std::memory_order_acquire);
  if (c.gen != gen) {
    c.n = 0;
    c.gen = gen;
  }
  t_root_exit_guard.armed = true;
  return c;
}

ArrayObject* chunk(Word w) { return reinterpret_cast<ArrayObject*>(w); }


std::size_t chunk_bytes() { return round_up(sizeof(ArrayObject) + kChunkSlots * sizeof(Word), kGranule); }

// Links the reserved block `h` as a new chunk of this process's table and gives its slots to g_free.
// The chunk is linked into the client's chain before it is published: from then on the collector
// reaches it through ClientSlot::roots (a reserved block it finds through a root is flagged and
// revisited once published, gc/README.md). Until then nothing refers to it, as to any object being
// initialised, and the sweep leaves reserved blocks alone.
// REQUIRES: g_mu held; `h` reserved by this thread (reserve_block) for chunk_bytes().
void link_chunk(BlockHeader* h) {
  Metadata* m = current_meta();
  ClientSlot& cs = m->clients[current_client_slot()];
  auto* a = reinterpret_cast<ArrayObject*>(h);
  a->head.cls.store(m->builtin[static_cast<int>(TypeKind::kRootChunk)], std::memory_order_relaxed);
  a->capacity = kChunkSlots;
  init_ref(&a->slots[0], cs.roots.load(std::memory_order_acquire));
  Word w = reinterpret_cast<Word>(h);
  store_ref(&cs.roots, w);
  publish_object(m, h, chunk_bytes());
  for (std::size_t i = kChunkSlots - 1; i >= 1; --i) g_free.push_back(&a->slots[i]);
}

// Gives an empty thread cache up to kBatch free slots, adding a chunk when the process has none.
// The chunk's block is reserved with g_mu NOT held: a reservation may run collector cycles and the
// heap-pressure hook (heap.hpp), and every other thread of the process that needs a root would
// wait on g_mu meanwhile. Two threads may both add a chunk; the extra slots simply stay in g_free.
void refill(RootCache& c) {
  for (;;) {
    {
      std::lock_guard<std::mutex> g(g_mu);
      while (c.n < kBatch && !g_free.empty()) {
        c.slots[c.n++] = g_free.back();
        g_free.pop_back();
      }
      if (c.n != 0) return;
    }
    BlockHeader* h = reserve_block(current_meta(), current_client_id(), chunk_bytes());
    std::lock_guard<std::mutex> g(g_mu);
    link_chunk(h);
  }
}
}  // namespace

constinit thread_local RootCache t_root_cache{};
std::atomic<std::uint64_t> g_roots_gen{1};

std::atomic<Word>* root_acquire_slow(Word value) {
  RootCache& c = current_cache();
  if (c.n == 0) refill(c);
  std::atomic<Word>* slot = c.slots[--c.n];
  COLORS_CHECK_INTERNAL(slot->load(std::memory_order_relaxed) == kNull, "a free root slot is empty");
  slot->store(value, std::memory_order_relaxed);  // the caller's root_fence orders it (roots.hpp)
  return slot;
}

// The slot is already null (root_release); the cache is stale or full.
void root_release_slow(std::atomic<Word>* slot) {
  RootCache& c = current_cache();
  if (c.n == RootCache::kCapacity) {
    std::lock_guard<std::mutex> g(g_mu);
    g_free.insert(g_free.end(), c.slots + c.n - kBatch, c.slots + c.n);
    c.n -= kBatch;
  }
  c.slots[c.n++] = slot;
}

Rooted root_load(const std::atomic<Word>* slot) {
  for (;;) {
    Word w = slot->load(std::memory_order_acquire);
    if (!is_ref(w)) return Rooted(w, nullptr);
    std::atomic<Word>* r = root_acquire(w);  // root_fence: the root is published before the re-read
    if (slot->load(std::memory_order_acquire) == w) return Rooted(w, r);
    root_release(r);
  }
}

void roots_forget_after_fork() {
  new (&g_mu) std::mutex();
  g_free.clear();
  g_roots_gen.fetch_add(1, std::memory_order_acq_rel);
}

void roots_forget_process_state() {
  std::lock_guard<std::mutex> g(g_mu);
  g_free.clear();
  g_roots_gen.fetch_add(1, std::memory_order_acq_rel);  // every thread's cache is now stale
}

void release_client_roots(Metadata* m, std::uint32_t slot) {
  ClientSlot& cs = m->clients[slot];
  for (Word c = cs.roots.load(std::memory_order_acquire); c != kNull; c = chunk(c)->slots[0].load(std::memory_order_acquire)) {
    for (std::size_t i = 1; i < chunk(c)->capacity; ++i) store_ref(&chunk(c)->slots[i], kNull);
  }
  store_ref(&cs.roots, kNull);
}

}  // namespace colors::detail
