// A free list of dead instances of one extension type (not a GC type), reused by the next
// instances: a traversal makes and drops one object per element it reads (proxy handles, _Refs),
// and this saves an allocation and a free each time.
//
// Invariants: every entry has refcount 0, its contents destroyed by the type's dealloc, and no
// reference to its type; touched only with the GIL held.
#pragma once
#include <Python.h>
#include <pybind11/pybind11.h>

namespace colors_py {

template <int kCapacity>
class FreeList {
 public:
  // An instance of `type` with refcount 1 (reused, or tp_alloc'ed: zeroed), holding a reference
  // to `type`; its contents are the caller's to construct. Throws what tp_alloc raised.
  PyObject* take(PyTypeObject* type) {
    if (n_ > 0) {
      PyObject* o = entries_[--n_];
      PyObject_Init(o, type);  // refcount 1, takes a type reference
      return o;
    }
    PyObject* o = type->tp_alloc(type, 0);  // takes a type reference (heap type)
    if (o == nullptr) throw pybind11::error_already_set();
    return o;
  }

  // The end of a dealloc, once the contents are destroyed: keeps the memory for reuse (or frees
  // it when the list is full) and drops the instance's reference to its type.
  void give(PyObject* o) {
    PyTypeObject* tp = Py_TYPE(o);
    if (n_ < kCapacity) entries_[n_++] = o;
    else tp->tp_free(o);
    Py_DECREF(tp);  // instances of a heap type hold a reference to it
  }

 private:
  PyObject* entries_[kCapacity];
  int n_ = 0;
};

}  // namespace colors_py
