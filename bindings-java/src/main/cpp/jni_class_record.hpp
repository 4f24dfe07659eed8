// The class version a Java long names (ClassMapping.sharedClass(), the field fast path's plans,
// the bulk copies' class tables), checked before a native reads or allocates through it. Shared by
// jni_direct.cpp and jni_bulk.cpp, which take class versions as raw addresses.
#pragma once
#include <jni.h>

#include <cstdint>

#include <colors/errors.hpp>

#include "classes.hpp"
#include "segment.hpp"

namespace colors_jni {

// Any address is checked against the current segment's classes space before it is read: a class
// word read by Java's field fast path from what is not an object (a forged or corrupt address)
// must give an error, not a wild read. REQUIRES: attached.
inline colors::detail::ClassRecord* user_class_record(jlong cls) {
  auto* c = reinterpret_cast<colors::detail::ClassRecord*>(static_cast<std::uintptr_t>(cls));
  if (!colors::detail::is_class_record(colors::detail::current_meta(), c) || c->kind != colors::TypeKind::kObject)
    throw colors::InvalidArgumentError("not a user class record (binding bug)");
  return c;
}

}  // namespace colors_jni
