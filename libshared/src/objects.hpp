// Object layouts in the objects space: allocation of every kind, reading values, the
// language-neutral hash and equality, and user-object fields with schema evolution.
#pragma once
#include <cstdint>
#include <string_view>

#include "colors/types.hpp"
#include "layout.hpp"
#include "roots.hpp"

namespace colors::detail {

// ---- allocation: every result comes rooted (roots.hpp), the root taken before publication ----
Rooted new_integer(Metadata* m, std::int64_t v);   // small ints are unboxed (no root needed)
Rooted new_float(Metadata* m, double v);
Rooted new_string(Metadata* m, std::string_view utf8);  // throws InvalidArgumentError on bad UTF-8
Rooted new_binary(Metadata* m, const void* data, std::size_t n);
Rooted new_list(Metadata* m, std::size_t capacity);
Rooted new_set(Metadata* m, std::size_t capacity);
Rooted new_map(Metadata* m, std::size_t capacity);
Rooted new_user_object(Metadata* m, ClassRecord* cls);
// A slot array (list storage, extension) of `capacity` null slots.
Rooted new_array(Metadata* m, TypeKind kind, std::size_t capacity);
// The open-addressing table of a set or map, with room for `capacity` entries.
Rooted new_table(Metadata* m, std::size_t capacity);
// Generic: reserve, let `init` fill the payload, publish.
std::size_t object_bytes(std::size_t payload);

// ---- inspection ----
inline ObjectHead* obj(Word w) { return reinterpret_cast<ObjectHead*>(w); }
inline ClassRecord* class_of(Word w) { return obj(w)->cls.load(std::memory_order_acquire); }
TypeKind kind_of(Word w);  // kNull, kInteger (small or boxed), kBoolean, or the object's kind
bool is_integer(Word w);
std::int64_t integer_value(Word w);  // REQUIRES: is_integer(w)
double float_value(Word w);          // REQUIRES: kind_of(w) == kFloat
std::string_view string_value(Word w);  // REQUIRES: kind_of(w) == kString
std::size_t block_size_of(Word w);

// Language-neutral equality and hash: by value for integer, float (an integral float equals the
// integer of the same value, as in Python), boolean, string and binary; by identity otherwise.
bool values_equal(Word a, Word b);
std::uint64_t value_hash(Word w);

// ---- user objects ----
// Number of slots the object was allocated with.
std::size_t inline_slots(Word o);
// The slot holding field `f` of object `o` under its current class, or nullptr if the object's
// storage has no such slot (never happens for the object's own class).
std::atomic<Word>* field_slot(Word o, const FieldInfo& f);
// Checks that `v` may be stored in a field of type `f` (TypeMismatchError otherwise).
void check_field_type(const FieldInfo& f, Word v);
// Switches `o` to the version of its class that also has `field` (schema evolution), in place.
// Returns the new class. Reuses a version with that exact layout when one exists.
ClassRecord* add_field(Metadata* m, Word o, const FieldSpec& field);
// Switches `o` to the version without the field named `name`. The value stays in the object's
// storage (old objects keep their data) but is no longer reachable through the new class.
ClassRecord* remove_field(Metadata* m, Word o, std::string_view name);

}  // namespace colors::detail
