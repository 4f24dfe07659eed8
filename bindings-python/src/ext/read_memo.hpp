// Read memos: a proxy remembers what its last reference read returned, so that reading the same
// reference again returns that proxy without the identity-table lookup.
//
// Why: a reference read outside a transaction returns the live proxy of the word it loads, found
// in an identity table (identity_table.hpp). Once the tables outgrow the CPU's cache (about
// 2.5 MiB for the ~64k proxies an OO7 T1 keeps through the proxy cache) each lookup is a cache miss,
// about a quarter of a shared T1's time. A private object's attribute read has no such step. The
// memo sits in the proxy being read (its handle, or its _Ref), on cache lines the read touches
// anyway.
//
// A memo holds nothing: its proxies are borrowed, it roots nothing and keeps no Python object
// alive (no retention, no reference cycles for the cyclic GC to miss). It is the identity table's
// answer remembered together with g_identity_removals, and it is used only while that count has
// not moved, i.e. while no entry has left either table since it was made.
//
// Invariants (all with the GIL):
//  * A memo is made only for a proxy that is, at that instant, the entry of its word in an identity
//    table, with removals = g_identity_removals then, and gen = g_generation then.
//  * So while removals == g_identity_removals and gen == g_generation, that proxy is still the
//    table's entry of its word: entries leave only by erase or clear, which count, or are replaced
//    by insert, which counts too. An entry's proxy is alive or dying (refcount 0, in its dealloc,
//    its erase still to come): a hit checks the refcount, as live_in does, and never hands out a
//    dying proxy. Its memory is not freed before its erase, so reading the refcount is safe.
//  * An entry's proxy holds its object (a root, its _Ref, or the read scope that lent it), so its
//    word is that object's address: a slot or list that holds the word now refers to that
//    object, and the proxy is what a read without the memo would return.
//  * A list memo also holds the list's seqlock version (list_seqlock.hpp) at which its words were
//    read: an even version equal to it now means the list still holds those words.
//  * Memos are made and used only outside transactions (a transaction's reads go through the
//    objects' ownership records). List memos are made outside read scopes and used inside them
//    too: a scope's read also returns an element's live proxy when it has one.
#pragma once
#include <Python.h>

#include <cstdint>
#include <vector>

#include "common.hpp"
#include "identity_table.hpp"

namespace colors_py {

// Starts loading the first two cache lines of the object at `w` (the header the next read through
// its proxy checks, and the fields after it) while the interpreter goes on to that read.
inline void prefetch_object(std::uint64_t w) {
  __builtin_prefetch(reinterpret_cast<const void*>(w));
  __builtin_prefetch(reinterpret_cast<const void*>(w + 64));
}

// The last reference read through a user proxy's field: `slot` held `word`, whose live proxy was
// `proxy` (borrowed).
struct RefMemo {
  const void* slot = nullptr;
  std::uint64_t word = 0;
  PyObject* proxy = nullptr;
  std::uint64_t removals = 0;
  std::uint64_t gen = 0;

  // The remembered proxy (a new reference) if `slot` now holds `word` and the memo still holds;
  // else nullptr. Runs no Python code.
  PyObject* hit(const void* s, std::uint64_t v) const {
    if (s != slot || v != word || removals != g_identity_removals || gen != g_generation) return nullptr;
    prefetch_object(v);
    return Py_REFCNT(proxy) > 0 ? Py_NewRef(proxy) : nullptr;
  }

  // Remembers that `s` held `v`, whose live proxy (the caller checked it is the table's entry of
  // `v` now) is `p`.
  void set(const void* s, std::uint64_t v, PyObject* p) {
    slot = s;
    word = v;
    proxy = p;
    removals = g_identity_removals;
    gen = g_generation;
  }
};

// A list's elements at seqlock version `version`: for each, its word and, for a reference, its
// live proxy then (borrowed); unboxed words are decoded again at each use.
struct ListMemo {
  std::uint64_t version = 1;  // odd: no memo
  std::uint64_t removals = 0;
  std::uint64_t gen = 0;
  std::vector<std::uint64_t> words;
  std::vector<PyObject*> proxies;  // nullptr for an unboxed word

  // Lists longer than this are not remembered (the memo would copy as many words each time it is
  // made; a long list's lookups cost little beside its iteration).
  static constexpr std::size_t kMaxItems = 4096;

  // Whether the memo holds for a list whose version is `v` now (the proxies' liveness still to be
  // checked one by one).
  bool holds(std::uint64_t v) const {
    return (version & 1) == 0 && v == version && removals == g_identity_removals && gen == g_generation;
  }
};

}  // namespace colors_py
