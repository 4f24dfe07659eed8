// Builtin containers: list (growable array), set and map (open-addressing hash tables keyed by
// the language-neutral hash and equality of objects.hpp).
//
// Invariants:
//  * Every index is checked against the capacity of the storage object actually loaded, never
//    against a size read separately; probes are bounded by the table's capacity. So racing
//    unsynchronized operations may lose updates or see stale elements, but never read or write
//    out of bounds, loop forever, or corrupt a block.
//  * Storage is replaced, never resized in place: a new array/table is filled, then published
//    with store_ref (the old one stays valid memory for readers still holding it).
//  * Every reference store goes through store_ref (the write barrier).
#pragma once
#include <cstdint>
#include <functional>

#include "layout.hpp"
#include "roots.hpp"

namespace colors::detail {

// ---- list ----
std::size_t list_size(Word list);
Word list_get(Word list, std::size_t i);           // IndexError when out of range
Rooted list_load(Word list, std::size_t i);        // list_get, rooted (roots.hpp, root_load)
void list_set(Word list, std::size_t i, Word v);   // IndexError when out of range
void list_append(Metadata* m, Word list, Word v);
void list_insert(Metadata* m, Word list, std::size_t i, Word v);  // i <= size
Word list_erase(Word list, std::size_t i);         // returns the removed element
void list_clear(Word list);

// ---- set and map ----
std::size_t hash_size(Word h);
bool hash_contains(Word h, Word key);
bool map_get(Word map, Word key, Word* value);
bool map_load(Word map, Word key, Rooted* value);  // map_get, rooted
// Inserts or replaces. Returns true when the key was new.
bool map_put(Metadata* m, Word map, Word key, Word value);
bool set_add(Metadata* m, Word set, Word key);
// Removes the key; returns whether it was there (and its value for maps, if `value` != nullptr).
bool hash_remove(Word h, Word key, Word* value = nullptr);
void hash_clear(Word h);
// Visits live entries; keys are given back as users see them (the null key as kNull).
void hash_for_each(Word h, const std::function<void(Word key, Word value)>& f);
// Visits live entries as rooted (key, value) pairs.
void hash_for_each_rooted(Word h, const std::function<void(Rooted key, Rooted value)>& f);

}  // namespace colors::detail
