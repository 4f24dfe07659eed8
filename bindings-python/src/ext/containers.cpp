// The primitive operations of shared lists, maps, sets and user objects, as methods of _Ref.
// The pure-Python proxies (_proxies.py) build the full collections.abc behaviour on these.
#include "common.hpp"
#include "containers.hpp"
#include "roots.hpp"

namespace colors_py {

namespace cd = colors::detail;

namespace {

std::size_t list_index(colors::List& l, std::int64_t i) {
  std::size_t n = l.size();
  if (i < 0 || static_cast<std::size_t>(i) >= n) throw colors::IndexError("list index out of range");
  return static_cast<std::size_t>(i);
}

[[noreturn]] void key_error(py::handle key) {
  PyErr_SetObject(PyExc_KeyError, key.ptr());
  throw py::error_already_set();
}

py::list to_list(std::vector<colors::Value>&& items) {
  py::list out(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) out[i] = from_value(std::move(items[i]));
  return out;
}

}  // namespace

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
  cls.def("lget", [](Ref& r, std::int64_t i) {
    colors::List& l = r.list();
    return from_value(l.get(list_index(l, i)));
  });
  cls.def("lset", [](Ref& r, std::int64_t i, py::handle v) {
    colors::List& l = r.list();
    colors::Value sv = to_value(v);
    l.set(list_index(l, i), sv);
  });
  cls.def("lappend", [](Ref& r, py::handle v) {
    colors::List& l = r.list();
    l.append(to_value(v));
  });
  cls.def("linsert", [](Ref& r, std::int64_t i, py::handle v) {  // i already clamped to [0, len]
    colors::List& l = r.list();
    colors::Value sv = to_value(v);
    std::size_t n = l.size();
    l.insert(i < 0 ? 0 : std::min<std::size_t>(static_cast<std::size_t>(i), n), sv);
  });
  cls.def("lpop", [](Ref& r, std::int64_t i) {
    colors::List& l = r.list();
    return from_value(l.erase(list_index(l, i)));
  });
  cls.def("litems", [](Ref& r) { return to_list(r.list().items()); });
  // Up to `n` elements from `start` (fewer at the end): iteration reads the list in chunks.
  cls.def("lchunk", [](Ref& r, std::int64_t start, std::int64_t n) {
    colors::List& l = r.list();
    cd::Word lw = l.raw();
    std::size_t size = cd::list_size(lw);
    std::size_t b = start < 0 ? 0 : static_cast<std::size_t>(start);
    std::size_t e = std::min(size, b + static_cast<std::size_t>(std::max<std::int64_t>(n, 0)));
    py::list out;
    for (std::size_t i = b; i < e; ++i) {
      PyObject* item;
      cd::Word w;
      try {
        w = cd::list_get(lw, i);
      } catch (const colors::IndexError&) {  // shrunk meanwhile (another thread or process)
        break;
      }
      if (cd::is_small_int(w)) {
        item = PyLong_FromLongLong(cd::small_value(w));
      } else if (w == cd::kNull) {
        item = Py_NewRef(Py_None);
      } else if (cd::is_bool(w)) {
        item = PyBool_FromLong(cd::bool_value(w));
      } else if (cd::is_small_float(w)) {
        item = PyFloat_FromDouble(cd::small_float_value(w));
      } else if ((item = live_user_proxy(w)) != nullptr) {
        // The live proxy of a user object: no root needed (`r` keeps the list alive; common.hpp).
      } else {
        cd::Rooted rooted;
        try {
          rooted = cd::list_load(lw, i);
        } catch (const colors::IndexError&) {
          break;
        }
        cd::Word rw = rooted.word();
        item = from_rooted(rw, rooted.take()).release().ptr();
        // Making a proxy may run Python code (a class resolver, a collection's callbacks), which
        // may detach: `lw` is then a word of a closed attachment. (The other branches run none.)
        if (!l.is_current()) {
          Py_XDECREF(item);
          throw colors::NotAttachedError("detach() ran while the list was being read");
        }
      }
      if (item == nullptr) throw py::error_already_set();
      int rc = PyList_Append(out.ptr(), item);
      Py_DECREF(item);
      if (rc != 0) throw py::error_already_set();
    }
    return out;
  });
  cls.def("lextend", [](Ref& r, py::iterable items) {
    // The iterator is Python code (it may detach): the list is checked again for every item.
    for (py::handle x : items) r.list().append(to_value(x));
  });
  // Replaces the whole content (sort, reverse, slice assignment): values are checked first.
  cls.def("lreplace", [](Ref& r, py::list items) {
    colors::List& l = r.list();
    std::vector<colors::Value> vals;
    vals.reserve(items.size());
    for (py::handle x : items) check_storable(x);
    for (py::handle x : items) vals.push_back(to_value(x));
    std::size_t n = l.size();
    std::size_t k = vals.size();
    std::size_t common = std::min(n, k);
    for (std::size_t i = 0; i < common; ++i) l.set(i, vals[i]);
    for (std::size_t i = common; i < k; ++i) l.append(vals[i]);
    for (std::size_t i = n; i > k; --i) l.erase(i - 1);
  });

  // ---- map ----
  cls.def("mget", [](Ref& r, py::handle key) {
    colors::Map& mp = r.map();
    auto v = mp.get(to_value(key));
    if (!v) key_error(key);
    return from_value(std::move(*v));
  });
  cls.def("mget_default", [](Ref& r, py::handle key, py::object dflt) {
    colors::Map& mp = r.map();
    auto v = mp.get(to_value(key));
    if (!v) return dflt;
    return from_value(std::move(*v));
  });
  cls.def("mput", [](Ref& r, py::handle key, py::handle v) {
    colors::Map& mp = r.map();
    colors::Value k = to_value(key);
    return mp.put(k, to_value(v));
  });
  cls.def("mcontains", [](Ref& r, py::handle key) { return r.map().contains(to_value(key)); });
  cls.def("mremove", [](Ref& r, py::handle key) { return r.map().remove(to_value(key)); });
  cls.def("mpop", [](Ref& r, py::handle key) {  // KeyError when missing
    colors::Map& mp = r.map();
    colors::Value k = to_value(key);
    auto v = mp.get(k);
    if (!v) key_error(key);
    mp.remove(k);
    return from_value(std::move(*v));
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
  cls.def("scontains", [](Ref& r, py::handle key) { return r.set().contains(to_value(key)); });
  cls.def("sadd", [](Ref& r, py::handle key) { return r.set().add(to_value(key)); });
  cls.def("sremove", [](Ref& r, py::handle key) { return r.set().remove(to_value(key)); });
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
