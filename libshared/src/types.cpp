#include "colors/types.hpp"

namespace colors {

std::string_view type_name(TypeKind k) {
  switch (k) {
    case TypeKind::kAny: return "any";
    case TypeKind::kInteger: return "integer";
    case TypeKind::kFloat: return "float";
    case TypeKind::kBoolean: return "boolean";
    case TypeKind::kString: return "string";
    case TypeKind::kBinary: return "binary";
    case TypeKind::kList: return "list";
    case TypeKind::kSet: return "set";
    case TypeKind::kMap: return "map";
    case TypeKind::kObject: return "object";
    case TypeKind::kArray: return "$array";
    case TypeKind::kTable: return "$table";
    case TypeKind::kExtension: return "$extension";
    case TypeKind::kRootChunk: return "$roots";
    case TypeKind::kNull: return "null";
    case TypeKind::kSortedMap: return "sortedmap";
  }
  return "?";
}

}  // namespace colors
