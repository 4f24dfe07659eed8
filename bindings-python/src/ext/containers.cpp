// The primitive operations of shared lists, maps, sets and user objects, as methods of _Ref.
// The pure-Python proxies (_proxies.py) build the full collections.abc behaviour on these.
#include "common.hpp"
#include "popped.hpp"
#include "ref_object.hpp"
#include "containers.hpp"
#include "read_memo.hpp"
#include "tx_state.hpp"
#include "objects.hpp"
#include "read_scope.hpp"
#include "roots.hpp"
#include "segment.hpp"

namespace colors_py {

namespace cd = colors::detail;

namespace {

[[noreturn]] void key_error(py::handle key) {
  PyErr_SetObject(PyExc_KeyError, key.ptr());
  throw py::error_already_set();
}

py::list to_list(std::vector<colors::Value>&& items) {
  Unfilled<py::list> out(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) out.set(i, from_value(std::move(items[i])));
  return out.done();
}

// An unboxed word (small integer, null, boolean, immediate float) as a new Python object in *out
// (nullptr with the Python error set if making it failed); false for any other word.
bool unboxed_item(cd::Word w, PyObject** out) {
  if (cd::is_small_int(w)) {
    *out = PyLong_FromLongLong(cd::small_value(w));
  } else if (w == cd::kNull) {
    *out = Py_NewRef(Py_None);
  } else if (cd::is_bool(w)) {
    *out = PyBool_FromLong(cd::bool_value(w));
  } else if (cd::is_small_float(w)) {
    *out = PyFloat_FromDouble(cd::small_float_value(w));
  } else {
    return false;
  }
  return true;
}

// Inside a read scope: the elements at one instant read borrowed (the list's seqlock, no root
// each); user objects get borrowed proxies, other references a root (promote_borrowed).
py::list snapshot_borrowed(colors::List& l) {
  const std::uint64_t epoch = read_scope_epoch();
  std::vector<cd::Word> words;
  std::size_t size = 0;
  const std::size_t k = cd::list_read_borrowed(l.raw(), 0, SIZE_MAX, size, [&](std::size_t i, cd::Word w) {
    if (i >= words.size()) words.resize(i + 1);
    words[i] = w;
  });
  words.resize(k);
  Unfilled<py::list> out(k);
  for (std::size_t i = 0; i < k; ++i) {
    const cd::Word w = words[i];
    PyObject* item;
    if (!unboxed_item(w, &item)) {
      // The words are kept by the scope they were read in; making an earlier element's proxy ran
      // Python code, which may have ended it.
      require_read_scope_epoch(epoch);
      bool generic = true;
      item = cd::class_of(w)->kind == colors::TypeKind::kObject ? borrowed_user_proxy(w, &generic) : nullptr;
      if (generic) {
        cd::Rooted r = cd::promote_borrowed(w);
        item = from_rooted(w, r.take()).release().ptr();
      }
      // Making a proxy may run Python code (a class resolver), which may detach.
      if (!l.is_current()) {
        Py_XDECREF(item);
        throw colors::NotAttachedError("detach() ran while the list was being read");
      }
    }
    out.set(i, item);
  }
  return out.done();
}

// A new Python list of the k items (new references, all stolen: dropped if the list cannot be
// made). Its allocation may run Python code (a collection): the caller holds everything it needs.
PyObject* list_of_held(PyObject* const* items, std::size_t k) {
  PyObject* out = PyList_New(static_cast<Py_ssize_t>(k));
  if (out == nullptr) {
    for (std::size_t j = 0; j < k; ++j) Py_DECREF(items[j]);
    throw py::error_already_set();
  }
  for (std::size_t i = 0; i < k; ++i) PyList_SET_ITEM(out, static_cast<Py_ssize_t>(i), items[i]);
  return out;
}

// Outside a read scope: the elements at one instant, read through the list's seqlock without a
// root each, when every element is unboxed or the object of a live proxy (the proxy cache keeps
// the proxies of lists read before); nullptr when one is not, for the rooted snapshot to read.
// Why a live proxy's entry proves the word is its object: the GIL is held from before the read
// until every proxy found is referenced (pass 1 runs no Python code, so no proxy dies meanwhile),
// and a proxy in a table holds a root, so at the instant the list held `w` the
// proxy's object was alive at `w` and was that element. Words not yet checked are only compared.
// memo (outside transactions only): remembers the elements in it (read_memo.hpp) when they were
// read between two equal even versions of the list and the list is not too long.
PyObject* snapshot_live(colors::List& l, std::unique_ptr<ListMemo>* memo = nullptr) {
  constexpr std::size_t kInline = 16;
  cd::Word inline_words[kInline];
  std::vector<cd::Word> more;
  std::size_t size = 0;
  const auto* lo = reinterpret_cast<const cd::ListObject*>(l.raw());
  std::uint64_t v0 = 1;
  if (memo != nullptr) cd::list_begin_read(lo, v0);  // v0 stays odd if a change is under way
  const std::size_t k = cd::list_read_borrowed(l.raw(), 0, SIZE_MAX, size, [&](std::size_t i, cd::Word w) {
    if (i < kInline) {
      inline_words[i] = w;
    } else {
      if (i - kInline >= more.size()) more.resize(i - kInline + 1);
      more[i - kInline] = w;
    }
  });
  auto word = [&](std::size_t i) { return i < kInline ? inline_words[i] : more[i - kInline]; };
  // Pass 1: every item as a new reference: unboxed words decoded (ints and floats are no GC
  // objects: their allocation runs no Python code), references as their live proxies.
  std::vector<PyObject*> items(k, nullptr);
  auto drop = [&](std::size_t n) {
    for (std::size_t j = 0; j < n; ++j) Py_XDECREF(items[j]);
  };
  for (std::size_t i = 0; i < k; ++i) {
    const cd::Word w = word(i);
    PyObject* item = nullptr;
    if (cd::is_ref(w)) {
      item = live_user_proxy(w);
      if (item == nullptr) item = live_other_proxy(w);
      if (item == nullptr) {  // no live proxy: the rooted snapshot makes one
        drop(i);
        return nullptr;
      }
    } else if (!unboxed_item(w, &item) || item == nullptr) {
      drop(i);
      if (item == nullptr && PyErr_Occurred()) throw py::error_already_set();
      return nullptr;
    }
    items[i] = item;
  }
  // Pass 2: the Python list (a GC allocation, which may run Python code: everything is held).
  PyObject* out = list_of_held(items.data(), k);
  // Every reference among the items was its word's table entry in pass 1 and is held since (by
  // `out` now), so it still is: the memo takes the removal count as of now. The version bracket
  // (v0 before the read, unchanged after it) says the words are the list's at version v0.
  if (memo != nullptr && (v0 & 1) == 0 && k <= ListMemo::kMaxItems && cd::list_still_unchanged(lo, v0)) {
    try {
      if (*memo == nullptr) *memo = std::make_unique<ListMemo>();
      ListMemo& m = **memo;
      m.version = 1;  // no memo until it is whole
      m.words.resize(k);
      m.proxies.resize(k);
      for (std::size_t i = 0; i < k; ++i) {
        m.words[i] = word(i);
        m.proxies[i] = cd::is_ref(word(i)) ? items[i] : nullptr;
      }
      m.removals = g_identity_removals;
      m.gen = g_generation;
      m.version = v0;
    } catch (const std::bad_alloc&) {
      // No memo: only an economy.
    }
  }
  return out;
}

// The elements of the list `l` as `m` remembers them (a new Python list), or nullptr when the
// memo does not hold (read_memo.hpp). REQUIRES: outside transactions.
PyObject* snapshot_remembered(colors::List& l, const ListMemo* m) {
  if (m == nullptr) return nullptr;
  std::uint64_t v = 0;
  if (!cd::list_begin_read(reinterpret_cast<const cd::ListObject*>(l.raw()), v) || !m->holds(v)) return nullptr;
  // At the version load the list held m->words, and each proxy is still its word's table entry:
  // take them all (no Python code runs until the list is made, so none can die meanwhile).
  const std::size_t k = m->words.size();
  constexpr std::size_t kInline = 16;
  PyObject* inline_items[kInline];
  std::vector<PyObject*> more;
  PyObject** items = inline_items;
  if (k > kInline) {
    more.resize(k);
    items = more.data();
  }
  auto drop = [&](std::size_t n) {
    for (std::size_t j = 0; j < n; ++j) Py_DECREF(items[j]);
  };
  for (std::size_t i = 0; i < k; ++i) {
    PyObject* p = m->proxies[i];
    PyObject* item = nullptr;
    if (p != nullptr) {
      if (Py_REFCNT(p) <= 0) {  // dying: its erase is still to come
        drop(i);
        return nullptr;
      }
      item = Py_NewRef(p);
      prefetch_object(m->words[i]);
    } else if (!unboxed_item(m->words[i], &item) || item == nullptr) {
      drop(i);
      if (item == nullptr && PyErr_Occurred()) throw py::error_already_set();
      return nullptr;
    }
    items[i] = item;
  }
  return list_of_held(items, k);
}

// The list's elements at one instant, as Python objects: snapshot_live when it can; else one
// locked snapshot (containers.hpp), whose unboxed values are decoded in place and whose user
// objects with a live proxy reuse it, so only the other references keep the root the snapshot
// took. Inside a read scope: snapshot_borrowed. for_update: a snapshot whose result the caller
// writes back (sort, reverse, slice assignment), taken under the lock once no transaction holds
// the list (cd::TxAccess::kReadForUpdate).
// for_update: read once no transaction of another thread holds the list (TxAccess::kReadForUpdate);
// `version` then receives the list's version for list_replace_if.
// memo: the list proxy's memo (read_memo.hpp), used outside transactions, made outside them and
// outside read scopes; or null.
py::list snapshot(colors::List& l, bool for_update = false, std::uint64_t* version = nullptr,
                  std::unique_ptr<ListMemo>* memo = nullptr) {
  if (!for_update) {
    // A memo made outside a scope also serves inside one: its proxies are the live ones, which a
    // scope's read returns too (user_proxy looks for the live proxy before lending one).
    const bool memo_ok = memo != nullptr && !in_tx();
    if (memo_ok) {
      if (PyObject* remembered = snapshot_remembered(l, memo->get())) return py::reinterpret_steal<py::list>(remembered);
    }
    if (in_read_scope_here()) return snapshot_borrowed(l);
    if (PyObject* fast = snapshot_live(l, memo_ok ? memo : nullptr)) return py::reinterpret_steal<py::list>(fast);
  }
  std::vector<cd::Rooted> items =
      cd::list_snapshot(l.raw(), for_update ? cd::TxAccess::kReadForUpdate : cd::TxAccess::kRead, version);
  Unfilled<py::list> out(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    cd::Word w = items[i].word();
    PyObject* item;
    if (unboxed_item(w, &item)) {
      // decoded in place
    } else if ((item = live_user_proxy(w)) != nullptr) {
      items[i].reset();  // the live proxy holds its own root
    } else {
      item = from_rooted(w, items[i].take(), /*absent=*/true).release().ptr();
      // Making a proxy may run Python code (a class resolver), which may detach: the rest of the
      // snapshot then holds words of a closed attachment.
      if (!l.is_current()) {
        Py_XDECREF(item);
        throw colors::NotAttachedError("detach() ran while the list was being read");
      }
    }
    out.set(i, item);
  }
  return out.done();
}

std::vector<colors::Value> to_values(py::handle items) {
  std::vector<colors::Value> vals;
  for (py::handle x : items) check_storable(x);
  for (py::handle x : items) vals.push_back(to_value(x));
  return vals;
}

std::vector<cd::Word> words_of(const std::vector<colors::Value>& vals) {
  std::vector<cd::Word> w;
  w.reserve(vals.size());
  for (const colors::Value& v : vals) w.push_back(v.raw());
  return w;
}

// ---- list proxies' hot methods ----
// SharedList's __len__, __iter__ and __getitem__ as C methods of the proxy class itself: no
// Python frame and no pybind11 dispatch between `for x in lst` and the snapshot. Same semantics as
// the primitives they replace (one atomic read each).

colors::List& list_of_proxy(PyObject* self) {
  Ref* r = ref_of(self);
  if (r == nullptr) throw colors::TypeMismatchError("not a shared list proxy");
  return r->list();
}

Py_ssize_t list_len(PyObject* self) {
  try {
    return static_cast<Py_ssize_t>(list_of_proxy(self).size());
  } catch (...) {
    set_python_error();
    return -1;
  }
}

PyObject* list_len_method(PyObject* self, PyObject*) {
  const Py_ssize_t n = list_len(self);
  return n < 0 ? nullptr : PyLong_FromSsize_t(n);
}

// A snapshot: the elements at the instant iteration starts; changes made meanwhile, by this or
// any other thread or process, are not seen.
PyObject* list_iter(PyObject* self) {
  try {
    Ref* r = ref_of(self);
    if (r == nullptr) throw colors::TypeMismatchError("not a shared list proxy");
    py::list items = snapshot(r->list(), false, nullptr, &r->memo);
    return PyObject_GetIter(items.ptr());
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

PyObject* list_iter_method(PyObject* self, PyObject*) { return list_iter(self); }

// lst[i] (negative positions resolved atomically) or lst[slice] (a private list of a snapshot).
PyObject* list_getitem(PyObject* self, PyObject* index) {
  try {
    colors::List& l = list_of_proxy(self);
    if (PySlice_Check(index)) {
      py::list items = snapshot(l);
      return PyObject_GetItem(items.ptr(), index);
    }
    const Py_ssize_t i = PyNumber_AsSsize_t(index, PyExc_IndexError);
    if (i == -1 && PyErr_Occurred()) {
      if (PyErr_ExceptionMatches(PyExc_IndexError)) {
        PyErr_SetString(PyExc_IndexError, "list index out of range");
      }
      return nullptr;
    }
    colors::List& again = list_of_proxy(self);  // converting the index may have run Python code
    return py_of(cd::list_load_signed(again.raw(), i)).release().ptr();
  } catch (const colors::IndexError&) {
    PyErr_SetString(PyExc_IndexError, "list index out of range");
    return nullptr;
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

PyMethodDef g_list_fast_methods[] = {
    {"__len__", list_len_method, METH_NOARGS, "len(lst): the number of elements."},
    {"__iter__", list_iter_method, METH_NOARGS,
     "iter(lst): over a snapshot (the elements at the instant iteration starts)."},
    {"__getitem__", list_getitem, METH_O,
     "lst[i] (negative positions resolved atomically), or lst[a:b:c]: a private list of a snapshot."},
    {nullptr, nullptr, 0, nullptr},
};

// The user object of a generic SharedObject proxy.
colors::Object obj(Ref& r) {
  r.check();
  if (r.kind != colors::TypeKind::kObject) throw colors::TypeMismatchError("not a shared user object");
  return colors::Object(r.value());
}

}  // namespace

// Every primitive below is one container operation (libshared/src/containers.hpp): atomic across
// threads and processes. List positions are Python's (negative from the end), resolved under the
// container's lock. Python values are converted before the lock is taken, and before the
// container's word is fetched (r.list(), r.map(), r.set() check the attachment): converting may
// run Python code, which may detach and attach again.
void init_containers(py::module_& m) {
  def_ref_method("__len__", +[](Ref& r) -> std::size_t {
    r.check();
    switch (r.kind) {
      case colors::TypeKind::kList: return r.list().size();
      case colors::TypeKind::kMap: return r.map().size();
      case colors::TypeKind::kSet: return r.set().size();
      default: throw colors::TypeMismatchError("this shared object has no length");
    }
  });
  def_ref_method("clear", +[](Ref& r) {
    r.check();
    switch (r.kind) {
      case colors::TypeKind::kList: r.list().clear(); break;
      case colors::TypeKind::kMap: r.map().clear(); break;
      case colors::TypeKind::kSet: r.set().clear(); break;
      default: throw colors::TypeMismatchError("this shared object is not a container");
    }
  });

  // ---- list ----
  def_ref_method("lget", +[](Ref& r, std::int64_t i) { return py_of(cd::list_load_signed(r.list().raw(), i)); });
  def_ref_method("lset", +[](Ref& r, std::int64_t i, py::handle v) {
    colors::Value sv = to_value(v);
    cd::list_set_signed(r.list().raw(), i, sv.raw());
  });
  def_ref_method("lappend", +[](Ref& r, py::handle v) {
    colors::Value sv = to_value(v);
    r.list().append(sv);
  });
  def_ref_method("linsert", +[](Ref& r, std::int64_t i, py::handle v) {  // list.insert: i clamped to [0, len]
    colors::Value sv = to_value(v);
    cd::list_insert_clamped(cd::current_meta(), r.list().raw(), i, sv.raw());
  });
  def_ref_method("lpop", +[](Ref& r, std::int64_t i) {
    const cd::Word list = r.list().raw();
    std::array<cd::Rooted, 1> t{cd::list_pop_signed(list, i)};
    return convert_popped(t, [&] { return py_of(std::move(t[0])); }, [&](const auto& w) {
      const std::int64_t at = i >= 0 ? i : static_cast<std::int64_t>(cd::list_size(list)) + i + 1;
      cd::list_insert_clamped(cd::current_meta(), list, at, w[0]);
    });
  });
  // Removes the element at i (>= 0) if it still equals `expected` (language-neutral equality:
  // identity for shared objects); returns whether it did.
  def_ref_method("lpop_if", +[](Ref& r, std::int64_t i, py::handle expected) {
    colors::Value e = to_value(expected);
    colors::List& l = r.list();
    if (i < 0) return false;
    return cd::list_erase_if(l.raw(), static_cast<std::size_t>(i), e.raw());
  });
  def_ref_method("litems", +[](Ref& r) { return snapshot(r.list()); });
  // The elements and the list's version, for an operation that writes a result computed from them
  // back with lreplace_if (see snapshot).
  def_ref_method("litems_for_update", +[](Ref& r) {
    std::uint64_t version = 0;
    py::list items = snapshot(r.list(), true, &version);
    return py::make_tuple(std::move(items), version);
  });
  m.def("_install_list_fast_paths", [](py::object cls) {
    auto* t = install_fast_methods(cls, g_list_fast_methods, colors::TypeKind::kList);
    // The type's slots point straight at the C functions: assigning the methods above left
    // CPython's generic slot functions, which look the method up by name on every call.
    t->tp_iter = list_iter;
    t->tp_as_sequence->sq_length = list_len;
    t->tp_as_mapping->mp_length = list_len;
    t->tp_as_mapping->mp_subscript = list_getitem;
  });
  def_ref_method("lextend", +[](Ref& r, py::iterable items) {
    std::vector<colors::Value> vals = to_values(py::list(items));
    std::vector<cd::Word> w = words_of(vals);
    cd::list_append_all(cd::current_meta(), r.list().raw(), w.data(), w.size());
  });
  // Replaces the whole content (sort, reverse, slice assignment): values are checked first.
  // Makes the content `items` if the list is still as litems_for_update read it at `version`;
  // returns whether it did.
  def_ref_method("lreplace_if", +[](Ref& r, std::uint64_t version, py::list items) {
    std::vector<colors::Value> vals = to_values(items);
    std::vector<cd::Word> w = words_of(vals);
    return cd::list_replace_if(cd::current_meta(), r.list().raw(), version, w.data(), w.size());
  });

  // ---- map ----
  def_ref_method("mget", +[](Ref& r, py::handle key) {
    colors::Value k = to_value(key);
    auto v = r.map().get(k);
    if (!v) key_error(key);
    return from_value(std::move(*v));
  });
  def_ref_method("mget_default", +[](Ref& r, py::handle key, py::object dflt) {
    colors::Value k = to_value(key);
    auto v = r.map().get(k);
    if (!v) return dflt;
    return from_value(std::move(*v));
  });
  def_ref_method("mput", +[](Ref& r, py::handle key, py::handle v) {
    colors::Value k = to_value(key);
    colors::Value sv = to_value(v);
    return r.map().put(k, sv);
  });
  // dict.setdefault: the existing value, or `dflt` after storing it (one operation).
  def_ref_method("msetdefault", +[](Ref& r, py::handle key, py::handle dflt) {
    colors::Value k = to_value(key);
    colors::Value d = to_value(dflt);
    colors::Map& mp = r.map();
    cd::Rooted existing;
    if (cd::map_put_if_absent(cd::current_meta(), mp.raw(), k.raw(), d.raw(), &existing))
      return from_value(std::move(d));
    return py_of(std::move(existing));
  });
  def_ref_method("mcontains", +[](Ref& r, py::handle key) {
    colors::Value k = to_value(key);
    return r.map().contains(k);
  });
  def_ref_method("mremove", +[](Ref& r, py::handle key) {
    colors::Value k = to_value(key);
    return r.map().remove(k);
  });
  def_ref_method("mpop", +[](Ref& r, py::handle key) {  // KeyError when missing
    colors::Value k = to_value(key);
    const cd::Word map = r.map().raw();
    std::array<cd::Rooted, 1> t;
    if (!cd::hash_remove(map, k.raw(), &t[0])) key_error(key);
    return convert_popped(t, [&] { return py_of(std::move(t[0])); }, [&](const auto& w) {
      cd::Rooted present;
      cd::map_put_if_absent(cd::current_meta(), map, k.raw(), w[0], &present);
    });
  });
  def_ref_method("mpopitem", +[](Ref& r) -> py::object {  // None when empty
    const cd::Word map = r.map().raw();
    std::array<cd::Rooted, 2> t;
    if (!cd::hash_pop_any(map, &t[0], &t[1])) return py::none();
    return convert_popped(t, [&] { return py::make_tuple(py_of(std::move(t[0])), py_of(std::move(t[1]))); },
                          [&](const auto& w) {
                            cd::Rooted present;
                            cd::map_put_if_absent(cd::current_meta(), map, w[0], w[1], &present);
                          });
  });
  def_ref_method("mitems", +[](Ref& r) {
    auto items = r.map().items();
    Unfilled<py::list> out(items.size());
    for (std::size_t i = 0; i < items.size(); ++i)
      out.set(i, py::make_tuple(from_value(std::move(items[i].first)), from_value(std::move(items[i].second))));
    return out.done();
  });
  def_ref_method("mkeys", +[](Ref& r) {
    auto items = r.map().items();
    Unfilled<py::list> out(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) out.set(i, from_value(std::move(items[i].first)));
    return out.done();
  });
  def_ref_method("mvalues", +[](Ref& r) {
    auto items = r.map().items();
    Unfilled<py::list> out(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) out.set(i, from_value(std::move(items[i].second)));
    return out.done();
  });

  // ---- set ----
  def_ref_method("scontains", +[](Ref& r, py::handle key) {
    colors::Value k = to_value(key);
    return r.set().contains(k);
  });
  def_ref_method("sadd", +[](Ref& r, py::handle key) {
    colors::Value k = to_value(key);
    return r.set().add(k);
  });
  def_ref_method("sremove", +[](Ref& r, py::handle key) {
    colors::Value k = to_value(key);
    return r.set().remove(k);
  });
  // Removes every element of `keys` the set holds, in one operation; returns how many.
  def_ref_method("sremove_all", +[](Ref& r, py::list keys) {
    std::vector<colors::Value> vals = to_values(keys);
    std::vector<cd::Word> w = words_of(vals);
    return cd::hash_remove_all(r.set().raw(), w.data(), w.size());
  });
  def_ref_method("spop", +[](Ref& r) -> py::object {  // a one-element tuple, or None when empty
    const cd::Word set = r.set().raw();
    std::array<cd::Rooted, 1> t;
    if (!cd::hash_pop_any(set, &t[0], nullptr)) return py::none();
    return convert_popped(t, [&] { return py::make_tuple(py_of(std::move(t[0]))); },
                          [&](const auto& w) { cd::set_add(cd::current_meta(), set, w[0]); });
  });
  def_ref_method("sitems", +[](Ref& r) { return to_list(r.set().items()); });
  // The elements, for an operation that writes a result computed from them back
  // (intersection_update): taken once no transaction holds the set (cd::TxAccess::kReadForUpdate).
  def_ref_method("sitems_for_update", +[](Ref& r) {
    py::list out;
    cd::hash_for_each_rooted(
        r.set().raw(), [&](cd::Rooted k, cd::Rooted) { out.append(py_of(std::move(k))); },
        cd::TxAccess::kReadForUpdate);
    return out;
  });

  // ---- user objects (minimal: generic field access; the class mapping is still to come) ----
  def_ref_method("oclass", +[](Ref& r) {
    colors::Class c = obj(r).cls();
    return py::make_tuple(c.name(), c.version());
  });
  def_ref_method("ofields", +[](Ref& r) {
    py::list out;
    for (const auto& f : obj(r).cls().fields()) out.append(py::str(f.name));
    return out;
  });
  def_ref_method("ohas", +[](Ref& r, const std::string& name) { return obj(r).has_field(name); });
  def_ref_method("oget", +[](Ref& r, const std::string& name) { return from_value(obj(r).get(name)); });
  def_ref_method("oset", +[](Ref& r, const std::string& name, py::handle v) {
    colors::Object o = obj(r);
    // Converted (and kept alive) first, so a value that fails changes nothing.
    check_storable(v);
    colors::Value value = to_value(v);
    if (!o.has_field(name)) {
      // A new field: its type follows the value (section 3.1.2), and it holds the value from the
      // moment the class has it, so no reader sees it null.
      cd::add_field(cd::current_meta(), o.raw(), colors::FieldSpec{name, kind_for_value(v.ptr()), ""}, value.raw());
    }
    o.set(name, value);
  });
  def_ref_method("odel", +[](Ref& r, const std::string& name) {
    colors::Object o = obj(r);
    if (!o.has_field(name)) {
      PyErr_SetString(PyExc_AttributeError, ("shared object has no field '" + name + "'").c_str());
      throw py::error_already_set();
    }
    o.remove_field(name);
  });
}

}  // namespace colors_py
