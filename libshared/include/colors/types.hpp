// The language-neutral shared type system.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <string_view>

namespace colors {

// The shared type of a value or of a field. Builtins first; kObject is any user class (the field's
// declared class name, if any, travels next to it in FieldSpec).
enum class TypeKind : std::uint8_t {
  kAny = 0,  // field type only: untyped reference, accepts every value
  kInteger = 1,
  kFloat = 2,
  kBoolean = 3,
  kString = 4,
  kBinary = 5,
  kList = 6,
  kSet = 7,
  kMap = 8,
  kObject = 9,  // instance of a user class
  // Internal kinds: storage behind containers and objects; never seen by users.
  kArray = 10,      // elements of a list
  kTable = 11,      // hash table of a set or map
  kExtension = 12,  // fields of an object beyond the room it was allocated with
  kRootChunk = 13,  // a client's GC root table chunk
  kNull = 14,       // the kind of the null value (never a field type)
  kSortedMap = 15,  // ordered map (B+tree of kArray nodes, sorted_map.hpp)
};

inline constexpr int kTypeKindCount = 16;

std::string_view type_name(TypeKind k);

// A field of a user class as given to define_class: a name and a shared type. For kObject,
// `class_name` may name the expected class ("" accepts any user object). Constructed rather than
// aggregate-initialised, so that {"balance", TypeKind::kInteger} leaves class_name empty without
// -Wmissing-field-initializers warning in code built with -Wextra.
struct FieldSpec {
  FieldSpec() = default;
  FieldSpec(std::string name, TypeKind type = TypeKind::kAny, std::string class_name = {})
      : name(std::move(name)), type(type), class_name(std::move(class_name)) {}

  std::string name;
  TypeKind type = TypeKind::kAny;
  std::string class_name;
};

}  // namespace colors
