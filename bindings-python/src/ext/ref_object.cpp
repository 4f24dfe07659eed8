// The _Ref type (ref_object.hpp).
#include "ref_object.hpp"

#include "free_list.hpp"

#include <new>

namespace colors_py {

PyTypeObject* g_ref_type = nullptr;

namespace {

struct RefObject {
  PyObject_HEAD
  Ref ref;  // constructed in new_ref_object, destroyed in ref_dealloc
};

FreeList<256> g_free_refs;  // _Refs of dead proxies: a traversal makes and drops one per list it reads

void ref_dealloc(PyObject* self) {
  reinterpret_cast<RefObject*>(self)->ref.~Ref();  // drops the root (a Value of a closed attachment only forgets it)
  g_free_refs.give(self);
}

PyObject* ref_raw(PyObject* self, void*) {
  try {
    return PyLong_FromUnsignedLongLong(ref_in(self)->value().raw());
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

PyObject* ref_kind(PyObject* self, void*) {
  const std::string_view k = colors::type_name(ref_in(self)->kind);
  return PyUnicode_FromStringAndSize(k.data(), static_cast<Py_ssize_t>(k.size()));
}

PyObject* ref_same(PyObject* self, PyObject* other) {
  if (Py_TYPE(other) != g_ref_type) {
    PyErr_SetString(PyExc_TypeError, "same() takes a _Ref");
    return nullptr;
  }
  return PyBool_FromLong(ref_in(self)->value().raw() == ref_in(other)->value().raw());
}

PyGetSetDef ref_getset[] = {
    {"raw", ref_raw, nullptr, "The shared object's address.", nullptr},
    {"kind", ref_kind, nullptr, "The shared type's name.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyMethodDef ref_methods[] = {
    {"same", ref_same, METH_O, "Whether both hold the same shared object."},
    {nullptr, nullptr, 0, nullptr},
};

PyType_Slot ref_slots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(&ref_dealloc)},
    {Py_tp_getset, ref_getset},
    {Py_tp_methods, ref_methods},
    {Py_tp_doc, const_cast<char*>("A GC root of this process holding one shared object (internal).")},
    {0, nullptr},
};
// Final (no Py_TPFLAGS_BASETYPE): ref_of's exact type check is then the same as isinstance. Not a
// GC object: a _Ref refers to no Python object. Not instantiable from Python.
PyType_Spec ref_spec = {"colors_shm._colors_shm._Ref", sizeof(RefObject), 0,
                        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, ref_slots};

}  // namespace

Ref* ref_in(PyObject* r) { return &reinterpret_cast<RefObject*>(r)->ref; }

Ref& ref_self(py::handle self) {
  if (Py_TYPE(self.ptr()) != g_ref_type) throw py::type_error("a _Ref method called on another object");
  return *ref_in(self.ptr());
}

py::object new_ref_object(colors::Value&& v) {
  PyObject* o = g_free_refs.take(g_ref_type);
  try {
    new (&reinterpret_cast<RefObject*>(o)->ref) Ref(std::move(v));
  } catch (...) {
    g_free_refs.give(o);  // no Ref to destroy: the object goes back as raw memory
    throw;
  }
  return py::reinterpret_steal<py::object>(o);
}

void init_ref_type(py::module_& m) {
  g_ref_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&ref_spec));
  if (g_ref_type == nullptr) throw py::error_already_set();
  m.add_object("_Ref", py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(g_ref_type)));
}

}  // namespace colors_py
