// Per-client GC root tables in the segment: every reference a client process holds through a
// handle occupies one slot of its table, so the collector finds a client's roots by scanning the
// table itself, without asking (or waiting for) the client.
//
// Invariants:
//  * A client's table is a chain of ArrayObject chunks starting at ClientSlot::roots; chunks are
//    only appended (release), never unlinked while the client is attached.
//  * Slots are filled with store_ref and emptied with store_ref(null), so dropping a root goes
//    through the same deletion barrier as any heap store.
//  * Only the owning process writes its table; the server clears it after the client died.
#pragma once
#include <atomic>
#include <cstdint>

#include "barrier.hpp"
#include "check.hpp"
#include "collector_barrier.hpp"
#include "layout.hpp"

namespace colors::detail {

// This thread's free root slots. Slots move between a thread and the process's free list in
// batches, so taking and dropping a root costs no lock. constinit and trivially destructible, so
// the inline fast paths below read it without a TLS wrapper call; the thread's exit guard
// (roots.cpp, armed by the slow paths) hands the slots back to the process.
// Invariants: every cached slot is null and belongs to this process's table of the attachment
// `gen`; a cache of an older attachment (g_roots_gen moved on at detach or fork) is dropped,
// never used.
struct RootCache {
  static constexpr std::uint32_t kCapacity = 128;
  std::uint64_t gen;
  std::uint32_t n;
  std::atomic<Word>* slots[kCapacity];
};
extern constinit thread_local RootCache t_root_cache;
extern std::atomic<std::uint64_t> g_roots_gen;
std::atomic<Word>* root_acquire_slow(Word value);
void root_release_slow(std::atomic<Word>* slot);

// Orders this thread's root store before its later loads: the re-read that validates a root
// (root_load) and the epoch read that stamps a rooted object (publish_object). Either this
// thread's full fence, or, while the segment's collector issues its barrier after every flip
// (collector_barrier.hpp), only a compiler fence: the kernel then fences every mutator thread
// between the flip and the root pass, which is the point this fence exists for. seq_cst pairs
// with the collector's flip-then-scan. Without it, a thread could stamp a new object with the
// old epoch while the root pass still reads its slot as empty (gc/README.md, found by gc/model).
inline void root_fence() {
  if (__builtin_expect(g_roots_unfenced.load(std::memory_order_relaxed), 1))
    std::atomic_signal_fence(std::memory_order_seq_cst);
  else
    std::atomic_thread_fence(std::memory_order_seq_cst);
}

// Takes a slot in this process's table holding `value`, ordered before this thread's later loads
// (root_fence); returns the slot.
inline std::atomic<Word>* root_acquire(Word value) {
  RootCache& c = t_root_cache;
  std::atomic<Word>* slot;
  if (__builtin_expect(c.n != 0 && c.gen == g_roots_gen.load(std::memory_order_acquire), 1)) {
    slot = c.slots[--c.n];
    COLORS_CHECK_INTERNAL(slot->load(std::memory_order_relaxed) == kNull, "a cached root slot is empty");
    slot->store(value, std::memory_order_relaxed);  // the slot is null: no deletion barrier needed
  } else {
    slot = root_acquire_slow(value);
  }
  root_fence();
  return slot;
}

// Whether dropping a root that holds `w` must flag it (the deletion barrier). With fenced roots,
// always. With unfenced ones, only while the collector marks and only for an object that is not
// recent in the marking cycle (gc/README.md, "Dropping a root"):
//  * a drop that read another phase, or an older epoch, came before the cut that the collector's
//    barrier makes after the flip of any cycle that would need the flag, and so did everything the
//    thread did with the object before (another root, a store into the heap), which that cycle's
//    root pass and marking then see. The root slot itself is private to its thread, so nobody
//    else can have read the object from it;
//  * a recent object is never freed by its cycle, and its pending passes ignore it anyway.
// The phase is set to marking before the flip; acquire loads keep the three reads in order.
inline bool root_release_flags(Word w) {
  if (!is_ref(w)) return false;
  if (!g_roots_unfenced.load(std::memory_order_relaxed)) return true;
  const PendingBits& pb = g_pending_bits;
  if (pb.gc_phase == nullptr) return true;
  if (pb.gc_phase->load(std::memory_order_acquire) != static_cast<std::uint8_t>(GcPhase::kMarking)) return false;
  const std::uint8_t epoch = pb.gc_epoch->load(std::memory_order_acquire);
  return header_at(static_cast<std::uintptr_t>(w))->recent.load(std::memory_order_acquire) != epoch;
}

// Empties a root slot (the deletion barrier when root_release_flags says so).
// REQUIRES: the slot is this process's and held by the caller. Only its holder writes a root slot
// while the process lives (the server clears a dead client's table), so no store can race this
// one: the barrier's flag followed by a release store keeps the barrier's invariant (the old value
// flagged before the new one is visible) without store_ref's compare-exchange. The release store
// also keeps root_release_flags's reads before it.
inline void root_clear(std::atomic<Word>* slot) {
  const Word w = slot->load(std::memory_order_relaxed);
  if (root_release_flags(w)) set_pending_bit(g_pending_bits, static_cast<std::uintptr_t>(w));
  slot->store(kNull, std::memory_order_release);
}

// Stores `value` into an empty root slot the caller holds, ordered before the caller's later loads
// (root_fence). For bindings that pool root slots themselves.
inline void root_set(std::atomic<Word>* slot, Word value) {
  slot->store(value, std::memory_order_relaxed);
  root_fence();
}

// root_clear, then the slot goes back to this thread's free slots.
inline void root_release(std::atomic<Word>* slot) {
  root_clear(slot);
  RootCache& c = t_root_cache;
  if (__builtin_expect(c.n < RootCache::kCapacity && c.gen == g_roots_gen.load(std::memory_order_acquire), 1)) {
    c.slots[c.n++] = slot;
    return;
  }
  root_release_slow(slot);
}
// Process side, at detach: forget the private free-slot list.
void roots_forget_process_state();
// In the child of a fork (single-threaded, the parent's threads may have held the lock): the same
// without taking the lock.
void roots_forget_after_fork();

// A root held by C++ code for the length of an operation: move-only, released on destruction.
// Every allocation returns one, taken before the new block is published, so that a thread
// stalled at any point between allocating an object and storing it somewhere reachable never
// loses it to a collector cycle (gc/README.md, "transient references").
//
// Invariant: the slot is released only into the attachment it was taken in (gen_). A binding may
// hold Rooteds across its language's code (a proxy's allocation runs finalizers and gc callbacks),
// which may detach and attach again at the same fixed address: the old table's slots are then the
// new heap's memory (the server freed the dead table), and releasing one would write into a live
// block, and hand that block out as a root slot. A Rooted of an older attachment forgets its slot.
class Rooted {
 public:
  Rooted() = default;
  Rooted(Word w, std::atomic<Word>* slot) : w_(w), slot_(slot), gen_(g_roots_gen.load(std::memory_order_relaxed)) {}
  Rooted(Rooted&& o) noexcept : w_(o.w_), slot_(o.slot_), gen_(o.gen_) { o.slot_ = nullptr; o.w_ = kNull; }
  Rooted& operator=(Rooted&& o) noexcept {
    if (this != &o) {
      reset();
      w_ = o.w_;
      slot_ = o.slot_;
      gen_ = o.gen_;
      o.slot_ = nullptr;
      o.w_ = kNull;
    }
    return *this;
  }
  ~Rooted() { reset(); }
  Rooted(const Rooted&) = delete;
  Rooted& operator=(const Rooted&) = delete;

  Word word() const { return w_; }
  // Whether this was taken in the current attachment. A binding that turns several Rooteds into
  // its language's objects runs that language's code in between, which may detach (and attach
  // again at the same address): a reference word of an older attachment names nothing in the
  // current heap and must not be dereferenced.
  bool current() const { return gen_ == g_roots_gen.load(std::memory_order_acquire); }
  // Hands the root slot over to the caller (e.g. to a Value), which releases it later.
  std::atomic<Word>* take() {
    std::atomic<Word>* s = slot_;
    slot_ = nullptr;
    return s;
  }
  void reset() {
    if (slot_ != nullptr && gen_ == g_roots_gen.load(std::memory_order_acquire)) root_release(slot_);
    slot_ = nullptr;
  }

 private:
  Word w_ = kNull;
  std::atomic<Word>* slot_ = nullptr;
  std::uint64_t gen_ = 0;  // g_roots_gen when the slot was taken
};

// Reads a reference from a shared slot and roots it. The slot is read again after the root is
// published; if it changed, the read is retried. So the result was in the slot at an instant when
// this process already held it as a root: no collector cycle can miss it.
Rooted root_load(const std::atomic<Word>* slot);

// Server side: drops every root of a dead client (deletion barrier on each) and unlinks its table.
void release_client_roots(Metadata* m, std::uint32_t slot);

}  // namespace colors::detail
