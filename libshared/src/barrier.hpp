// The write barrier: the one function through which every reference store into a shared location
// goes (object fields, container slots, repository roots, channel slots, root tables).
//
// Snapshot-at-the-beginning: before a reference is overwritten, the object it pointed to is
// flagged pending (its bit in the pending set, pending_bits.hpp), so the collector marks
// everything that was reachable when its cycle began even if mutators unlink it meanwhile
// (gc/README.md has the argument).
//
// Invariant: the overwritten value is flagged before the new value becomes visible, and the store
// that replaces it is a compare-exchange against exactly the value that was flagged; a racing
// store therefore never replaces a value that was not flagged.
#pragma once
#include <atomic>

#include "block.hpp"
#include "pending_bits.hpp"
#include "word.hpp"

namespace colors::detail {

// REQUIRES: attached (a reference word exists only in an attached segment).
inline void mark_pending(Word w) {
  if (is_ref(w)) set_pending_bit(g_pending_bits, w);
}

inline void store_ref(std::atomic<Word>* slot, Word value) {
  Word old = slot->load(std::memory_order_acquire);
  for (;;) {
    mark_pending(old);
    if (slot->compare_exchange_weak(old, value, std::memory_order_acq_rel, std::memory_order_acquire)) return;
  }
}

// Initialising store into a slot that was null and unreachable until now (freshly allocated).
inline void init_ref(std::atomic<Word>* slot, Word value) { slot->store(value, std::memory_order_relaxed); }

}  // namespace colors::detail
