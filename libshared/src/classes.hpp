// The classes space: bump allocation of immortal records, shared names, the class registry
// (families of immutable versions), and builtin classes.
//
// Invariants:
//  * Records are written completely before a release store links them into a table or list;
//    readers walk tables and version lists without locks (acquire loads).
//  * Creating records, appending versions and evolving objects happen under
//    Metadata::classes_lock. A holder that dies leaves at worst unreachable bytes in the space.
#pragma once
#include <cstddef>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "colors/types.hpp"
#include "layout.hpp"

namespace colors::detail {

void init_classes_space(Metadata* m);

// REQUIRES: classes_lock held. Zero-filled, 16-byte aligned. Throws OutOfMemoryError.
void* classes_alloc(Metadata* m, std::size_t bytes);
// Slot blocks: arrays of null-initialised slots for channels, 64-byte aligned, in size classes of
// 2^k slots, reused after their channel is deleted. A block stays a slot block for good (its
// header never changes), so a reader that still holds a payload pointer after the block was
// freed or reused reads slots, never other records: null, or a value a channel holds.
// REQUIRES: classes_lock held. Returns the payload (slot_block_capacity(p) >= slots). Throws
// OutOfMemoryError.
std::atomic<Word>* slot_block_alloc(Metadata* m, std::uint32_t slots);
// REQUIRES: classes_lock held; every slot of the block is null.
void slot_block_free(Metadata* m, std::atomic<Word>* payload);
inline std::uint64_t slot_block_capacity(const std::atomic<Word>* payload) {
  return (reinterpret_cast<const SlotBlockHeader*>(payload) - 1)->capacity;
}

// REQUIRES: classes_lock held. Copies `s` into the classes space.
NameRef make_name(Metadata* m, std::string_view s);
std::string_view name_view(const NameRef& n);
std::uint32_t name_hash(std::string_view s);
// Throws InvalidArgumentError unless 1 <= length <= kMaxNameLength and valid UTF-8.
void check_name(std::string_view s, const char* what);

// Whether `s` is valid UTF-8 (no overlong forms, surrogates or values past U+10FFFF). The common
// case is inline: ASCII throughout, checked eight bytes at a time (the tail by one overlapping
// load); a byte with its high bit set takes the full check.
bool valid_utf8_full(std::string_view s);
inline bool is_valid_utf8(std::string_view s) {
  const std::size_t n = s.size();
  std::uint64_t high = 0;
  if (n >= 8) {
    std::uint64_t w;
    for (std::size_t i = 0; i + 8 < n; i += 8) {
      std::memcpy(&w, s.data() + i, 8);
      high |= w;
    }
    std::memcpy(&w, s.data() + n - 8, 8);
    high |= w;
  } else {
    for (std::size_t i = 0; i < n; ++i) high |= static_cast<unsigned char>(s[i]);
  }
  return (high & 0x8080808080808080ULL) == 0 || valid_utf8_full(s);
}
inline ClassRecord* builtin_class(Metadata* m, TypeKind k) { return m->builtin[static_cast<int>(k)]; }

// Exact lookup by (name, field set): a version with the same live fields (names and types), in
// any order. Prefers a dense version (slots 0..n-1, no deleted entries). Creates a dense version
// if none exists.
ClassRecord* find_or_define_class(Metadata* m, std::string_view name, const std::vector<FieldSpec>& fields);
// Lookup or creation of the version that is `base` plus `field`, or `base` minus the field named
// `drop`; every other entry keeps its slot. Used by schema evolution, so the result's layout is
// compatible with objects of `base`, and it keeps FieldInfo's invariant (layout.hpp): a dropped
// field stays as a deleted entry holding its slot; an added field takes back its own deleted
// entry of the same type, else a new slot after all of base's. version_with_field throws
// OutOfMemoryError for a new entry when base already has kMaxDeletedFields deleted ones.
ClassRecord* version_with_field(Metadata* m, ClassRecord* base, const FieldSpec& field);
ClassRecord* version_without_field(Metadata* m, ClassRecord* base, std::string_view drop);

ClassFamily* find_family(Metadata* m, std::string_view name);
// The live field named `name`, or null (deleted entries are skipped).
const FieldInfo* find_field(const ClassRecord* c, std::string_view name);
bool is_class_record(Metadata* m, const void* p);

}  // namespace colors::detail
