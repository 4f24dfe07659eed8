// The primitive operations of shared lists, maps, sets and user objects, as methods of _Ref.
// The pure-Python proxies (_proxies.py) build the full collections.abc behaviour on these.
#include "common.hpp"
#include "containers.hpp"
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
  py::list out(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) out[i] = from_value(std::move(items[i]));
  return out;
}

py::object py_of(cd::Rooted&& r) {
  cd::Word w = r.word();
  return from_rooted(w, r.take());
}

// The list's elements at one instant (one locked snapshot, containers.hpp), as Python objects.
// Unboxed values are decoded in place and user objects with a live proxy reuse it, so only the
// other references keep the root the snapshot took.
py::list snapshot(colors::List& l) {
  std::vector<cd::Rooted> items = cd::list_snapshot(l.raw());
  py::list out(static_cast<Py_ssize_t>(items.size()));
  for (std::size_t i = 0; i < items.size(); ++i) {
    cd::Word w = items[i].word();
    PyObject* item;
    if (cd::is_small_int(w)) {
      item = PyLong_FromLongLong(cd::small_value(w));
    } else if (w == cd::kNull) {
      item = Py_NewRef(Py_None);
    } else if (cd::is_bool(w)) {
      item = PyBool_FromLong(cd::bool_value(w));
    } else if (cd::is_small_float(w)) {
      item = PyFloat_FromDouble(cd::small_float_value(w));
    } else if ((item = live_user_proxy(w)) != nullptr) {
      items[i].reset();  // the live proxy holds its own root
    } else {
      item = py_of(std::move(items[i])).release().ptr();
      // Making a proxy may run Python code (a class resolver), which may detach: the rest of the
      // snapshot then holds words of a closed attachment.
      if (!l.is_current()) {
        Py_XDECREF(item);
        throw colors::NotAttachedError("detach() ran while the list was being read");
      }
    }
    if (item == nullptr) throw py::error_already_set();
    PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i), item);
  }
  return out;
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

}  // namespace

// Every primitive below is one container operation (libshared/src/containers.hpp): atomic across
// threads and processes. List positions are Python's (negative from the end), resolved under the
// container's lock. Python values are converted before the lock is taken, and before the
// container's word is fetched (r.list(), r.map(), r.set() check the attachment): converting may
// run Python code, which may detach and attach again.
void init_containers(py::module_& m) {
  auto cls = py::reinterpret_borrow<py::class_<Ref>>(m.attr("_Ref"));
  cls.def("__len__", [](Ref& r) -> std::size_t {
    r.check();
    switch (r.kind) {
      case colors::TypeKind::kList: return r.list().size();
      case colors::TypeKind::kMap: return r.map().size();
      case colors::TypeKind::kSet: return r.set().size();
      default: throw colors::TypeMismatchError("this shared object has no length");
    }
  });
  cls.def("clear", [](Ref& r) {
    r.check();
    switch (r.kind) {
      case colors::TypeKind::kList: r.list().clear(); break;
      case colors::TypeKind::kMap: r.map().clear(); break;
      case colors::TypeKind::kSet: r.set().clear(); break;
      default: throw colors::TypeMismatchError("this shared object is not a container");
    }
  });

  // ---- list ----
  cls.def("lget", [](Ref& r, std::int64_t i) { return py_of(cd::list_load_signed(r.list().raw(), i)); });
  cls.def("lset", [](Ref& r, std::int64_t i, py::handle v) {
    colors::Value sv = to_value(v);
    cd::list_set_signed(r.list().raw(), i, sv.raw());
  });
  cls.def("lappend", [](Ref& r, py::handle v) {
    colors::Value sv = to_value(v);
    r.list().append(sv);
  });
  cls.def("linsert", [](Ref& r, std::int64_t i, py::handle v) {  // list.insert: i clamped to [0, len]
    colors::Value sv = to_value(v);
    cd::list_insert_clamped(cd::current_meta(), r.list().raw(), i, sv.raw());
  });
  cls.def("lpop", [](Ref& r, std::int64_t i) { return py_of(cd::list_pop_signed(r.list().raw(), i)); });
  // Removes the element at i (>= 0) if it still equals `expected` (language-neutral equality:
  // identity for shared objects); returns whether it did.
  cls.def("lpop_if", [](Ref& r, std::int64_t i, py::handle expected) {
    colors::Value e = to_value(expected);
    colors::List& l = r.list();
    if (i < 0) return false;
    return cd::list_erase_if(l.raw(), static_cast<std::size_t>(i), e.raw());
  });
  cls.def("litems", [](Ref& r) { return snapshot(r.list()); });
  cls.def("lextend", [](Ref& r, py::iterable items) {
    std::vector<colors::Value> vals = to_values(py::list(items));
    std::vector<cd::Word> w = words_of(vals);
    cd::list_append_all(cd::current_meta(), r.list().raw(), w.data(), w.size());
  });
  // Replaces the whole content (sort, reverse, slice assignment): values are checked first.
  cls.def("lreplace", [](Ref& r, py::list items) {
    std::vector<colors::Value> vals = to_values(items);
    std::vector<cd::Word> w = words_of(vals);
    cd::list_replace(cd::current_meta(), r.list().raw(), w.data(), w.size());
  });

  // ---- map ----
  cls.def("mget", [](Ref& r, py::handle key) {
    colors::Value k = to_value(key);
    auto v = r.map().get(k);
    if (!v) key_error(key);
    return from_value(std::move(*v));
  });
  cls.def("mget_default", [](Ref& r, py::handle key, py::object dflt) {
    colors::Value k = to_value(key);
    auto v = r.map().get(k);
    if (!v) return dflt;
    return from_value(std::move(*v));
  });
  cls.def("mput", [](Ref& r, py::handle key, py::handle v) {
    colors::Value k = to_value(key);
    colors::Value sv = to_value(v);
    return r.map().put(k, sv);
  });
  // dict.setdefault: the existing value, or `dflt` after storing it (one operation).
  cls.def("msetdefault", [](Ref& r, py::handle key, py::handle dflt) {
    colors::Value k = to_value(key);
    colors::Value d = to_value(dflt);
    colors::Map& mp = r.map();
    cd::Rooted existing;
    if (cd::map_put_if_absent(cd::current_meta(), mp.raw(), k.raw(), d.raw(), &existing))
      return from_value(std::move(d));
    return py_of(std::move(existing));
  });
  cls.def("mcontains", [](Ref& r, py::handle key) {
    colors::Value k = to_value(key);
    return r.map().contains(k);
  });
  cls.def("mremove", [](Ref& r, py::handle key) {
    colors::Value k = to_value(key);
    return r.map().remove(k);
  });
  cls.def("mpop", [](Ref& r, py::handle key) {  // KeyError when missing
    colors::Value k = to_value(key);
    cd::Rooted v;
    if (!cd::hash_remove(r.map().raw(), k.raw(), &v)) key_error(key);
    return py_of(std::move(v));
  });
  cls.def("mpopitem", [](Ref& r) -> py::object {  // None when empty
    colors::Map& mp = r.map();
    cd::Rooted k, v;
    if (!cd::hash_pop_any(mp.raw(), &k, &v)) return py::none();
    return py::make_tuple(py_of(std::move(k)), py_of(std::move(v)));
  });
  cls.def("mitems", [](Ref& r) {
    auto items = r.map().items();
    py::list out(items.size());
    for (std::size_t i = 0; i < items.size(); ++i)
      out[i] = py::make_tuple(from_value(std::move(items[i].first)), from_value(std::move(items[i].second)));
    return out;
  });
  cls.def("mkeys", [](Ref& r) {
    auto items = r.map().items();
    py::list out(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) out[i] = from_value(std::move(items[i].first));
    return out;
  });
  cls.def("mvalues", [](Ref& r) {
    auto items = r.map().items();
    py::list out(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) out[i] = from_value(std::move(items[i].second));
    return out;
  });

  // ---- set ----
  cls.def("scontains", [](Ref& r, py::handle key) {
    colors::Value k = to_value(key);
    return r.set().contains(k);
  });
  cls.def("sadd", [](Ref& r, py::handle key) {
    colors::Value k = to_value(key);
    return r.set().add(k);
  });
  cls.def("sremove", [](Ref& r, py::handle key) {
    colors::Value k = to_value(key);
    return r.set().remove(k);
  });
  cls.def("spop", [](Ref& r) -> py::object {  // a one-element tuple, or None when empty
    colors::Set& st = r.set();
    cd::Rooted k;
    if (!cd::hash_pop_any(st.raw(), &k, nullptr)) return py::none();
    return py::make_tuple(py_of(std::move(k)));
  });
  cls.def("sitems", [](Ref& r) { return to_list(r.set().items()); });

  // ---- user objects (minimal: generic field access; the class mapping is still to come) ----
  auto obj = [](Ref& r) -> colors::Object {
    r.check();
    if (r.kind != colors::TypeKind::kObject) throw colors::TypeMismatchError("not a shared user object");
    return colors::Object(r.value());
  };
  cls.def("oclass", [obj](Ref& r) {
    colors::Class c = obj(r).cls();
    return py::make_tuple(c.name(), c.version());
  });
  cls.def("ofields", [obj](Ref& r) {
    py::list out;
    for (const auto& f : obj(r).cls().fields()) out.append(py::str(f.name));
    return out;
  });
  cls.def("ohas", [obj](Ref& r, const std::string& name) { return obj(r).has_field(name); });
  cls.def("oget", [obj](Ref& r, const std::string& name) { return from_value(obj(r).get(name)); });
  cls.def("oset", [obj](Ref& r, const std::string& name, py::handle v) {
    colors::Object o = obj(r);
    if (!o.has_field(name)) {  // a new field: its type follows the value (section 3.1.2)
      check_storable(v);
      o.add_field(colors::FieldSpec{name, kind_for_value(v.ptr()), ""});
    }
    o.set(name, to_value(v));
  });
  cls.def("odel", [obj](Ref& r, const std::string& name) {
    colors::Object o = obj(r);
    if (!o.has_field(name)) {
      PyErr_SetString(PyExc_AttributeError, ("shared object has no field '" + name + "'").c_str());
      throw py::error_already_set();
    }
    o.remove_field(name);
  });
}

}  // namespace colors_py
