// The builtin ordered map: a B+tree in the objects space, keyed by integers and floats (compared
// numerically, as Python does: 1 == 1.0 < 1.5 < 2), strings (by code point, i.e. UTF-8 byte order)
// or binaries (by bytes). One map holds keys of one category; a key of another category, a NaN,
// null, a boolean or a container raises TypeMismatchError and changes nothing.
//
// Format. The header is a SortedMapObject (layout.hpp: size, root, lock). Every node is a kArray
// object (so the collector traces it as any slot array) sized exactly to its content:
//   slot 0        small integer: the node's level (0 = leaf, k = k levels above the leaves)
//   leaf          slots 1+2i, 2+2i: key i, value i           (capacity 1 + 2n, 1 <= n <= kLeafMax)
//   internal      slot 1+2i: child i; slot 2+2i: separator i (capacity 2n, 2 <= n <= kFanMax)
// Separator i lies between children i and i+1: every key of child i is < separator i <= every key
// of child i+1. Every leaf is at level 0 and every child of a level-k node at level k-1. Non-root
// leaves hold at least kLeafMin entries and non-root internal nodes at least kFanMin children.
//
// Invariants:
//  * Atomicity: every function runs under the map's lock word (container_lock.hpp), so each is one
//    linearizable operation across threads and processes. Range reads return at most `limit`
//    entries of one instant; iterators (client.cpp, the bindings) continue after the last key
//    they saw, so they see each key once, in order, and see changes made meanwhile past that key.
//  * Published nodes are immutable except for the value slots of leaves (a put that replaces a
//    value stores it in place) and the child slots of internal nodes (an operation publishes its
//    new subtree there). Every other change builds fresh nodes, filled with initialising stores
//    (init_ref: unreachable, null slots), and publishes them with ONE barriered store (store_ref)
//    into a child slot or the header's root; the nodes it replaces are unlinked by that store.
//  * Crash consistency: hence a process killed at any point of an operation leaves the tree
//    exactly before or after it (fresh nodes it had not yet published are garbage). The size is
//    stored after the publishing store; the next holder of a lock taken over from a dead owner
//    re-counts it from the tree. No torn tree is ever read and no OwnerDiedError is needed.
//  * SATB (gc/README.md): a reference moved into a fresh node still sits in the node being
//    replaced until the publishing store_ref unlinks that node, which flags it pending, so the
//    collector traces the old node and marks everything it held; fresh nodes are recent or rooted
//    (Rooted) until they are published.
//  * Lock-free readers: Java's SharedSortedMap.get/containsKey and iterator batches
//    (org.colors.SortedReads) read the tree without the lock, under the collector's seqlock, and
//    C++'s SortedMapView (sorted_get_unlocked, sorted_read_unlocked) inside a read scope, relying
//    on the two invariants above plus:
//    writers reach nodes only from the header's root (an unlinked node never changes again) and
//    separators never change in a published node (gc/README.md, "Sorted maps read without their
//    lock"). A change that breaks these must change those readers too.
//  * Bounds: every node access checks the node's capacity and level against what it expects, so a
//    corrupt tree raises CorruptHeapError instead of reading out of bounds.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "layout.hpp"
#include "roots.hpp"

namespace colors::detail {

inline constexpr std::size_t kLeafMax = 32;  // entries of a leaf
inline constexpr std::size_t kLeafMin = kLeafMax / 4;
inline constexpr std::size_t kFanMax = 64;  // children of an internal node
inline constexpr std::size_t kFanMin = kFanMax / 4;

// One end of a range: no key (unbounded), or a key and whether it belongs to the range.
struct SortedBound {
  Word key = kNull;
  bool present = false;
  bool inclusive = true;
};

// Throws TypeMismatchError naming `key` unless it can be a key (integer, non-NaN float, string,
// binary). For bindings that check before they convert.
void sorted_check_key(Word key);
// <0, 0, >0. REQUIRES: both valid keys of the same category.
int sorted_compare_keys(Word a, Word b);
// The same for any two words: TypeMismatchError unless both are valid keys of one category.
int sorted_compare_checked(Word a, Word b);

std::size_t sorted_size(Word map);
bool sorted_load(Word map, Word key, Rooted* value);  // rooted value when present
bool sorted_contains(Word map, Word key);
// Inserts or replaces (only inserts when !replace). Returns true when the key was new; else, if
// `old` != nullptr, the value it had, rooted. An equal key already present is kept (put(1.0)
// replaces the value of 1).
bool sorted_put(Metadata* m, Word map, Word key, Word value, Rooted* old = nullptr, bool replace = true);
// Removes the key; returns whether it was there (and its value, rooted, if `value` != nullptr).
bool sorted_remove(Metadata* m, Word map, Word key, Rooted* value = nullptr);
void sorted_clear(Word map);
// Entries with lo <= key <= hi (as the bounds say) in ascending order, or descending when
// `reverse`, at most `limit` of them, as rooted key, value pairs (values skipped, left null, when
// !with_values). One instant.
std::vector<std::pair<Rooted, Rooted>> sorted_range(Word map, const SortedBound& lo, const SortedBound& hi, bool reverse,
                                                    std::size_t limit, bool with_values = true);
// The number of keys < key (<= key if `inclusive`). O(leaves before it): nodes keep no counts.
std::size_t sorted_rank(Word map, Word key, bool inclusive);
// The entry at position i (0-based, ascending; i < 0 counts from the end) rooted; IndexError when
// out of range. O(leaves before it).
std::pair<Rooted, Rooted> sorted_entry_at(Word map, std::int64_t i);
// Removes the entry at position i (as sorted_entry_at) and returns it, in one operation.
std::pair<Rooted, Rooted> sorted_pop_at(Metadata* m, Word map, std::int64_t i);

// Reads without the map's lock, for the views of a read scope (colors::SortedMapView): the scope
// keeps every node and value they read from being freed, and the invariants above make a get
// linearizable and a read weakly consistent (gc/README.md, "Sorted maps read without their
// lock"). The words returned are borrowed. REQUIRES: inside a read scope (read_scope.hpp).
// The value of `key` into *value; false when absent.
bool sorted_get_unlocked(Word map, Word key, Word* value);
// Up to `max` entries with lo <= key <= hi (as the bounds say), ascending, each passed to
// emit(to, its position, key, value); returns how many. Each leaf is read at its own instant: keys ascend, each at most once, and a key in the map
// for the whole read is returned unless `max` ends it first.
std::size_t sorted_read_unlocked(Word map, const SortedBound& lo, const SortedBound& hi, std::size_t max,
                                 void (*emit)(void* to, std::size_t i, Word key, Word value), void* to);

// The structure check of the heap verifier (quiescent heap only): shapes, levels, key order,
// separators and size (unless the lock is held: a dead owner's operation may not be counted yet).
// Reads only references `is_object` accepts. Appends what it finds wrong to `errors`.
void sorted_verify(Word map, const std::function<bool(Word)>& is_object, std::vector<std::string>* errors);

}  // namespace colors::detail
