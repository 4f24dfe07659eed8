// The _Ref type: a plain extension object holding one Ref (common.hpp) inline, the `_ref` of every
// container proxy. Not a pybind11 class: a pybind11 instance costs a registry lookup, a heap
// allocation of its holder and an entry in pybind11's instance map to make and to free, about half
// of what reading a list field cost; a _Ref is one tp_alloc (or a reused free one).
//
// Its methods are still written as pybind11 functions (argument conversion, error translation):
// def_ref_method registers `R fn(Ref&, A...)` as method `name`, with `self` checked to be a _Ref.
// The hot operations of list proxies bypass method dispatch altogether (list_fast_paths.cpp).
#pragma once
#include "common.hpp"

namespace colors_py {

extern PyTypeObject* g_ref_type;  // the module keeps it alive

// A new _Ref holding `v` (a new reference). Throws what tp_alloc raised.
py::object new_ref_object(colors::Value&& v);
// The Ref inside `r`. REQUIRES: Py_TYPE(r) == g_ref_type.
Ref* ref_in(PyObject* r);
// The Ref of `self` as a method receiver: TypeError unless it is a _Ref.
Ref& ref_self(py::handle self);

void init_ref_type(py::module_& m);

template <class R, class... A>
void def_ref_method(const char* name, R (*fn)(Ref&, A...)) {
  py::handle cls(reinterpret_cast<PyObject*>(g_ref_type));
  py::cpp_function cf([fn](py::handle self, A... a) -> R { return fn(ref_self(self), std::forward<A>(a)...); },
                      py::name(name), py::is_method(cls), py::sibling(py::getattr(cls, name, py::none())));
  if (PyObject_SetAttrString(cls.ptr(), name, cf.ptr()) != 0) throw py::error_already_set();
}

}  // namespace colors_py
