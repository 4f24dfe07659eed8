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

#include "layout.hpp"

namespace colors::detail {

// Takes a slot in this process's table holding `value`; returns the slot.
std::atomic<Word>* root_acquire(Word value);
// Empties the slot (deletion barrier) and returns it to this process's free slots.
void root_release(std::atomic<Word>* slot);
// Process side, at detach: forget the private free-slot list.
void roots_forget_process_state();
// In the child of a fork (single-threaded, the parent's threads may have held the lock): the same
// without taking the lock.
void roots_forget_after_fork();

// A root held by C++ code for the length of an operation: move-only, released on destruction.
// Every allocation returns one, taken before the new block is published, so that a thread
// stalled at any point between allocating an object and storing it somewhere reachable never
// loses it to a collector cycle (gc/README.md, "transient references").
class Rooted {
 public:
  Rooted() = default;
  Rooted(Word w, std::atomic<Word>* slot) : w_(w), slot_(slot) {}
  Rooted(Rooted&& o) noexcept : w_(o.w_), slot_(o.slot_) { o.slot_ = nullptr; o.w_ = kNull; }
  Rooted& operator=(Rooted&& o) noexcept {
    if (this != &o) {
      reset();
      w_ = o.w_;
      slot_ = o.slot_;
      o.slot_ = nullptr;
      o.w_ = kNull;
    }
    return *this;
  }
  ~Rooted() { reset(); }
  Rooted(const Rooted&) = delete;
  Rooted& operator=(const Rooted&) = delete;

  Word word() const { return w_; }
  // Hands the root slot over to the caller (e.g. to a Value), which releases it later.
  std::atomic<Word>* take() {
    std::atomic<Word>* s = slot_;
    slot_ = nullptr;
    return s;
  }
  void reset() {
    if (slot_ != nullptr) root_release(slot_);
    slot_ = nullptr;
  }

 private:
  Word w_ = kNull;
  std::atomic<Word>* slot_ = nullptr;
};

// Reads a reference from a shared slot and roots it. The slot is read again after the root is
// published; if it changed, the read is retried. So the result was in the slot at an instant when
// this process already held it as a root: no collector cycle can miss it.
Rooted root_load(const std::atomic<Word>* slot);

// Server side: drops every root of a dead client (deletion barrier on each) and unlinks its table.
void release_client_roots(Metadata* m, std::uint32_t slot);

}  // namespace colors::detail
