// The primitive operations of shared sorted maps (libshared/src/sorted_map.hpp), as methods of
// _Ref; the pure-Python SharedSortedDict (_proxies.py) builds the SortedDict-like behaviour on
// them. Each primitive is one operation under the map's lock. Python values are converted before
// the lock is taken (converting may run Python code), results after it is released.
#include "common.hpp"
#include "popped.hpp"
#include "ref_object.hpp"
#include "objects.hpp"
#include "segment.hpp"
#include "word.hpp"
#include "sorted_map.hpp"

namespace colors_py {

namespace cd = colors::detail;

namespace {

// The map's word, after checking the attachment and the kind.
cd::Word map_word(Ref& r) {
  r.check();
  if (r.kind != colors::TypeKind::kSortedMap)
    throw colors::TypeMismatchError("expected a shared sorted map, got a shared " + std::string(colors::type_name(r.kind)));
  return r.value().raw();
}

[[noreturn]] void key_error(py::handle key) {
  PyErr_SetObject(PyExc_KeyError, key.ptr());
  throw py::error_already_set();
}

// A range bound: None is unbounded (None is never a key).
cd::SortedBound bound(const colors::Value& v, bool given, bool inclusive) {
  if (!given) return {};
  return {v.raw(), true, inclusive};
}

enum RangeMode { kKeys = 0, kValues = 1, kItems = 2 };

// ---- the hot methods of SharedSortedDict, as C methods of the class ----
// Installed on the class by _install_sorted_fast_paths: Python calls them through a method
// descriptor (vectorcall), without the Python-level wrapper and pybind11's dispatch that the other
// primitives pay (together several hundred ns per lookup).

// A lookup key as a word: immediates (most int and float keys) directly, with no Value (its
// attachment check and root bookkeeping); anything else through to_value, kept alive in *hold.
cd::Word key_word(PyObject* key, colors::Value* hold) {
  if (PyLong_CheckExact(key)) {
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(key, &overflow);
    if (overflow == 0 && !(x == -1 && PyErr_Occurred()) && cd::fits_small(x)) return cd::make_small(x);
    PyErr_Clear();  // to_value reports it
  } else if (PyFloat_CheckExact(key)) {
    const double d = PyFloat_AS_DOUBLE(key);
    if (cd::fits_small_float(d)) return cd::make_small_float(d);
  }
  *hold = to_value(key);
  return hold->raw();
}

// A value read under the map's lock, as a Python object: immediates decoded in place.
PyObject* py_result(cd::Rooted&& v) {
  const cd::Word w = v.word();
  if (cd::is_small_int(w)) return PyLong_FromLongLong(cd::small_value(w));
  if (cd::is_small_float(w)) return PyFloat_FromDouble(cd::small_float_value(w));
  if (w == cd::kNull) return Py_NewRef(Py_None);
  if (cd::is_bool(w)) return PyBool_FromLong(cd::bool_value(w));
  return py_of(std::move(v)).release().ptr();
}

Ref& self_ref(PyObject* self) {
  Ref* r = ref_of(self);
  if (r == nullptr) throw colors::TypeMismatchError("not a shared sorted map proxy");
  return *r;
}

PyObject* fast_getitem(PyObject* self, PyObject* key) {
  try {
    Ref& r = self_ref(self);
    colors::Value hold;
    const cd::Word k = key_word(key, &hold);
    cd::Rooted v;
    if (!cd::sorted_load(map_word(r), k, &v)) {
      PyErr_SetObject(PyExc_KeyError, key);
      return nullptr;
    }
    return py_result(std::move(v));
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

PyObject* fast_get(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs < 1 || nargs > 2) {
    PyErr_SetString(PyExc_TypeError, "get() takes a key and an optional default");
    return nullptr;
  }
  try {
    Ref& r = self_ref(self);
    colors::Value hold;
    const cd::Word k = key_word(args[0], &hold);
    cd::Rooted v;
    if (!cd::sorted_load(map_word(r), k, &v)) return Py_NewRef(nargs == 2 ? args[1] : Py_None);
    return py_result(std::move(v));
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

PyObject* fast_contains(PyObject* self, PyObject* key) {
  try {
    Ref& r = self_ref(self);
    colors::Value hold;
    const cd::Word k = key_word(key, &hold);
    return PyBool_FromLong(cd::sorted_contains(map_word(r), k));
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

PyObject* fast_setitem(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "__setitem__ takes a key and a value");
    return nullptr;
  }
  try {
    Ref& r = self_ref(self);
    colors::Value k = to_value(args[0]);
    colors::Value v = to_value(args[1]);
    cd::sorted_put(cd::current_meta(), map_word(r), k.raw(), v.raw());
    Py_RETURN_NONE;
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

PyObject* fast_len(PyObject* self, PyObject*) {
  try {
    return PyLong_FromSize_t(cd::sorted_size(map_word(self_ref(self))));
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

PyMethodDef g_fast_methods[] = {
    {"__getitem__", fast_getitem, METH_O, "d[key]: the value of key; KeyError when absent."},
    {"get", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(fast_get)), METH_FASTCALL,
     "get(key, default=None): the value of key, or default."},
    {"__contains__", fast_contains, METH_O, "key in d"},
    {"__setitem__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(fast_setitem)), METH_FASTCALL,
     "d[key] = value (one operation)."},
    {"__len__", fast_len, METH_NOARGS, "len(d): the number of entries."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

void init_sorted_map(py::module_& m) {
  def_ref_method("tclear", +[](Ref& r) { cd::sorted_clear(map_word(r)); });
  // dict.setdefault: the existing value, or `dflt` after storing it (one operation).
  def_ref_method("tsetdefault", +[](Ref& r, py::handle key, py::handle dflt) {
    colors::Value k = to_value(key);
    colors::Value d = to_value(dflt);
    cd::Rooted existing;
    if (cd::sorted_put(cd::current_meta(), map_word(r), k.raw(), d.raw(), &existing, false)) return from_value(std::move(d));
    return py_of(std::move(existing));
  });
  def_ref_method("tremove", +[](Ref& r, py::handle key) {
    colors::Value k = to_value(key);
    return cd::sorted_remove(cd::current_meta(), map_word(r), k.raw());
  });
  def_ref_method("tpop", +[](Ref& r, py::handle key) {  // KeyError when missing
    colors::Value k = to_value(key);
    const cd::Word map = map_word(r);
    std::array<cd::Rooted, 1> t;
    if (!cd::sorted_remove(cd::current_meta(), map, k.raw(), &t[0])) key_error(key);
    return convert_popped(t, [&] { return py_of(std::move(t[0])); }, [&](const auto& w) {
      cd::sorted_put(cd::current_meta(), map, k.raw(), w[0], nullptr, /*replace=*/false);
    });
  });
  // Up to `limit` keys, values or (key, value) tuples between lo and hi (None: unbounded), one
  // instant, ascending or descending.
  def_ref_method("trange", +[](Ref& r, py::handle lo, py::handle hi, bool lo_incl, bool hi_incl, bool reverse, std::size_t limit, int mode) {
    const bool lo_given = !lo.is_none(), hi_given = !hi.is_none();
    colors::Value l = lo_given ? to_value(lo) : colors::Value();
    colors::Value h = hi_given ? to_value(hi) : colors::Value();
    auto rows = cd::sorted_range(map_word(r), bound(l, lo_given, lo_incl), bound(h, hi_given, hi_incl), reverse, limit, mode != kKeys);
    Unfilled<py::list> out(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (mode == kKeys) out.set(i, py_of(std::move(rows[i].first)));
      else if (mode == kValues) out.set(i, py_of(std::move(rows[i].second)));
      else out.set(i, py::make_tuple(py_of(std::move(rows[i].first)), py_of(std::move(rows[i].second))));
    }
    return out.done();
  });
  def_ref_method("trank", +[](Ref& r, py::handle key, bool inclusive) {
    colors::Value k = to_value(key);
    return cd::sorted_rank(map_word(r), k.raw(), inclusive);
  });
  def_ref_method("tat", +[](Ref& r, std::int64_t i) {
    auto [k, v] = cd::sorted_entry_at(map_word(r), i);
    return py::make_tuple(py_of(std::move(k)), py_of(std::move(v)));
  });
  def_ref_method("tpopat", +[](Ref& r, std::int64_t i) {
    const cd::Word map = map_word(r);
    auto [k, v] = cd::sorted_pop_at(cd::current_meta(), map, i);
    std::array<cd::Rooted, 2> t{std::move(k), std::move(v)};
    return convert_popped(t, [&] { return py::make_tuple(py_of(std::move(t[0])), py_of(std::move(t[1]))); },
                          [&](const auto& w) {
                            cd::sorted_put(cd::current_meta(), map, w[0], w[1], nullptr, /*replace=*/false);
                          });
  });
  m.def("_install_sorted_fast_paths", [](py::object cls) {
    auto* t = install_fast_methods(cls, g_fast_methods, colors::TypeKind::kSortedMap);
    // d[key] straight through the type's slot: setting __getitem__ above left CPython's generic
    // slot function, which looks the method up by name on every call (~10% of a lookup). The class
    // is final in practice (only the extension makes its instances) and its __getitem__ is never
    // set again, which would reset the slot to the generic one (still correct).
    if (t->tp_as_mapping != nullptr) t->tp_as_mapping->mp_subscript = fast_getitem;
  });
  m.def("_new_sorted_map", [] {
    ensure_attached();
    return from_value(colors::new_sorted_map());
  });
}

}  // namespace colors_py
