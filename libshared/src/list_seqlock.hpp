// A list's seqlock (ListObject::version): lets list_size and list_load outside a transaction read
// a list without taking its lock word, which costs two serialising instructions per operation and
// makes readers of one list contend on one cache line.
//
// Invariants:
//  * Every change of a list's size, array or slots happens between ListWrite's begin and end,
//    under the list's lock word: ListLock for writes (containers.cpp) and the rollback of a
//    transaction (transaction.cpp's undo). A list nobody else can reach yet (being built) needs
//    neither.
//  * version is even while no change is under way. begin makes it odd (a writer that died inside
//    a change leaves it odd: begin keeps it odd), end makes it the next even value, with a
//    release store, after every store of the change.
//  * Only a holder of the lock word writes version, so its plain load-then-store never races
//    another write.
//  * A reader that sees the same even version before and after its reads (acquire load, the reads,
//    an acquire fence, a second load) read the list between two changes: its values were in the
//    list at one instant. On any other outcome it takes the lock instead (list_load_locked), which
//    also repairs a list whose writer died (ContainerGuard).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "layout.hpp"

namespace colors::detail {

// Brackets one change of a list. REQUIRES: the list's lock word is held by this thread for the
// whole life of the object.
class ListWrite {
 public:
  explicit ListWrite(ListObject* l) { begin(l); }
  ListWrite() = default;  // begins later, or never
  // Makes the version odd. REQUIRES: not begun yet; the list's lock word held.
  void begin(ListObject* l) {
    l_ = l;
    const std::uint64_t v = l_->version.load(std::memory_order_relaxed);
    if ((v & 1) == 0) l_->version.store(v + 1, std::memory_order_relaxed);
    // The odd value is visible before any store of the change (Boehm's seqlock writer).
    std::atomic_thread_fence(std::memory_order_release);
  }
  ~ListWrite() {
    if (l_ == nullptr) return;
    const std::uint64_t v = l_->version.load(std::memory_order_relaxed);
    l_->version.store(v + 1, std::memory_order_release);  // v is odd: the next even value
  }
  ListWrite(const ListWrite&) = delete;
  ListWrite& operator=(const ListWrite&) = delete;

 private:
  ListObject* l_ = nullptr;
};

// Under the lock word, after taking it over from a dead owner: a writer that died inside a change
// left version odd, which sends every lock-free reader to the locked path until the next write.
// The taker-over repairs what the change left (ContainerGuard's callers), so the list is readable
// again. REQUIRES: the list's lock word held by this thread.
inline void list_version_repair(ListObject* l) {
  const std::uint64_t v = l->version.load(std::memory_order_relaxed);
  if ((v & 1) != 0) l->version.store(v + 1, std::memory_order_release);
}

// Fault injection (tests/unit/test_list_seqlock.cpp): when set, a lock-free reader calls it between
// reading the list's state and reading the element, widening the window in which a change can
// come between the two. Null outside that test.
extern void (*g_list_read_pause)();

// The reader's side: a snapshot begins with begin_read (false: a change is under way) and is
// valid if still_unchanged holds after the reads.
inline bool list_begin_read(const ListObject* l, std::uint64_t& v) {
  v = l->version.load(std::memory_order_acquire);
  return (v & 1) == 0;
}
inline bool list_still_unchanged(const ListObject* l, std::uint64_t v) {
  std::atomic_thread_fence(std::memory_order_acquire);
  return l->version.load(std::memory_order_relaxed) == v;
}

// A list's size, clamped to its array's capacity, and its array, as a lock-free reader sees them.
struct ListStorage {
  std::size_t n;
  const ArrayObject* array;  // null when n == 0 and the list never had one
  std::size_t capacity;      // the array's (0 without one)
};

// Begins a snapshot (list_begin_read) and reads the list's storage: false when a change was under
// way. Valid, as everything read from `s.array` after it, if list_still_unchanged(l, v) holds after
// the reads. The array's capacity is read with an atomic builtin because the array may be one that
// a change replaced, and that a later cycle freed and reused: the read is then a race the final
// check discards.
inline bool list_try_storage(const ListObject* l, std::uint64_t& v, ListStorage& s) {
  if (!list_begin_read(l, v)) return false;
  const Word a = l->array.load(std::memory_order_acquire);
  const std::size_t n = l->size.load(std::memory_order_acquire);
  const auto* arr = reinterpret_cast<const ArrayObject*>(a);
  const std::size_t cap = a == kNull ? 0 : __atomic_load_n(&arr->capacity, __ATOMIC_RELAXED);
  if (!list_still_unchanged(l, v)) return false;
  s = {n > cap ? cap : n, arr, cap};
  return true;
}

}  // namespace colors::detail
