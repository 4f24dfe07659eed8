// The slot word of a Python number that is stored without allocation (libshared/src/word.hpp):
// the store fast paths of fields (classes.cpp) and copy_to (values.cpp).
#pragma once
#include <Python.h>

#include "colors/types.hpp"
#include "word.hpp"

namespace colors_py {

// An exact int within 60 bits (kind integer) or an exact float in the immediate range (kind
// float): its word and kind, true. Anything else (bool, subclasses, wide ints, boxed floats): false.
inline bool number_word(PyObject* value, colors::detail::Word* w, colors::TypeKind* kind) {
  namespace cd = colors::detail;
  if (PyLong_CheckExact(value)) {
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow != 0 || !cd::fits_small(x)) return false;
    *w = cd::make_small(x);
    *kind = colors::TypeKind::kInteger;
    return true;
  }
  if (PyFloat_CheckExact(value) && cd::fits_small_float(PyFloat_AS_DOUBLE(value))) {
    *w = cd::make_small_float(PyFloat_AS_DOUBLE(value));
    *kind = colors::TypeKind::kFloat;
    return true;
  }
  return false;
}

}  // namespace colors_py
