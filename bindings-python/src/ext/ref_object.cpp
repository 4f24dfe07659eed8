// The _Ref type (ref_object.hpp).
#include "ref_object.hpp"

#include <new>

namespace colors_py {

PyTypeObject* g_ref_type = nullptr;

namespace {

struct RefObject {
  PyObject_HEAD
  Ref ref;  // constructed in new_ref_object, destroyed in ref_dealloc
};

// _Refs of dead proxies, reused: a traversal makes and drops one per list it reads.
// Invariants: every entry has refcount 0, a destroyed Ref and no reference to its type; touched
// only with the GIL held.
constexpr int kMaxFree = 256;
RefObject* g_free[kMaxFree];
int g_free_count = 0;

void ref_dealloc(PyObject* self) {
  auto* r = reinterpret_cast<RefObject*>(self);
  r->ref.~Ref();  // drops the root (a Value of a closed attachment only forgets it)
  PyTypeObject* tp = Py_TYPE(self);
  if (g_free_count < kMaxFree) g_free[g_free_count++] = r;
  else tp->tp_free(self);
  Py_DECREF(tp);  // instances of a heap type hold a reference to it
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
  RefObject* r;
  if (g_free_count > 0) {
    r = g_free[--g_free_count];
    PyObject_Init(reinterpret_cast<PyObject*>(r), g_ref_type);  // refcount 1, takes a type reference
  } else {
    PyObject* o = g_ref_type->tp_alloc(g_ref_type, 0);  // takes a type reference (heap type)
    if (o == nullptr) throw py::error_already_set();
    r = reinterpret_cast<RefObject*>(o);
  }
  try {
    new (&r->ref) Ref(std::move(v));
  } catch (...) {  // no Ref to destroy: the object goes back as raw memory
    PyTypeObject* tp = Py_TYPE(reinterpret_cast<PyObject*>(r));
    tp->tp_free(r);
    Py_DECREF(tp);
    throw;
  }
  return py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(r));
}

void init_ref_type(py::module_& m) {
  g_ref_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&ref_spec));
  if (g_ref_type == nullptr) throw py::error_already_set();
  m.add_object("_Ref", py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(g_ref_type)));
}

}  // namespace colors_py
