// Read scopes: while a thread is inside one, the references it reads through the view types
// (colors::ObjectView, ListView, ValueView) are borrowed: used without a GC root, valid until the
// thread leaves its outermost scope. Instead of rooting each reference, the thread announces the
// scope once, and a collector cycle that could free what the scope read waits for the scope to
// end before it sweeps (gc/README.md, "Read scopes": the protocol and why it is enough).
//
// Invariants:
//  * A thread's scope word is one slot of its process's root table (taken at its first scope,
//    given back at thread exit). It holds a small integer: odd while the thread is inside a scope,
//    even outside, a new value at every entry and exit, so the collector can tell that a scope it
//    saw has ended even when the thread has entered another one since.
//  * Only the owning thread writes the word while the process lives: entry with a relaxed store
//    followed by root_fence (the collector's membarrier is the other half, as for roots), exit
//    with a release store after every read of the scope. The server nulls it with the rest of a
//    dead client's table.
//  * A reference the scope holds (borrowed, or allocated in the scope without a root) is flagged
//    while the collector marks, with root_release_flags's rule (roots.hpp), wherever it goes
//    that the collector may not look at again: a root (promote_borrowed), a heap slot
//    (store_scope_reference), a new object's fields (new_user_object_scoped, after publishing),
//    a new list's elements and array (new_list_scoped, after publishing each), a new set's or
//    map's keys, values and table (new_hash_scoped, the same way).
//    The flag's phase read comes after that store.
//  * A thread inside a scope never waits for a collector cycle (request_gc_and_wait refuses, an
//    allocation on a full heap or over its client's limit throws) and never starts a transaction
//    (tx_begin refuses): the cycle would wait for the scope.
#pragma once
#include <atomic>
#include <cstdint>
#include <vector>

#include "barrier.hpp"
#include "layout.hpp"
#include "pending_bits.hpp"
#include "roots.hpp"
#include "word.hpp"

namespace colors::detail {

// Levels 1..base of the nesting belong to an attachment that ended (entered before a detach, or
// the parent's, in a fork child): they protect nothing and only unwind. Levels base+1..depth are
// scopes of the attachment `gen` names, announced by `slot`. base <= depth; base is 0 but after a
// scope outlived its attachment.
struct ReadScopeState {
  std::uint64_t gen;              // the attachment `slot` belongs to (g_roots_gen)
  std::atomic<Word>* slot;        // the scope word, or nullptr before the thread's first scope
  std::uint64_t seq;              // the scope word's last value: odd inside a scope
  std::uint32_t depth;            // nesting depth; the word changes only at level base + 1
  std::uint32_t base;             // levels of an ended attachment, below the live ones
};
extern constinit thread_local ReadScopeState t_read_scope;

inline Word read_scope_word(std::uint64_t seq) {
  return make_small(static_cast<std::int64_t>(seq & ((std::uint64_t{1} << 58) - 1)));
}
inline bool is_active_scope_word(Word w) { return is_small_int(w) && (small_value(w) & 1) != 0; }

// Takes the thread's scope word (first scope, or first since an attach). NotAttachedError when
// no heap is mapped.
void read_scope_first_entry();

// REQUIRES: not inside a transaction (the caller checks: colors::ReadScope throws).
inline void read_scope_enter() {
  ReadScopeState& s = t_read_scope;
  if (s.depth > s.base) {
    if (__builtin_expect(s.gen == g_roots_gen.load(std::memory_order_acquire), 1)) {
      ++s.depth;  // nested in a live scope
      return;
    }
    // Every open level outlived its attachment: this one is the first of the current one.
    s.base = s.depth;
  }
  if (__builtin_expect(s.slot == nullptr || s.gen != g_roots_gen.load(std::memory_order_acquire), 0))
    read_scope_first_entry();
  s.seq += 1;  // odd: inside
  s.slot->store(read_scope_word(s.seq), std::memory_order_relaxed);
  // The word is published before the scope's first read (the same Dekker pair as a root's store
  // and its re-read: either the collector's scan after its membarrier sees the word, or every
  // read of the scope comes after the epoch flip).
  root_fence();
  s.depth += 1;
}

// REQUIRES: inside a scope.
inline void read_scope_exit() {
  ReadScopeState& s = t_read_scope;
  s.depth -= 1;
  if (s.depth > s.base) return;  // an inner level
  if (s.depth < s.base) {        // a level of an ended attachment: nothing to announce
    s.base = s.depth;
    return;
  }
  s.seq += 1;  // even: outside
  // A detach (or a fork, in the child) since the entry: the table the word lived in is released
  // (the server emptied it) or the parent's; never write it.
  if (__builtin_expect(s.gen != g_roots_gen.load(std::memory_order_acquire), 0)) return;
  // Release: every read of the scope happens before a collector that sees this value sweeps.
  s.slot->store(read_scope_word(s.seq), std::memory_order_release);
}

// A scope entered before a detach (or, in a fork child, the parent's) protects nothing of the
// attachment now current: it no longer counts, so the thread may collect, allocate rooted objects
// and begin transactions again (its exit only unwinds the depth). A scope entered inside it after
// the attach is a scope of the current attachment, with a word of its own.
inline bool in_read_scope() {
  const ReadScopeState& s = t_read_scope;
  return s.depth > s.base && s.gen == g_roots_gen.load(std::memory_order_acquire);
}

// A root for the borrowed reference `w` (read inside the current scope): root_acquire, then the
// deletion barrier's flag while the collector marks (root_release_flags), read after the root's
// store. So either the collector's root pass sees the root (the phase read came before the flip,
// the root store before the membarrier's cut), or the object is flagged and the pending passes,
// which run after the collector has waited for this scope, mark it; a recent object needs neither.
Rooted promote_borrowed(Word w);

// The flag every reference a scope holds gets when it goes somewhere the collector may not look
// again (a root, a heap slot, a new object that may be recent): promote_borrowed's, after the store.
// REQUIRES: called after the store (or the publication) that this flag covers.
inline void flag_scope_reference(Word w) {
  if (root_release_flags(w)) set_pending_bit(g_pending_bits, static_cast<std::uintptr_t>(w));
}
// flag_scope_reference of every reference among `values` (n words, each after the store or
// publication its flag covers). The phase is read once for all of them: when that read, made after
// every one of those stores, finds no marking under unfenced roots, root_release_flags would
// answer false for each, so none is flagged; otherwise each reference takes the per-word rule.
inline bool scope_flags_may_be_needed() {
  const PendingBits& pb = g_pending_bits;
  return !(g_roots_unfenced.load(std::memory_order_relaxed) && pb.gc_phase != nullptr &&
           pb.gc_phase->load(std::memory_order_acquire) != static_cast<std::uint8_t>(GcPhase::kMarking));
}
template <class Init>
inline void flag_scope_references(const Init* values, std::size_t n) {
  if (!scope_flags_may_be_needed()) return;
  for (std::size_t i = 0; i < n; ++i) flag_scope_reference(values[i].value);
}
// The same for n words (a new list's elements, after the publication of the array holding them).
inline void flag_scope_words(const Word* words, std::size_t n) {
  if (!scope_flags_may_be_needed()) return;
  for (std::size_t i = 0; i < n; ++i) flag_scope_reference(words[i]);
}
// Stores the scope-held (or rooted) `w` into the heap slot `slot` of a published object: the write
// barrier, then flag_scope_reference. REQUIRES: inside a read scope, outside a transaction.
inline void store_scope_reference(std::atomic<Word>* slot, Word w) {
  store_ref(slot, w);
  flag_scope_reference(w);
}

// ---- the collector's side ----

// A scope the collector saw active: it waits until `slot` holds another value.
struct ActiveReadScope {
  const std::atomic<Word>* slot;
  Word seen;
  std::uint32_t client;  // index in Metadata::clients, for diagnostics
};

// Every scope word of every attached client that is inside a scope now.
// REQUIRES: called after the cycle's epoch flip and its membarrier (gc/collector.cpp).
std::vector<ActiveReadScope> active_read_scopes(const Metadata* m);

}  // namespace colors::detail
