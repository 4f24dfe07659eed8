// The class version a Java long names (ClassMapping.sharedClass(), the field fast path's plans,
// the bulk copies' class tables), checked before a native reads or allocates through it. Shared by
// jni_direct.cpp and jni_bulk.cpp, which take class versions as raw addresses.
#pragma once
#include <jni.h>

#include <cstdint>

#include <colors/errors.hpp>

#include "classes.hpp"

namespace colors_jni {

// REQUIRES: attached (the address lies in the current segment's classes space).
inline colors::detail::ClassRecord* user_class_record(jlong cls) {
  auto* c = reinterpret_cast<colors::detail::ClassRecord*>(static_cast<std::uintptr_t>(cls));
  if (c == nullptr || c->magic != colors::detail::kClassMagic || c->kind != colors::TypeKind::kObject)
    throw colors::InvalidArgumentError("not a user class record (binding bug)");
  return c;
}

}  // namespace colors_jni
