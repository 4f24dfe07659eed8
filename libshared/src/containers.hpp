// Builtin containers: list (growable array), set and map (open-addressing hash tables keyed by
// the language-neutral hash and equality of objects.hpp).
//
// Invariants:
//  * Atomicity: every function below runs under the container's lock word (container_lock.hpp),
//    so each is one linearizable operation across threads and processes: a reader never sees a
//    half-done change, nothing is read that was never stored, nothing is removed twice. A
//    sequence of calls is not atomic (use a monitor or a transaction). Indices are resolved
//    under the lock too (the *_signed functions take Python-style negative positions).
//  * Every index is checked against the capacity of the storage object actually loaded; probes are
//    bounded by the table's capacity, so even a corrupt size cannot make an access go out of bounds.
//  * Storage is replaced, never resized in place: a new array/table is filled, then published
//    with store_ref (the collector, which reads containers without the lock, still sees the old
//    one as valid memory).
//  * Every reference store goes through store_ref (the write barrier); the lock adds no store.
//  * Crash consistency: a process killed inside an operation leaves the lock to the next caller
//    (container_lock.hpp), which repairs what the operation left:
//      - a list's operations that move no element (append, extend, set, pop of the last, clear) store
//        in an order that leaves the list either before or after the operation: append and
//        extend write the slots past the end before the size, a pop from the end and clear lower
//        the size before they clear slots;
//      - a set or map is re-counted (size and used from its table; tombstones' values cleared):
//        each entry changes by one publishing store of its key, so the table itself is always
//        either before or after the operation;
//      - a list operation that moves several slots (insert or pop before the end, erase_if,
//        replace) is bracketed by the lock's torn bit: the next caller gets
//        OwnerDiedError once (the list may then hold one element twice or miss one, or a replacement
//        be half done, never a value nobody stored), its operation is not performed, and the list works normally afterwards.
//  * Locks never nest: nothing here calls back into user code under a lock.
#pragma once
#include <cstdint>
#include <functional>
#include <type_traits>
#include <vector>

#include "layout.hpp"
#include "list_seqlock.hpp"
#include "roots.hpp"
#include "transaction.hpp"

namespace colors::detail {

// ---- list ----
std::size_t list_size(Word list, TxAccess a = TxAccess::kRead);  // kReadForUpdate: as list_snapshot
Word list_get(Word list, std::size_t i);           // IndexError when out of range
Rooted list_load(Word list, std::size_t i);        // list_get, rooted (roots.hpp, root_load)
// list_get for a read scope (read_scope.hpp): the element word, borrowed, not rooted.
// REQUIRES: inside a read scope, outside a transaction.
Word list_load_borrowed(Word list, std::size_t i);
// Up to `max` element words from index `from` on, borrowed, every one of them in the list at one
// instant: put(i, word) for i = 0..k-1, and returns k, with the list's size at that instant in
// `size`. A few seqlock reads (list_seqlock.hpp), then the list's lock: a reader that keeps losing
// to writers waits once rather than for as long as they write. `put` may be called again from
// i = 0 after an attempt that failed: only the last k calls count.
// REQUIRES: outside a transaction. To follow a word read, a read scope (read_scope.hpp), which
// keeps what was read allocated; outside one, a word may be freed as soon as it is read, so it
// may only be compared (e.g. with the object of a proxy that holds a root). The reads themselves
// are safe anywhere: they stay inside an array that was the list's, with at least k slots, at
// one instant (list_try_storage), and what a freed and reused array gave is discarded by the
// seqlock's final check.
template <class Put>
std::size_t list_read_borrowed(Word list, std::size_t from, std::size_t max, std::size_t& size, Put&& put);
// list_read_borrowed's locked path.
std::size_t list_read_locked(Word list, std::size_t from, std::size_t max, std::size_t& size,
                             void (*put)(void*, std::size_t, Word), void* ctx);
void list_set(Word list, std::size_t i, Word v);   // IndexError when out of range
// Stores v at i and returns the element it replaced, rooted.
Rooted list_exchange(Word list, std::size_t i, Word v);
void list_append(Metadata* m, Word list, Word v);
// Appends n values in one operation.
void list_append_all(Metadata* m, Word list, const Word* v, std::size_t n);
void list_insert(Metadata* m, Word list, std::size_t i, Word v);  // IndexError unless i <= size
// Inserts n values before position i in one operation. IndexError unless i <= size.
void list_insert_all(Metadata* m, Word list, std::size_t i, const Word* v, std::size_t n);
// Removes the element at i and returns it, rooted.
Rooted list_pop(Word list, std::size_t i);
// Removes the element at i only if it still equals `expected` (language-neutral equality, objects.hpp:
// identity for shared objects, value for scalars and strings, bits for NaNs); returns whether.
bool list_erase_if(Word list, std::size_t i, Word expected);
void list_clear(Word list);
// Makes the content exactly v[0..n) if the list has not changed since list_snapshot gave
// `version`, and returns true; else changes nothing and returns false. A whole-list rewrite (sort,
// reverse, a slice assignment) computed from a snapshot then replaces exactly what it read: a
// change by another thread or process in between (an append, a transaction's rollback) is never
// overwritten. The version is the list's seqlock (list_seqlock.hpp), which every change moves on.
bool list_replace_if(Metadata* m, Word list, std::uint64_t version, const Word* v, std::size_t n);
// The elements at one instant, each rooted (non-references with no root slot). kReadForUpdate:
// the caller writes a result computed from them back (transaction.hpp, TxAccess). `version`, when
// given, receives the list's version at that instant, for list_replace_if.
std::vector<Rooted> list_snapshot(Word list, TxAccess a = TxAccess::kRead, std::uint64_t* version = nullptr);

// Python-style positions: i < 0 means size + i, resolved under the lock.
Rooted list_load_signed(Word list, std::int64_t i);
void list_set_signed(Word list, std::int64_t i, Word v);
Rooted list_pop_signed(Word list, std::int64_t i);
// list.insert: the position is clamped to [0, size] (after adding size to a negative one).
void list_insert_clamped(Metadata* m, Word list, std::int64_t i, Word v);

// ---- set and map ----
std::size_t hash_size(Word h);
bool hash_contains(Word h, Word key);
bool map_get(Word map, Word key, Word* value);
bool map_load(Word map, Word key, Rooted* value);  // map_get, rooted
// Inserts or replaces. Returns true when the key was new; else, if `old` != nullptr, the value
// it replaced, rooted.
bool map_put(Metadata* m, Word map, Word key, Word value, Rooted* old = nullptr);
// Inserts only if the key is absent (returns true); else returns false with the value it has,
// rooted, in *existing.
bool map_put_if_absent(Metadata* m, Word map, Word key, Word value, Rooted* existing);
bool set_add(Metadata* m, Word set, Word key);
// Removes the key; returns whether it was there (and its value for maps, rooted, if `value` !=
// nullptr).
bool hash_remove(Word h, Word key, Rooted* value = nullptr);
// Removes every key of keys[0..n) that is there, in one operation (a set's intersection or
// difference update: other threads and processes see the set before or after, never between);
// returns how many were removed.
std::size_t hash_remove_all(Word h, const Word* keys, std::size_t n);
// Removes some entry and returns it (key as users see it, and value), rooted; false when empty.
bool hash_pop_any(Word h, Rooted* key, Rooted* value);
void hash_clear(Word h);
// Visits the live entries of one instant as rooted (key, value) pairs (taken under the lock, then
// visited without it: `f` may use the container). kReadForUpdate: as list_snapshot.
void hash_for_each_rooted(Word h, const std::function<void(Rooted key, Rooted value)>& f,
                          TxAccess a = TxAccess::kRead);

template <class Put>
std::size_t list_read_borrowed(Word list, std::size_t from, std::size_t max, std::size_t& size, Put&& put) {
  const auto* l = reinterpret_cast<const ListObject*>(list);
  for (int attempt = 0; attempt < 4; ++attempt) {
    std::uint64_t v;
    ListStorage s;
    if (!list_try_storage(l, v, s)) continue;
    const std::size_t k = from >= s.n ? 0 : (max < s.n - from ? max : s.n - from);
    if (__builtin_expect(g_list_read_pause != nullptr, 0)) g_list_read_pause();
    for (std::size_t i = 0; i < k; ++i) put(i, s.array->slots[from + i].load(std::memory_order_acquire));
    if (list_still_unchanged(l, v)) {
      size = s.n;
      return k;
    }
  }
  using P = std::remove_reference_t<Put>;
  return list_read_locked(list, from, max, size, [](void* c, std::size_t i, Word w) { (*static_cast<P*>(c))(i, w); }, &put);
}

}  // namespace colors::detail
