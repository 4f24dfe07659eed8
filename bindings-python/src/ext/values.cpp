// Python values <-> shared values: scalar conversion, proxies and their identity cache, copy_to,
// allocate, is_shared.
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common.hpp"
#include "number_word.hpp"
#include "ref_object.hpp"
#include "read_memo.hpp"
#include <structmember.h>
#include "barrier.hpp"
#include "containers.hpp"
#include "objects.hpp"
#include "read_scope.hpp"
#include "segment.hpp"
#include "sorted_map.hpp"
#include "tx_state.hpp"

namespace colors_py {

namespace cd = colors::detail;
using colors::TypeKind;

// ---- Ref ----

Ref::Ref(colors::Value&& val) : gen(g_generation), kind(val.kind()) {
  switch (kind) {
    case TypeKind::kList: v = colors::List(std::move(val)); break;
    case TypeKind::kMap: v = colors::Map(std::move(val)); break;
    case TypeKind::kSet: v = colors::Set(std::move(val)); break;
    default: v = std::move(val);
  }
}

const colors::Value& Ref::value() const {
  return std::visit([](const auto& x) -> const colors::Value& { return x; }, v);
}

Ref::~Ref() = default;

void Ref::check() const {
  if (gen != g_generation || !colors::has_segment())
    throw colors::NotAttachedError(
        "this shared object belongs to an attachment that was closed by detach(); "
        "get it again (e.g. from its repository) after attaching");
}

namespace {
[[noreturn]] void wrong_kind(const Ref& r, const char* want) {
  throw colors::TypeMismatchError(std::string("expected a shared ") + want + ", got a shared " +
                                  std::string(colors::type_name(r.kind)));
}
}  // namespace

colors::List& Ref::list() {
  check();
  if (auto* p = std::get_if<colors::List>(&v)) return *p;
  wrong_kind(*this, "list");
}
colors::Map& Ref::map() {
  check();
  if (auto* p = std::get_if<colors::Map>(&v)) return *p;
  wrong_kind(*this, "map");
}
colors::Set& Ref::set() {
  check();
  if (auto* p = std::get_if<colors::Set>(&v)) return *p;
  wrong_kind(*this, "set");
}

// ---- proxy classes and identity ----

namespace {

PyObject* g_proxy_base = nullptr;   // _proxies.SharedProxy
PyObject* g_list_cls = nullptr;     // _proxies.SharedList
PyObject* g_dict_cls = nullptr;     // _proxies.SharedDict
PyObject* g_set_cls = nullptr;      // _proxies.SharedSet
PyObject* g_sorted_cls = nullptr;   // _proxies.SharedSortedDict
PyObject* g_object_cls = nullptr;   // _proxies.SharedObject
PyObject* g_ref_attr = nullptr;     // interned "_ref"
Py_ssize_t g_ref_offset = 0;        // offset of SharedProxy's `_ref` slot in its instances
Py_ssize_t g_handle_offset = 0;     // offset of SharedProxy's hidden handle slot (identity table)

// A new proxy of class `cls` (a subclass of SharedProxy) owning a Ref of `v`. Allocated and filled
// directly (tp_alloc, a store into the `_ref` slot) rather than through `cls.__new__` and
// setattr: what object.__new__ and the slot's member descriptor would do, without two Python-level
// calls per proxy. The proxy classes define no __new__ and are not abstract.
py::object make_proxy(PyObject* cls, colors::Value&& v) {
  py::object ref = new_ref_object(std::move(v));
  auto* tp = reinterpret_cast<PyTypeObject*>(cls);
  PyObject* obj = tp->tp_alloc(tp, 0);
  if (obj == nullptr) throw py::error_already_set();
  // Not for the cyclic GC: a proxy class has no __dict__, and its object slots are the hidden
  // handle and the read-only `_ref` (_register_proxies), each an object that refers to no Python
  // object. So a proxy is never part of a reference cycle, and tracking it only made every
  // young-generation collection walk the proxies a traversal makes and drops.
  PyObject_GC_UnTrack(obj);
  *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(obj) + g_ref_offset) = ref.release().ptr();
  return py::reinterpret_steal<py::object>(obj);
}

// The registered proxy class of shared kind `k` (a generic SharedObject for user objects), or
// nullptr (no proxy kind, or before _proxies registered itself).
PyObject* proxy_class_for(TypeKind k) {
  switch (k) {
    case TypeKind::kList: return g_list_cls;
    case TypeKind::kMap: return g_dict_cls;
    case TypeKind::kSet: return g_set_cls;
    case TypeKind::kSortedMap: return g_sorted_cls;
    case TypeKind::kObject: return g_object_cls;
    default: return nullptr;
  }
}

py::object wrap(colors::Value&& v, TypeKind k) {
  if (k == TypeKind::kObject) {
    bool generic = false;
    py::object p = wrap_user_object(std::move(v), &generic);
    if (!generic) return p;
  }
  PyObject* cls = proxy_class_for(k);
  if (cls == nullptr) return new_ref_object(std::move(v));  // before _proxies registered itself
  // One live proxy per shared object: the identity table of classes.cpp (its handle in the proxy's
  // hidden slot erases the entry when the proxy dies). It replaced a dict of weakrefs, whose int
  // key, per-proxy callback and weakref cost about 2,000 instructions per proxy.
  const cd::Word w = v.raw();
  const std::uint64_t gen = g_generation;
  if (PyObject* p = live_other_proxy(w)) return py::reinterpret_steal<py::object>(p);
  py::object proxy = make_proxy(cls, std::move(v));
  // make_proxy's allocations (the _Ref, the proxy) may run a collection (Python 3.11), hence any
  // Python code, which may have made a proxy of this object meanwhile: that one stays the
  // object's proxy (ours dies here, untracked). That code may also have detached (and attached
  // again): then `w` is a word of the closed attachment, and its proxy must not enter the new
  // attachment's table. Nothing below runs Python code.
  if (gen != g_generation) throw colors::NotAttachedError("detached while a shared container's proxy was being made");
  if (PyObject* other = live_other_proxy(w)) return py::reinterpret_steal<py::object>(other);
  track_other_proxy(w, proxy.ptr(), g_handle_offset);
  return proxy;
}

const char* private_kind(PyObject* o) {
  if (PyList_Check(o)) return "list";
  if (PyTuple_Check(o)) return "tuple";
  if (PyDict_Check(o)) return "dict";
  if (PyAnySet_Check(o)) return PyFrozenSet_Check(o) ? "frozenset" : "set";
  return nullptr;
}

[[noreturn]] void unstorable(py::handle obj) {
  PyObject* o = obj.ptr();
  if (const char* k = private_kind(o))
    throw colors::TypeMismatchError(std::string("cannot store a private ") + k +
                                    " in shared memory: call colors_shm.copy_to(obj) first and store the "
                                    "shared copy it returns");
  std::string tn = Py_TYPE(o)->tp_name;
  if (Py_TYPE(o)->tp_flags & Py_TPFLAGS_HEAPTYPE)  // an instance of a Python class
    throw colors::TypeMismatchError("cannot store a private '" + tn +
                                    "' object in shared memory: call colors_shm.copy_to(obj) first (or create it "
                                    "with colors_shm.allocate) and store the shared object");
  throw colors::TypeMismatchError("cannot store an object of type '" + tn +
                                  "' in shared memory: only None, bool, int, float, str, bytes, bytearray "
                                  "and shared objects can be stored (copy_to() copies lists, tuples, dicts, sets and instances of Python classes)");
}

[[noreturn]] void int_overflow(PyObject* o) {
  std::string text;
  if (PyObject* r = PyObject_Repr(o)) {
    if (const char* s = PyUnicode_AsUTF8(r)) text = s;
    Py_DECREF(r);
  }
  PyErr_Clear();
  if (text.size() > 60) text = text.substr(0, 28) + "..." + text.substr(text.size() - 28);
  throw colors::OverflowError("int " + text +
                              " does not fit a shared integer (64-bit signed, -2**63 .. 2**63-1); "
                              "store it as a str or bytes instead");
}

}  // namespace

Ref* ref_of(py::handle obj) {
  PyObject* o = obj.ptr();
  if (g_proxy_base != nullptr && PyType_IsSubtype(Py_TYPE(o), reinterpret_cast<PyTypeObject*>(g_proxy_base))) {
    // The `_ref` slot itself (make_proxy fills it the same way): a subclass cannot move an
    // inherited slot, so the offset holds for every proxy class.
    PyObject* r = *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(o) + g_ref_offset);  // borrowed
    if (r == nullptr || Py_TYPE(r) != g_ref_type) return nullptr;
    return ref_in(r);
  }
  if (Py_TYPE(o) == g_ref_type) return ref_in(o);
  return nullptr;
}

std::atomic<std::uint64_t>* take_unshared_ref_root(PyObject* proxy) {
  PyObject* r = *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(proxy) + g_ref_offset);  // borrowed
  if (r == nullptr || Py_TYPE(r) != g_ref_type || Py_REFCNT(r) != 1) return nullptr;
  Ref* ref = ref_in(r);
  if (ref->gen != g_generation) return nullptr;
  auto* slot = static_cast<std::atomic<cd::Word>*>(
      std::visit([](auto& x) { return static_cast<colors::Value&>(x).take_root_slot(); }, ref->v));
  if (slot == nullptr) return nullptr;
  ref->gen = 0;  // every use raises NotAttachedError (Ref::check); its destructor finds no root
  return slot;
}

PyTypeObject* install_fast_methods(py::handle cls, PyMethodDef* methods, TypeKind kind) {
  auto* t = reinterpret_cast<PyTypeObject*>(cls.ptr());
  PyObject* registered = proxy_class_for(kind);
  if (registered == nullptr || cls.ptr() != registered)
    throw py::type_error("fast paths go on the registered proxy class of their kind only");
  for (PyMethodDef* d = methods; d->ml_name != nullptr; ++d) {
    py::object descr = py::reinterpret_steal<py::object>(PyDescr_NewMethod(t, d));
    if (!descr) throw py::error_already_set();
    if (PyObject_SetAttrString(cls.ptr(), d->ml_name, descr.ptr()) != 0) throw py::error_already_set();
  }
  return t;
}

void clear_identity_cache() {
  forget_user_proxies();
}

void check_storable(py::handle obj) {
  PyObject* o = obj.ptr();
  if (o == Py_None || PyBool_Check(o) || PyFloat_Check(o) || PyBytes_Check(o) || PyByteArray_Check(o)) return;
  if (PyUnicode_Check(o)) {
    // Its UTF-8 (CPython keeps it with the str, for the store that follows): a lone surrogate has none.
    if (PyUnicode_AsUTF8AndSize(o, nullptr) == nullptr) throw py::error_already_set();
    return;
  }
  if (PyLong_Check(o)) {
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow != 0) int_overflow(o);
    if (x == -1 && PyErr_Occurred()) throw py::error_already_set();
    return;
  }
  if (Ref* r = ref_of(obj)) {
    r->check();
    return;
  }
  if (user_value_of(obj, nullptr)) return;
  unstorable(obj);
}

colors::Value to_value(py::handle obj) {
  PyObject* o = obj.ptr();
  if (o == Py_None) return colors::Value();
  if (PyBool_Check(o)) return colors::Value(o == Py_True);
  if (PyLong_Check(o)) {
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow != 0) int_overflow(o);
    if (x == -1 && PyErr_Occurred()) throw py::error_already_set();
    ensure_attached();
    return colors::Value(x);
  }
  if (PyFloat_Check(o)) {
    ensure_attached();
    return colors::Value(PyFloat_AS_DOUBLE(o));
  }
  if (PyUnicode_Check(o)) {
    Py_ssize_t n = 0;
    const char* s = PyUnicode_AsUTF8AndSize(o, &n);
    if (s == nullptr) throw py::error_already_set();  // lone surrogates: UnicodeEncodeError
    ensure_attached();
    return colors::Value(std::string_view(s, static_cast<std::size_t>(n)));
  }
  if (PyBytes_Check(o)) {
    ensure_attached();
    return colors::new_binary(PyBytes_AS_STRING(o), static_cast<std::size_t>(PyBytes_GET_SIZE(o)));
  }
  if (PyByteArray_Check(o)) {
    ensure_attached();
    return colors::new_binary(PyByteArray_AS_STRING(o), static_cast<std::size_t>(PyByteArray_GET_SIZE(o)));
  }
  if (Ref* r = ref_of(obj)) {
    r->check();
    return r->value();
  }
  colors::Value uv;
  if (user_value_of(obj, &uv)) return uv;
  unstorable(obj);
}

py::object from_value(colors::Value&& v) {
  // A value read before Python code that detached (a loop making proxies of several values): its
  // word belongs to a closed attachment, maybe another server's segment now mapped at its address.
  if (!v.is_current()) throw colors::NotAttachedError("this value belongs to an attachment that was closed by detach()");
  TypeKind k = v.kind();
  switch (k) {
    case TypeKind::kNull: return py::none();
    case TypeKind::kInteger: return py::reinterpret_steal<py::object>(PyLong_FromLongLong(v.as_int()));
    case TypeKind::kFloat: return py::float_(v.as_float());
    case TypeKind::kBoolean: return py::bool_(v.as_bool());
    case TypeKind::kString: {
      std::string_view s = v.string_view();
      PyObject* u = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape");
      if (u == nullptr) throw py::error_already_set();
      return py::reinterpret_steal<py::object>(u);
    }
    case TypeKind::kBinary: {
      std::vector<std::uint8_t> b = v.as_bytes();
      return py::bytes(reinterpret_cast<const char*>(b.data()), b.size());
    }
    default: return wrap(std::move(v), k);
  }
}

// ---- copy_to ----

namespace {

// An instance of a private Python class (not a scalar, builtin container or shared proxy).
bool is_private_instance(PyObject* o) {
  if (o == Py_None || PyBool_Check(o) || PyLong_Check(o) || PyFloat_Check(o) || PyUnicode_Check(o) ||
      PyBytes_Check(o) || PyByteArray_Check(o))
    return false;
  if (!(Py_TYPE(o)->tp_flags & Py_TPFLAGS_HEAPTYPE)) return false;
  if (ref_of(o) != nullptr || user_value_of(o, nullptr)) return false;
  return true;
}

// Iterative deep copy: each private container or instance gets its (empty) shared copy when first
// met, is memoised by id() and queued; queued items are then filled. Sharing and cycles of the
// private graph are preserved, and deep graphs do not use the C stack.
//
// Works on raw words: every object it creates stays rooted by `roots_` (the one root its
// allocation returned) until the copy is done, and a scalar box made for a store is rooted in
// `temp_` until that store; so no word handled here can be collected under it.
//
// Python code may run in the middle of a copy (a property getter or the class spec of an instance,
// __getitem__/__iter__/__len__ of a list or set subclass) and may detach, or detach and attach
// again: the words held here then belong to a closed attachment (their roots are gone, the
// objects may be freed, the address range may be another server's segment). Invariant: every
// store into the heap and the final rooting happen after live() checked that the attachment
// generation is still the one the copy started in; Python code runs only inside convert() and
// the snapshot calls of fill(), all before the store that follows them.
class Copier {
 public:
  colors::Value run(py::handle root) {
    cd::Word result = convert(root);
    live();
    colors::Value out = colors::Value::from_raw(result);  // rooted by roots_/temp_ until here
    while (!work_.empty()) {
      Item it = std::move(work_.back());
      work_.pop_back();
      fill(it);
    }
    return out;
  }

 private:
  struct Item {
    py::object obj;                      // the private container or instance (strong ref while queued)
    cd::Word shared = 0;
    std::vector<py::object> values;      // instance: field values in layout order
    const UserLayout* layout = nullptr;  // instance: its shared layout
  };

  // Throws NotAttachedError when the attachment the copy started in was closed meanwhile.
  void live() const {
    if (g_generation != gen_ || cd::current_meta_or_null() == nullptr)
      throw colors::NotAttachedError("detach() ran during copy_to (in Python code the copy called); the copy was abandoned");
  }

  cd::Word keep(colors::Value&& v) {
    cd::Word w = v.raw();
    if (cd::is_ref(w)) roots_.push_back(std::move(v));
    return w;
  }
  cd::Word temp(colors::Value&& v) {
    cd::Word w = v.raw();
    if (cd::is_ref(w)) temp_.push_back(std::move(v));
    return w;
  }

  cd::Word convert(py::handle x) {
    PyObject* o = x.ptr();
    if (o == Py_None) return cd::kNull;
    if (PyBool_Check(o)) return cd::make_bool(o == Py_True);
    cd::Word number;
    colors::TypeKind number_kind;
    if (number_word(o, &number, &number_kind)) return number;
    // Strings and binaries are values: copied per occurrence, not memoised (their identity is
    // not observable through the heap; reading one gives a new Python object anyway).
    bool container = PyList_Check(o) || PyTuple_Check(o) || PyDict_Check(o) || PyAnySet_Check(o);
    bool user = !container && is_private_instance(o);
    if (!container && !user) return temp(to_value(x));
    auto found = memo_.find(o);
    if (found != memo_.end()) return found->second;
    cd::Word shared;
    if (user) {
      ensure_attached();
      Item it{py::reinterpret_borrow<py::object>(x), 0, {}, nullptr};
      it.layout = &instance_layout(o, &it.values);
      shared = it.shared = keep(colors::new_object(it.layout->cls));
      work_.push_back(std::move(it));
    } else {
      ensure_attached();
      std::size_t n = static_cast<std::size_t>(std::max<Py_ssize_t>(PyObject_Length(o), 0));
      if (PyList_Check(o) || PyTuple_Check(o)) shared = keep(colors::new_list(n));
      else if (is_sorted_dict(o)) shared = keep(colors::new_sorted_map());
      else if (PyDict_Check(o)) shared = keep(colors::new_map(n));
      else shared = keep(colors::new_set(n));
      work_.push_back({py::reinterpret_borrow<py::object>(x), shared, {}, nullptr});
    }
    keep_.push_back(py::reinterpret_borrow<py::object>(x));  // id() stays unique during the copy
    memo_.emplace(o, shared);
    return shared;
  }

  // A sortedcontainers.SortedDict (a dict subclass): copied into a sorted map.
  static bool is_sorted_dict(PyObject* o) {
    if (!PyDict_Check(o) || PyDict_CheckExact(o)) return false;
    PyTypeObject* t = Py_TYPE(o);
    if (std::string_view(t->tp_name) != "SortedDict") return false;  // a heap type's name is unqualified
    PyObject* mod = PyDict_GetItemString(t->tp_dict, "__module__");  // borrowed
    if (mod == nullptr || !PyUnicode_Check(mod)) return false;
    const char* name = PyUnicode_AsUTF8(mod);
    return name != nullptr && std::string_view(name).starts_with("sortedcontainers");
  }

  // The layout for instance `o` and its field values in layout order (unset fields: None).
  const UserLayout& instance_layout(PyObject* o, std::vector<py::object>* values) {
    PyTypeObject* t = Py_TYPE(o);
    if (t != last_type_) {
      last_type_ = t;
      last_layout_ = &user_layout(t, {});
    }
    const UserLayout* l = last_layout_;
    py::object dict;
    if (t->tp_dictoffset != 0) {
      PyObject* d = PyObject_GenericGetDict(o, nullptr);
      if (d == nullptr) PyErr_Clear();
      else dict = py::reinterpret_steal<py::object>(d);
    }
    values->clear();
    values->reserve(l->names.size());
    Py_ssize_t found = 0;  // declared fields found in the instance dict
    for (std::size_t i = 0; i < l->declared; ++i) {
      PyObject* v = dict ? PyDict_GetItemWithError(dict.ptr(), l->names[i].ptr()) : nullptr;
      if (v != nullptr) {
        ++found;
        values->push_back(py::reinterpret_borrow<py::object>(v));
        continue;
      }
      if (PyErr_Occurred()) throw py::error_already_set();
      PyObject* a = PyObject_GetAttr(o, l->names[i].ptr());  // slots, class defaults, properties
      if (a == nullptr) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) throw py::error_already_set();
        PyErr_Clear();
        values->push_back(py::none());
      } else {
        values->push_back(py::reinterpret_steal<py::object>(a));
      }
    }
    if (!dict || PyDict_GET_SIZE(dict.ptr()) == found) return *l;
    // The instance has attributes its class does not declare: they become fields too.
    std::vector<std::pair<std::string, colors::TypeKind>> extras;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(dict.ptr(), &pos, &k, &v)) {
      if (!PyUnicode_Check(k)) continue;
      bool declared = false;
      for (std::size_t n = 0; n < l->declared && !declared; ++n) {
        PyObject* name = l->names[n].ptr();
        declared = name == k || PyUnicode_Compare(k, name) == 0;
      }
      if (declared) continue;
      extras.emplace_back(py::str(k).cast<std::string>(), kind_for_value(v));
      values->push_back(py::reinterpret_borrow<py::object>(v));
    }
    return user_layout(t, extras);
  }

  void fill(Item& it) {
    PyObject* o = it.obj.ptr();
    cd::Metadata* m = cd::current_meta();
    if (it.layout != nullptr) {
      for (std::size_t i = 0; i < it.values.size(); ++i) {
        PyObject* v = it.values[i].ptr();
        const cd::FieldInfo* f = it.layout->infos[i];  // the object still has the layout's class
        cd::Word w;
        if (f->type == colors::TypeKind::kFloat && PyLong_Check(v) && !PyBool_Check(v)) {
          w = temp(colors::Value(int_for_float_field(v)));
        } else {
          w = convert(v);
        }
        live();
        cd::check_field_type(*f, w);
        // Inside a transaction a logged write, like the container fills below (libshared's
        // container functions log): a rollback undoes every write of the transaction, also those
        // that filled objects it made, so what a rolled-back copy_to returned is left empty.
        std::atomic<cd::Word>* slot = cd::field_slot(it.shared, *f);
        if (in_tx()) cd::write_slot(reinterpret_cast<const void*>(it.shared), slot, w);
        else cd::store_ref(slot, w);
        temp_.clear();
      }
    } else if (PyList_Check(o) || PyTuple_Check(o)) {
      // Index loop: converting an item never runs Python code, but stay safe if the list shrinks.
      for (Py_ssize_t i = 0; i < PySequence_Size(o); ++i) {
        py::object item = py::reinterpret_steal<py::object>(PySequence_GetItem(o, i));
        if (!item) throw py::error_already_set();
        cd::Word w = convert(item);
        live();
        cd::list_append(m, it.shared, w);
        temp_.clear();
      }
    } else if (PyDict_Check(o)) {
      py::object items = py::reinterpret_steal<py::object>(PyDict_Items(o));  // snapshot
      if (!items) throw py::error_already_set();
      for (py::handle kv : items) {
        cd::Word k = convert(PyTuple_GET_ITEM(kv.ptr(), 0));
        cd::Word v = convert(PyTuple_GET_ITEM(kv.ptr(), 1));
        live();
        if (cd::kind_of(it.shared) == TypeKind::kSortedMap) cd::sorted_put(m, it.shared, k, v);
        else cd::map_put(m, it.shared, k, v);
        temp_.clear();
      }
    } else {
      py::object snapshot = py::reinterpret_steal<py::object>(PySequence_List(o));
      if (!snapshot) throw py::error_already_set();
      for (py::handle k : snapshot) {
        cd::Word w = convert(k);
        live();
        cd::set_add(m, it.shared, w);
        temp_.clear();
      }
    }
  }

  PyTypeObject* last_type_ = nullptr;  // instance_layout's one-entry cache
  const UserLayout* last_layout_ = nullptr;
  std::unordered_map<PyObject*, cd::Word> memo_;
  std::vector<colors::Value> roots_;  // every object made by this copy
  std::vector<colors::Value> temp_;   // scalar boxes made for the store in progress
  std::vector<py::object> keep_;
  std::vector<Item> work_;
  std::uint64_t gen_ = g_generation;  // the attachment generation the copy started in
};

// ---- plain trees: copied inside a read scope ----
//
// A list, tuple or dict whose elements (values) are None, bool, exact int, exact float, exact str,
// exact bytes, and such lists, tuples and dicts, and sets and frozensets of those scalars; dict keys those
// scalars too; each container met once (no sharing, no cycle) and at most kPlainDepth deep: the
// shape of most data handed to copy_to (JSON's, and more). Converting it runs no Python code (exact
// types only: no __hash__, __eq__ or __iter__ of a user class), so it is built inside a read scope
// (colors.hpp, "allocation in a read scope"): each container born with its elements
// (new_list_scoped, new_hash_scoped, in the Copier's order of puts), strings and boxed numbers
// without a root each, one root for the result. The values are the Copier's: tuples become lists,
// strings are copied per occurrence. Instances of private classes are plain too when their
// attributes are exactly their class's declared fields, held in an instance dict of str keys, with
// plain values (a float field's int is left to the Copier, which converts it), the class's
// attribute lookup is the generic one (no __getattr__ or __getattribute__), and its layout is made
// (user_layout, Python code: made before the walk that relies on it, which then starts again).
// Anything else (sharing and cycles, which the Copier's memo keeps; bytearrays, other instances,
// proxies, subclasses, SortedDicts, ints beyond 64 bits, deeper trees, more objects than a scope
// should hold the collector for), a transaction (no scope inside one), a full heap (a scope cannot
// wait for the collector), a value a field's type refuses and a string that does not encode take
// the Copier, which raises what it raises.
// Invariant: no Python code runs from the start of the walk that found the tree plain to the end
// of its build (exact types only; Python's cyclic GC, whose finalizers could change the tree, is
// off meanwhile, since materialising an instance's dict allocates).
constexpr int kPlainDepth = 64;

// The instances of a plain tree: each one's layout and where its field values start in `values`
// (in layout order, read once, by the walk; borrowed from the instance dicts, held in `dicts`).
struct PlainInstance {
  const UserLayout* layout;
  std::size_t first;
};
struct PlainInstances {
  std::unordered_map<PyObject*, PlainInstance> of;
  std::vector<PyObject*> values;
  std::vector<py::object> dicts;
  void clear() {
    of.clear();
    values.clear();
    dicts.clear();
  }
};

// Why an instance is not plain: no layout made yet for its class (`unmade` says which class), or
// anything else.
enum class InstanceVerdict { kPlain, kNotPlain, kNoLayout };

// Whether `o` is a plain instance (see above); if so it is recorded in `out`, its field values
// appended to out.values. REQUIRES: Python's cyclic GC off (the dict may be made here).
InstanceVerdict plain_instance(PyObject* o, PlainInstances& out) {
  // What the Copier copies as an instance: a container subclass is a container to it.
  if (PyList_Check(o) || PyTuple_Check(o) || PyDict_Check(o) || PyAnySet_Check(o) || !is_private_instance(o))
    return InstanceVerdict::kNotPlain;
  PyTypeObject* t = Py_TYPE(o);
  if (t->tp_getattro != PyObject_GenericGetAttr || t->tp_dictoffset == 0) return InstanceVerdict::kNotPlain;
  const UserLayout* l = cached_user_layout(t);
  if (l == nullptr) return InstanceVerdict::kNoLayout;
  PyObject* d = PyObject_GenericGetDict(o, nullptr);
  if (d == nullptr) {
    PyErr_Clear();
    return InstanceVerdict::kNotPlain;
  }
  py::object dict = py::reinterpret_steal<py::object>(d);
  if (!PyDict_CheckExact(d) || PyDict_GET_SIZE(d) != static_cast<Py_ssize_t>(l->declared)) return InstanceVerdict::kNotPlain;
  Py_ssize_t pos = 0;
  PyObject *k, *v;
  while (PyDict_Next(d, &pos, &k, &v))  // str keys only: the lookups below then compare no user objects
    if (!PyUnicode_CheckExact(k)) return InstanceVerdict::kNotPlain;
  const std::size_t first = out.values.size();
  for (std::size_t i = 0; i < l->declared; ++i) {
    PyObject* value = PyDict_GetItemWithError(d, l->names[i].ptr());
    if (value == nullptr) {
      PyErr_Clear();
      return InstanceVerdict::kNotPlain;  // unset, a class default or a property: the Copier's getattr
    }
    if (l->infos[i]->type == colors::TypeKind::kFloat && PyLong_Check(value) && !PyBool_Check(value))
      return InstanceVerdict::kNotPlain;  // the Copier converts it (int_for_float_field)
    out.values.push_back(value);
  }
  out.of.emplace(o, PlainInstance{l, first});
  out.dicts.push_back(std::move(dict));
  return InstanceVerdict::kPlain;
}

// A plain dict key or set element: None, bool, exact int, float or str.
bool plain_scalar(PyObject* o) {
  return o == Py_None || PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o) || PyUnicode_CheckExact(o);
}

// Whether `root` is a plain tree of at most `max_objects` allocations (containers, their tables,
// instances, strings, boxed numbers), its instances in `instances`. Every value counts as one,
// unboxed or not, as C++'s copy_to counts them: that bounds both the build's scope and this walk,
// which a value met late can make wasted. An instance whose class has no layout yet ends the walk
// with false and its class in `*unmade`. REQUIRES: Python's cyclic GC off.
bool plain_tree(PyObject* root, std::size_t max_objects, PlainInstances& instances, PyTypeObject** unmade) {
  instances.clear();
  std::vector<std::pair<PyObject*, int>> todo{{root, 0}};
  std::unordered_set<PyObject*> containers;  // met once each
  std::size_t objects = 0;
  // Whether n more values would pass the bound, counting those still to visit: nothing is queued
  // past it, so the walk stays O(max_objects) however large the data.
  auto too_many = [&](Py_ssize_t n) { return objects + todo.size() + static_cast<std::size_t>(n) > max_objects; };
  while (!todo.empty()) {
    auto [o, depth] = todo.back();
    todo.pop_back();
    if (++objects > max_objects) return false;
    if (o == Py_None || PyBool_Check(o) || PyFloat_CheckExact(o) || PyUnicode_CheckExact(o) || PyBytes_CheckExact(o))
      continue;
    if (PyLong_CheckExact(o)) {
      int overflow = 0;
      (void)PyLong_AsLongLongAndOverflow(o, &overflow);
      if (overflow != 0) return false;  // the Copier raises the overflow
    } else if (PyList_CheckExact(o) || PyTuple_CheckExact(o)) {
      if (depth >= kPlainDepth || !containers.insert(o).second) return false;
      Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
      if (too_many(n)) return false;
      PyObject** items = PySequence_Fast_ITEMS(o);
      for (Py_ssize_t i = 0; i < n; ++i) todo.emplace_back(items[i], depth + 1);
    } else if (PyDict_CheckExact(o)) {
      if (depth >= kPlainDepth || !containers.insert(o).second || too_many(2 * PyDict_GET_SIZE(o))) return false;
      Py_ssize_t pos = 0;
      PyObject *k, *v;
      while (PyDict_Next(o, &pos, &k, &v)) {
        if (!plain_scalar(k)) return false;
        todo.emplace_back(k, depth + 1);
        todo.emplace_back(v, depth + 1);
      }
      ++objects;  // its table
    } else if (PySet_CheckExact(o) || PyFrozenSet_CheckExact(o)) {
      if (depth >= kPlainDepth || !containers.insert(o).second || too_many(PySet_GET_SIZE(o))) return false;
      Py_ssize_t pos = 0;
      PyObject* k;
      Py_hash_t h;
      while (_PySet_NextEntry(o, &pos, &k, &h)) {
        if (!plain_scalar(k)) return false;
        todo.emplace_back(k, depth + 1);
      }
      ++objects;  // its table
    } else {
      if (depth >= kPlainDepth || !containers.insert(o).second) return false;
      const std::size_t first = instances.values.size();
      switch (plain_instance(o, instances)) {
        case InstanceVerdict::kPlain: break;
        case InstanceVerdict::kNoLayout: *unmade = Py_TYPE(o); return false;
        case InstanceVerdict::kNotPlain: return false;
      }
      const std::size_t n = instances.values.size() - first;
      if (too_many(static_cast<Py_ssize_t>(n))) return false;
      for (std::size_t i = first; i < first + n; ++i) todo.emplace_back(instances.values[i], depth + 1);
    }
  }
  return objects <= max_objects;
}

struct NotEncodable {};  // a str with lone surrogates: the Copier raises its UnicodeEncodeError

// The plain tree `o` (plain_tree said so, with `instances`) built in the current read scope.
cd::Word build_plain(cd::Metadata* m, PyObject* o, const PlainInstances& instances) {
  if (o == Py_None) return cd::kNull;
  if (PyBool_Check(o)) return cd::make_bool(o == Py_True);
  if (PyLong_CheckExact(o)) {
    long long x = PyLong_AsLongLong(o);
    return cd::fits_small(x) ? cd::make_small(x) : cd::new_integer_scoped(m, x);
  }
  if (PyFloat_CheckExact(o)) {
    double d = PyFloat_AS_DOUBLE(o);
    return cd::fits_small_float(d) ? cd::make_small_float(d) : cd::new_float_scoped(m, d);
  }
  if (PyUnicode_CheckExact(o)) {
    Py_ssize_t n = 0;
    const char* s = PyUnicode_AsUTF8AndSize(o, &n);
    if (s == nullptr) throw NotEncodable{};
    return cd::new_string_scoped(m, std::string_view(s, static_cast<std::size_t>(n)));
  }
  if (PyBytes_CheckExact(o)) return cd::new_binary_scoped(m, PyBytes_AS_STRING(o), static_cast<std::size_t>(PyBytes_GET_SIZE(o)));
  if (PyDict_CheckExact(o)) {  // the Copier's order: the dict's (PyDict_Items)
    std::vector<cd::Word> keys, values;
    keys.reserve(static_cast<std::size_t>(PyDict_GET_SIZE(o)));
    values.reserve(keys.capacity());
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(o, &pos, &k, &v)) {
      keys.push_back(build_plain(m, k, instances));
      values.push_back(build_plain(m, v, instances));
    }
    return cd::new_hash_scoped(m, colors::TypeKind::kMap, keys.data(), values.data(), keys.size());
  }
  if (PyAnySet_CheckExact(o)) {  // the Copier's order: the set's iteration order (PySequence_List)
    std::vector<cd::Word> keys;
    keys.reserve(static_cast<std::size_t>(PySet_GET_SIZE(o)));
    Py_ssize_t pos = 0;
    PyObject* k;
    Py_hash_t h;
    while (_PySet_NextEntry(o, &pos, &k, &h)) keys.push_back(build_plain(m, k, instances));
    return cd::new_hash_scoped(m, colors::TypeKind::kSet, keys.data(), nullptr, keys.size());
  }
  if (PyList_CheckExact(o) || PyTuple_CheckExact(o)) {
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    PyObject** items = PySequence_Fast_ITEMS(o);
    std::vector<cd::Word> words(static_cast<std::size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) words[static_cast<std::size_t>(i)] = build_plain(m, items[i], instances);
    return cd::new_list_scoped(m, words.data(), words.size());
  }
  // An instance: its fields in layout order, each checked as the Copier's fill checks it.
  const PlainInstance& in = instances.of.at(o);
  const UserLayout& l = *in.layout;
  std::vector<cd::SlotInit> init;
  init.reserve(l.declared);
  for (std::size_t i = 0; i < l.declared; ++i) {
    const cd::Word w = build_plain(m, instances.values[in.first + i], instances);
    cd::check_field_type(*l.infos[i], w);  // TypeMismatchError: the Copier raises it
    init.push_back({l.infos[i]->slot, w});
  }
  // The record is only named by the new object (its class word), never changed.
  return cd::new_user_object_scoped(m, const_cast<cd::ClassRecord*>(l.cls.record()), init.data(), init.size());
}

// Python's cyclic GC off while it lives (as it was before otherwise).
struct CyclicGcOff {
  CyclicGcOff() : was_on(PyGC_Disable() != 0) {}
  ~CyclicGcOff() {
    if (was_on) PyGC_Enable();
  }
  bool was_on;
};

// At most this many classes get their layouts made for one copy_to before it gives up the walk.
constexpr int kLayoutsPerCopy = 8;

// copy_to calls built in a read scope so far (colors_shm._scoped_copy_count: tests, diagnostics).
std::uint64_t g_scoped_copies = 0;

// copy_to of a plain tree in a read scope, or nullopt: the Copier copies it.
std::optional<colors::Value> copy_plain(PyObject* o) {
  if (PyLong_Check(o) || PyFloat_Check(o) || PyUnicode_Check(o) || PyBytes_Check(o) || o == Py_None || in_tx())
    return std::nullopt;
  PlainInstances instances;
  for (int made = 0;; ++made) {
    PyTypeObject* unmade = nullptr;
    {
      CyclicGcOff gc_off;
      if (plain_tree(o, colors::detail::kScopedCopyMax, instances, &unmade)) {
        try {
          colors::ReadScope scope;
          const cd::Word w = build_plain(cd::current_meta(), o, instances);
          cd::Rooted r = cd::promote_borrowed(w);
          ++g_scoped_copies;
          return colors::Value::adopt_root(w, r.take());
        } catch (const colors::OutOfMemoryError&) {
          return std::nullopt;
        } catch (const colors::TypeMismatchError&) {
          return std::nullopt;
        } catch (const NotEncodable&) {
          PyErr_Clear();
          return std::nullopt;
        }
      }
    }
    if (unmade == nullptr || made == kLayoutsPerCopy) return std::nullopt;
    // Python code (the class's field spec) may run here, so the walk starts again after it.
    instances.clear();
    // An error there is the Copier's to raise, in its order; KeyboardInterrupt and the like are not.
    try {
      (void)user_layout(unmade, {});
    } catch (py::error_already_set& e) {
      if (!e.matches(PyExc_Exception)) throw;
      return std::nullopt;
    } catch (const colors::Error&) {
      return std::nullopt;
    }
  }
}

}  // namespace

colors::Value copy_in(py::handle obj) {
  ensure_attached();
  if (std::optional<colors::Value> plain = copy_plain(obj.ptr())) return std::move(*plain);
  return Copier().run(obj);
}

void init_values(py::module_& m) {
  g_ref_attr = PyUnicode_InternFromString("_ref");
  m.def("_scoped_copy_count", [] { return g_scoped_copies; });

  init_ref_type(m);

  m.def(
      "_register_proxies",
      [](py::object base, py::object list_cls, py::object dict_cls, py::object set_cls, py::object object_cls) {
        // Once, by colors_shm._proxies at import; everything is checked before anything changes.
        if (g_proxy_base != nullptr) throw colors::InvalidArgumentError("_register_proxies: already registered");
        for (PyObject* c : {base.ptr(), list_cls.ptr(), dict_cls.ptr(), set_cls.ptr(), object_cls.ptr()}) {
          if (!PyType_Check(c) || !(reinterpret_cast<PyTypeObject*>(c)->tp_flags & Py_TPFLAGS_HEAPTYPE) ||
              !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(c), reinterpret_cast<PyTypeObject*>(base.ptr())))
            throw py::type_error("_register_proxies takes SharedProxy and four classes deriving from it");
        }
        auto* bt = reinterpret_cast<PyTypeObject*>(base.ptr());
        auto own_slot = [bt](const char* name) -> Py_ssize_t {
          PyObject* d = PyDict_GetItemString(bt->tp_dict, name);  // borrowed
          if (d == nullptr || Py_TYPE(d) != &PyMemberDescr_Type ||
              reinterpret_cast<PyMemberDescrObject*>(d)->d_member->type != T_OBJECT_EX ||
              reinterpret_cast<PyMemberDescrObject*>(d)->d_common.d_type != bt)
            throw colors::InvalidArgumentError(std::string("_register_proxies: SharedProxy lacks its ") + name + " slot");
          return reinterpret_cast<PyMemberDescrObject*>(d)->d_member->offset;
        };
        Py_ssize_t ref_off = own_slot("_ref");
        for (PyObject* c : {base.ptr(), list_cls.ptr(), dict_cls.ptr(), set_cls.ptr(), object_cls.ptr()})
          if (reinterpret_cast<PyTypeObject*>(c)->tp_dictoffset != 0)
            throw py::type_error("_register_proxies: proxy classes have no __dict__ (make_proxy relies on it)");
        // `_ref` read-only: Python code cannot replace a proxy's _Ref (nor make a cycle through it).
        static PyMemberDef ref_member = {"_ref", T_OBJECT_EX, ref_off, READONLY,
                                         "The GC root holding this proxy's shared object (internal)."};
        py::object ro = py::reinterpret_steal<py::object>(PyDescr_NewMember(bt, &ref_member));
        if (!ro || PyObject_SetAttrString(base.ptr(), "_ref", ro.ptr()) != 0) throw py::error_already_set();
        Py_ssize_t handle_off = own_slot("_colors_handle");
        // The handle slot is hidden (its descriptor deleted, and skipped by tp_traverse): Python
        // code can neither read nor replace nor reach a proxy's handle, so the handle dies exactly
        // when its proxy does.
        hide_handle_slot(bt, handle_off);
        for (PyObject* c : {list_cls.ptr(), dict_cls.ptr(), set_cls.ptr(), object_cls.ptr()})
          hide_handle_slot(reinterpret_cast<PyTypeObject*>(c), -1);
        if (PyObject_DelAttrString(base.ptr(), "_colors_handle") != 0) throw py::error_already_set();
        g_ref_offset = ref_off;
        g_handle_offset = handle_off;
        g_proxy_base = base.release().ptr();
        g_list_cls = list_cls.release().ptr();
        g_dict_cls = dict_cls.release().ptr();
        g_set_cls = set_cls.release().ptr();
        g_object_cls = object_cls.release().ptr();
      },
      "Registers the pure-Python proxy classes (called once by colors_shm._proxies).");
  m.def(
      "_register_sorted_proxy",
      [](py::object sorted_cls) {
        if (g_proxy_base == nullptr || g_sorted_cls != nullptr)
          throw colors::InvalidArgumentError("_register_sorted_proxy: once, after _register_proxies");
        auto* c = reinterpret_cast<PyTypeObject*>(sorted_cls.ptr());
        if (!PyType_Check(sorted_cls.ptr()) || !(c->tp_flags & Py_TPFLAGS_HEAPTYPE) ||
            !PyType_IsSubtype(c, reinterpret_cast<PyTypeObject*>(g_proxy_base)))
          throw py::type_error("_register_sorted_proxy takes a class deriving from SharedProxy");
        if (c->tp_dictoffset != 0) throw py::type_error("_register_sorted_proxy: proxy classes have no __dict__");
        hide_handle_slot(c, -1);
        g_sorted_cls = sorted_cls.release().ptr();
      },
      "Registers the proxy class of sorted maps (called once by colors_shm._proxies).");

  m.def(
      "copy_to",
      [](py::handle obj) { return from_value(copy_in(obj)); },
      py::arg("obj"));

  m.def(
      "allocate",
      [](py::handle cls, std::int64_t n) -> py::object {
        if (n < 0) throw colors::InvalidArgumentError("allocate(): n must be >= 0");
        ensure_attached();
        PyObject* c = cls.ptr();
        std::size_t un = static_cast<std::size_t>(n);
        if (c == reinterpret_cast<PyObject*>(&PyList_Type) || c == reinterpret_cast<PyObject*>(&PyTuple_Type))
          return from_value(colors::new_list(un));
        if (c == reinterpret_cast<PyObject*>(&PyDict_Type)) return from_value(colors::new_map(un));
        if (c == reinterpret_cast<PyObject*>(&PySet_Type) || c == reinterpret_cast<PyObject*>(&PyFrozenSet_Type))
          return from_value(colors::new_set(un));
        if (c == reinterpret_cast<PyObject*>(&PyBytes_Type) || c == reinterpret_cast<PyObject*>(&PyByteArray_Type)) {
          std::vector<std::uint8_t> zeros(un, 0);
          return from_value(colors::new_binary(zeros));
        }
        throw colors::TypeMismatchError("allocate() takes list, dict, set or bytes (user classes: not yet), not " +
                                        std::string(py::str(cls)));
      },
      py::arg("cls"), py::arg("n") = 0);

  m.def("is_shared", [](py::handle obj) {
    if (ref_of(obj) != nullptr) return true;
    try {
      return user_value_of(obj, nullptr);
    } catch (const colors::NotAttachedError&) {
      return true;  // a proxy of a shared object, from a closed attachment
    }
  }, py::arg("obj"));
  m.def("check_storable", [](py::handle obj) { check_storable(obj); }, py::arg("obj"));
  m.def("_roundtrip", [](py::handle obj) { return from_value(to_value(obj)); }, py::arg("obj"),
        "Stores a scalar into shared memory and reads it back (tests).");
  m.def("_identity_cache_size", [] { return user_cache_size(); });
}

}  // namespace colors_py
