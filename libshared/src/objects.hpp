// Object layouts in the objects space: allocation of every kind, reading values, the
// language-neutral hash and equality, and user-object fields with schema evolution.
#pragma once
#include <cstdint>
#include <string_view>

#include "colors/types.hpp"
#include "block.hpp"
#include "layout.hpp"
#include "word.hpp"
#include "roots.hpp"

namespace colors::detail {

// ---- allocation: every result comes rooted (roots.hpp), the root taken before publication ----
Rooted new_integer(Metadata* m, std::int64_t v);   // small ints are unboxed (no root needed)
Rooted new_float(Metadata* m, double v);        // immediate when fits_small_float (no root)
Rooted new_string(Metadata* m, std::string_view utf8);  // throws InvalidArgumentError on bad UTF-8
Rooted new_binary(Metadata* m, const void* data, std::size_t n);
Rooted new_list(Metadata* m, std::size_t capacity);
Rooted new_set(Metadata* m, std::size_t capacity);
Rooted new_map(Metadata* m, std::size_t capacity);
Rooted new_sorted_map(Metadata* m);  // an empty ordered map (sorted_map.hpp)
Rooted new_user_object(Metadata* m, ClassRecord* cls);
// A slot array (list storage, extension) of `capacity` null slots.
Rooted new_array(Metadata* m, TypeKind kind, std::size_t capacity);
// The open-addressing table of a set or map, with room for `capacity` entries.
Rooted new_table(Metadata* m, std::size_t capacity);
// The largest capacity a set or map can be made or grown for: its table then has at most 2^36
// entries (1 TiB), as an array has at most 2^36 slots.
inline constexpr std::size_t kMaxTableCapacity = std::size_t{1} << 35;
// The entries (a power of two) of the table new_table makes for `capacity` entries. Throws
// OutOfMemoryError above kMaxTableCapacity.
std::size_t table_entries_for(std::size_t capacity);
// Generic: reserve, let `init` fill the payload, publish.
std::size_t object_bytes(std::size_t payload);

// ---- inspection ----
inline ObjectHead* obj(Word w) { return reinterpret_cast<ObjectHead*>(w); }
inline ClassRecord* class_of(Word w) { return obj(w)->cls.load(std::memory_order_acquire); }
// kNull, kInteger (small or boxed), kBoolean, kFloat (immediate or boxed), or the object's kind.
inline TypeKind kind_of(Word w) {
  if (w == kNull) return TypeKind::kNull;
  if (is_small_int(w)) return TypeKind::kInteger;
  if (is_bool(w)) return TypeKind::kBoolean;
  if (is_small_float(w)) return TypeKind::kFloat;
  return class_of(w)->kind;
}
bool is_integer(Word w);
std::int64_t integer_value(Word w);  // REQUIRES: is_integer(w)
// REQUIRES: kind_of(w) == kFloat
inline double float_value(Word w) {
  return is_small_float(w) ? small_float_value(w) : reinterpret_cast<const FloatObject*>(w)->value;
}
// REQUIRES: kind_of(w) == kString
inline std::string_view string_value(Word w) {
  const auto* s = reinterpret_cast<const StringObject*>(w);
  return std::string_view(s->bytes, s->length);
}
inline std::size_t block_size_of(Word w) { return BlockHeader::size_of(obj(w)->block.load()); }

// Reads without a root: a window of the collector's seqlock in which nothing is freed.
// Memory is freed only by a cycle's sweep (and a successor server's finishing of one), never
// while a cycle marks, so a window is either
//   idle:    no cycle running when it opens (gc_done_seq == gc_started_seq), closed by the next
//            cycle's gc_started_seq bump; or
//   marking: the running cycle still marking when it opens (gc_phase == kMarking), closed by its
//            switch to kSweeping (or to kIdle, when the cycle is given up) or a later cycle.
// A word loaded from a slot of an object the caller keeps alive, inside a window, names an object
// that was reachable then, hence not free, and that nothing frees before the window closes. The
// collector's side: gc_started_seq's bump, then gc_phase's store (both seq_cst) happen before every
// write to freed memory, and each sweep task issues a release fence before its first such write
// (gc/sweeper.cpp). The reader's side (no_sweep_window_end): loads, an acquire fence, then the
// phase (acquire) and gc_started_seq: if a load saw a write to freed memory, the fences make the
// phase store before it visible to the phase load, which then is not this window's kMarking; a
// later cycle's kMarking is stored after that cycle's gc_started_seq bump, which the acquire
// phase load then makes visible to the gc_started_seq load. gc/README.md, "Reads without a root".
//
// Java's JNI-free reads copy the two functions below (org.colors.Direct.View.windowBegin/windowOpen);
// WindowConformanceTest checks the copy against them bit for bit: change both together.
//
// The window's token: 0 when a sweep may be running (take the safe way: root first); otherwise
// a value that names the window, so that two reads in the same window have the same token (a
// cache of what was read may be kept per token: Python's string cache).
inline std::uint64_t no_sweep_window_begin(const Metadata* m) {
  const std::uint32_t started = m->gc_started_seq.load(std::memory_order_acquire);
  if (m->gc_done_seq.load(std::memory_order_acquire) == started) return (std::uint64_t{started} << 2) | 1;  // idle
  if (m->gc_phase.load(std::memory_order_acquire) != static_cast<std::uint8_t>(GcPhase::kMarking)) return 0;
  return (std::uint64_t{started} << 2) | 3;  // marking
}
// Whether the window `token` (non-zero, from no_sweep_window_begin) is still open: the loads
// before this call saw no freed memory.
inline bool no_sweep_window_end(const Metadata* m, std::uint64_t token) {
  std::atomic_thread_fence(std::memory_order_acquire);  // the caller's loads happen before the checks
  const std::uint8_t phase = m->gc_phase.load(std::memory_order_acquire);
  const std::uint32_t started = m->gc_started_seq.load(std::memory_order_relaxed);
  if (started != static_cast<std::uint32_t>(token >> 2)) return false;
  return (token & 2) == 0 || phase == static_cast<std::uint8_t>(GcPhase::kMarking);
}
// Runs `read` (which loads words of heap objects with relaxed atomics, compares and bounds them
// but follows none it has not checked: until the window is known open they may be garbage) and
// returns true if the window stayed open (above); false means "retry the safe way" (root the
// object first). Lets bindings read a boxed float or a string out of a field without taking a GC
// root.
template <class F>
inline bool read_without_sweep(const Metadata* m, F&& read) {
  const std::uint64_t token = no_sweep_window_begin(m);
  if (token == 0) return false;
  read();
  return no_sweep_window_end(m, token);
}
// A relaxed atomic load of an 8-byte payload word (for use inside read_without_sweep).
inline std::uint64_t load_payload_word(const void* p) {
  return __atomic_load_n(static_cast<const std::uint64_t*>(p), __ATOMIC_RELAXED);
}

// Language-neutral equality and hash: by value for integer, float (an integral float equals the
// integer of the same value, as in Python), boolean, string and binary; by identity otherwise.
bool values_equal(Word a, Word b);
std::uint64_t value_hash(Word w);

// ---- user objects ----
// Number of slots the object was allocated with.
inline std::size_t inline_slots(Word o) { return (block_size_of(o) - sizeof(UserObject)) / sizeof(Word); }
// Slot `i` of the extension chain starting at `ext` (layout.hpp, UserObject), or nullptr when the
// chain has fewer slots. Acquire loads of the links pair with the release store that linked each
// chunk (ensure_storage, before the class that needs it is published).
inline std::atomic<Word>* extension_slot(Word ext, std::size_t i) {
  while (ext != kNull) {
    auto* a = reinterpret_cast<ArrayObject*>(ext);
    const std::size_t fields = a->capacity - 1;  // the last slot is the link
    if (i < fields) return &a->slots[i];
    i -= fields;
    ext = a->slots[fields].load(std::memory_order_acquire);
  }
  return nullptr;
}
// The slot holding field `f` of object `o` under its current class, or nullptr if the object's
// storage has no such slot (never happens for the object's own class). Inline: the field access
// fast path of the bindings.
inline std::atomic<Word>* field_slot(Word o, const FieldInfo& f) {
  auto* u = reinterpret_cast<UserObject*>(o);
  std::size_t n = inline_slots(o);
  if (f.slot < n) return &u->slots[f.slot];
  return extension_slot(u->extension.load(std::memory_order_acquire), f.slot - n);
}
// ---- allocation in a read scope (read_scope.hpp, "Allocating in a scope") ----
// Unrooted: the calling thread's read scope keeps the object until it ends.
// REQUIRES: inside a read scope.
struct SlotInit {
  std::uint32_t slot;  // FieldInfo::slot, below the class's slot_count
  Word value;          // a scalar, a reference the scope holds, or one rooted by the caller
};
Word new_integer_scoped(Metadata* m, std::int64_t v);
Word new_float_scoped(Metadata* m, double v);
Word new_string_scoped(Metadata* m, std::string_view utf8);
Word new_binary_scoped(Metadata* m, const void* data, std::size_t n);
// A user object of `cls` with `init` stored into it before it is published.
Word new_user_object_scoped(Metadata* m, ClassRecord* cls, const SlotInit* init, std::size_t n);
// A list holding the n words of `items` (each a scalar, a reference the scope holds, or one rooted
// by the caller), its array filled before it is published, of capacity n.
Word new_list_scoped(Metadata* m, const Word* items, std::size_t n);
// A set (values == nullptr) or map of kind kSet / kMap holding the n keys (and values) in that
// order, as puts in that order leave it: a key equal to an earlier one (values_equal) keeps the
// earlier key word, and for a map takes the later value. Its table filled before it is published.
Word new_hash_scoped(Metadata* m, TypeKind kind, const Word* keys, const Word* values, std::size_t n);

// The field named `name` of o's current class version; KeyError naming the class otherwise.
const FieldInfo& field_or_throw(Word o, std::string_view name);
[[noreturn]] void throw_missing_slot(const FieldInfo& f);  // CorruptHeapError
// field_slot, or CorruptHeapError when the object's storage lacks the slot.
inline std::atomic<Word>* slot_or_throw(Word o, const FieldInfo& f) {
  std::atomic<Word>* s = field_slot(o, f);
  if (__builtin_expect(s == nullptr, 0)) throw_missing_slot(f);
  return s;
}
// Checks that `v` may be stored in a field of type `f` (TypeMismatchError otherwise).
void check_field_type_slow(const FieldInfo& f, Word v);
inline void check_field_type(const FieldInfo& f, Word v) {
  if (v == kNull || f.type == TypeKind::kAny) return;
  // kind_of's cases one by one, each compared with the field's type at once.
  if (is_small_int(v)) {
    if (f.type == TypeKind::kInteger) return;
  } else if (is_small_float(v)) {
    if (f.type == TypeKind::kFloat) return;
  } else if (is_bool(v)) {
    if (f.type == TypeKind::kBoolean) return;
  } else {
    const ClassRecord* c = class_of(v);
    // A field's class name shares its class's name pointer when the class exists (classes.cpp).
    if (c->kind == f.type &&
        (f.type != TypeKind::kObject || f.class_name.len == 0 || c->name.ptr == f.class_name.ptr))
      return;
  }
  check_field_type_slow(f, v);  // a class name to compare by its bytes, or a mismatch
}
// Switches `o` to the version of its class that also has `field` (schema evolution), in place.
// Returns the new class. Reuses a version with that exact layout when one exists. A field of a
// new name takes a slot no field of `o` ever had (layout.hpp, FieldInfo), so OutOfMemoryError
// once `o` has kMaxDeletedFields deleted fields; a deleted field comes back in its old slot. The
// field holds `initial` (kNull by default) from the moment the class is switched, so no reader
// sees it without it; REQUIRES: `initial` fits the field's type and is kept alive by the caller. When the
// class already had the field (a racing addition), nothing is stored.
ClassRecord* add_field(Metadata* m, Word o, const FieldSpec& field, Word initial = kNull);
// Switches `o` to the version without the field named `name`, whose slot stays the field's
// (layout.hpp, FieldInfo), then nulls that slot (so the collector can free its value); other
// objects of the old version keep their data. A
// read racing it through the old version can see that null (doc/DESIGN.md, object model).
ClassRecord* remove_field(Metadata* m, Word o, std::string_view name);

}  // namespace colors::detail
