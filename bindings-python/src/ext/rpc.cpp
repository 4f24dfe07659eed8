// The rpc transport (colors/rpc.hpp) for Python: _RpcServer/_RpcCall on the serving side,
// _RpcClient/_RpcPending on the calling side. The public API is colors_shm/rpc.py.
//
// Arguments and results cross as shared objects: private values are copied in with copy_to
// semantics (Python lists of arguments, returned containers and user objects), shared ones are
// passed as they are. Every wait releases the GIL and stays interruptible (Blocking).
#include <colors/rpc.hpp>

#include "common.hpp"

#include <optional>

namespace colors_py {

namespace {

// Private value -> shared value for an argument or a result (copy_to for containers/instances).
colors::Value share(py::handle obj) {
  PyObject* o = obj.ptr();
  if (o == Py_None || PyBool_Check(o) || PyLong_Check(o) || PyFloat_Check(o) || PyUnicode_Check(o) ||
      PyBytes_Check(o) || PyByteArray_Check(o))
    return to_value(obj);
  if (Ref* r = ref_of(obj)) {
    r->check();
    return r->value();
  }
  colors::Value uv;
  if (user_value_of(obj, &uv)) return uv;
  return copy_in(obj);
}

colors::List share_args(py::handle args) {
  ensure_attached();
  colors::List l = colors::new_list(static_cast<std::size_t>(py::len(args)));
  for (py::handle a : args) {
    colors::Value v = share(a);
    // Iterating `args` and sharing an argument run Python code, which may have detached.
    if (!l.is_current()) throw colors::NotAttachedError("detach() ran while the call's arguments were being shared");
    l.append(v);
  }
  return l;
}

// str(o) as UTF-8 for the caller: a lone surrogate is escaped (backslashreplace); nullopt (the
// Python error cleared) when str() raises or returns something that is not a str.
std::optional<std::string> utf8_str(py::handle o) {
  py::object s = py::reinterpret_steal<py::object>(PyObject_Str(o.ptr()));
  if (!s) {
    PyErr_Clear();
    return std::nullopt;
  }
  Py_ssize_t n = 0;
  if (const char* u = PyUnicode_AsUTF8AndSize(s.ptr(), &n)) return std::string(u, static_cast<std::size_t>(n));
  PyErr_Clear();
  py::object b = py::reinterpret_steal<py::object>(PyUnicode_AsEncodedString(s.ptr(), "utf-8", "backslashreplace"));
  if (!b) {
    PyErr_Clear();
    return std::nullopt;
  }
  return std::string(PyBytes_AS_STRING(b.ptr()), static_cast<std::size_t>(PyBytes_GET_SIZE(b.ptr())));
}

// "ValueError", "pkg.mod.MyError": builtins by name, others qualified; the C type's name when a
// class's __module__ or __qualname__ cannot be read as text.
std::string exception_type_name(py::handle type) {
  auto* t = reinterpret_cast<PyTypeObject*>(type.ptr());
  py::object mod_attr = py::reinterpret_steal<py::object>(PyObject_GetAttrString(type.ptr(), "__module__"));
  py::object qual_attr = py::reinterpret_steal<py::object>(PyObject_GetAttrString(type.ptr(), "__qualname__"));
  PyErr_Clear();
  std::optional<std::string> mod = mod_attr ? utf8_str(mod_attr) : std::nullopt;
  std::optional<std::string> qual = qual_attr ? utf8_str(qual_attr) : std::nullopt;
  if (!mod || !qual) return t->tp_name;
  return *mod == "builtins" ? *qual : *mod + "." + *qual;
}

// The handler's exception as the caller sees it: its text, or a fallback when its __str__ fails
// (raises, or returns a non-str).
std::string exception_message(py::handle value) {
  if (std::optional<std::string> m = utf8_str(value)) return *std::move(m);
  return "(the exception's str() failed)";
}

// _rpc_call(client, method, args, timeout): _RpcClient.call without pybind11's dispatcher, whose
// argument conversion (a registry lookup for the client, a std::string for the name, the result's
// cast) cost about as much as the rest of the Python side of a small call. `client` is the capsule
// of _RpcClient._capsule(); the caller (rpc.Client) keeps the _RpcClient alive beside it.
constexpr const char* kClientCapsule = "colors_shm._RpcClient";

// A spin budget from Python, at most one interrupt slice: spinning does not run the interrupt
// hook, so a longer spin would delay Ctrl-C and detach() (which waits for blocked calls to leave).
std::int64_t spin_arg(std::int64_t spin_ns) {
  constexpr std::int64_t kMaxSpinNs = 50'000'000;  // libshared's kInterruptSliceNs
  return spin_ns < 0 ? -1 : std::min(spin_ns, kMaxSpinNs);
}

void release_client_capsule(PyObject* cap) { Py_XDECREF(static_cast<PyObject*>(PyCapsule_GetContext(cap))); }

PyObject* rpc_call(PyObject*, PyObject* const* a, Py_ssize_t n) {
  if (n != 4) {
    PyErr_SetString(PyExc_TypeError, "_rpc_call(client, method, args, timeout) takes 4 arguments");
    return nullptr;
  }
  if (!PyCapsule_IsValid(a[0], kClientCapsule)) {
    PyErr_SetString(PyExc_TypeError, "_rpc_call: the first argument must be _RpcClient._capsule()");
    return nullptr;
  }
  auto* c = static_cast<colors::rpc::Client*>(PyCapsule_GetPointer(a[0], kClientCapsule));
  if (!PyUnicode_Check(a[1])) {
    PyErr_Format(PyExc_TypeError, "the method name must be a str, not %.100s", Py_TYPE(a[1])->tp_name);
    return nullptr;
  }
  if (!PyTuple_Check(a[2])) {
    PyErr_SetString(PyExc_TypeError, "_rpc_call: args must be a tuple");
    return nullptr;
  }
  Py_ssize_t len = 0;
  const char* name = PyUnicode_AsUTF8AndSize(a[1], &len);  // cached in the str object
  if (name == nullptr) return nullptr;
  try {
    std::int64_t ms = timeout_ms(py::reinterpret_borrow<py::object>(a[3]));
    colors::List args = share_args(a[2]);
    colors::Value v;
    {
      Blocking b;
      v = c->call(std::string_view(name, static_cast<std::size_t>(len)), args, ms);
    }
    return from_value(std::move(v)).release().ptr();
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}
PyMethodDef g_rpc_call_def = {"_rpc_call", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&rpc_call)),
                              METH_FASTCALL, "_RpcClient.call(method, args, timeout) through a capsule (internal)."};

struct PyPending {
  colors::rpc::Pending p;
  std::uint64_t gen;
};

}  // namespace

void init_rpc(py::module_& m) {
  PyObject* fast_call = PyCFunction_New(&g_rpc_call_def, nullptr);
  if (fast_call == nullptr) throw py::error_already_set();
  m.add_object("_rpc_call", py::reinterpret_steal<py::object>(fast_call));
  sealed(py::class_<colors::rpc::Call>(m, "_RpcCall", "A request taken by a server thread (internal)."))
      .def_property_readonly("method", [](const colors::rpc::Call& c) { return c.method(); })
      .def_property_readonly("args", [](const colors::rpc::Call& c) { return from_value(c.args()); })
      .def("reply", [](colors::rpc::Call& c, py::handle v) { c.reply(share(v)); })
      .def("fail", [](colors::rpc::Call& c, const std::string& t, const std::string& msg) { c.fail(t, msg); })
      // Runs the call (or each call of a batch, in order) through handler(method, args) and
      // completes it: the return value is the result, a raised exception the failure.
      .def("run", [](colors::rpc::Call& c, py::object handler) {
        c.run([&](const std::string& method, const colors::List& args) -> colors::rpc::Outcome {
          try {
            // The arguments as a tuple of Python values (proxies for shared objects): the handler
            // unpacks it with no Python-level iteration over a shared list.
            const std::size_t n = args.size();
            Unfilled<py::tuple> a(n);
            for (std::size_t i = 0; i < n; ++i) {
              // Making an argument's proxy runs Python code, which may have detached.
              if (!args.is_current()) throw colors::NotAttachedError("detach() ran while the call's arguments were being read");
              a.set(i, from_value(args.get(i)));
            }
            py::object r = handler(py::str(method), a.done());
            try {
              return colors::rpc::Outcome::success(share(r));
            } catch (const colors::Error& e) {
              // A result shared memory cannot hold fails the call under the Python name of the
              // error (colors_shm.TypeMismatchError), as if the handler had raised it, rather
              // than under its C++ type's.
              if (e.code() == colors::ErrorCode::kInterrupted) throw;
              return colors::rpc::Outcome::failure(exception_type_name(error_type(e.code())),
                                                   "the result of " + method + "() cannot be shared: " + e.what());
            }
          } catch (py::error_already_set& e) {
            return colors::rpc::Outcome::failure(exception_type_name(e.type()), exception_message(e.value()));
          }
        });
      }, py::arg("handler"));

  sealed(py::class_<colors::rpc::Server>(m, "_RpcServer", "The serving side of an rpc endpoint (internal)."))
      .def(py::init([](const std::string& name, std::uint32_t capacity) {
             ensure_attached();
             return std::make_unique<colors::rpc::Server>(name, capacity);
           }), py::arg("name"), py::arg("queue_capacity") = 1024)
      .def_property_readonly("name", &colors::rpc::Server::name)
      .def("next", [](colors::rpc::Server& s, py::object timeout, std::int64_t spin_ns) -> py::object {
        std::int64_t ms = timeout_ms(timeout);
        std::optional<colors::rpc::Call> c;
        {
          Blocking b;
          c = s.next(ms, spin_arg(spin_ns));
        }
        if (!c) return py::none();
        return py::cast(std::move(*c));
      }, py::arg("timeout") = py::none(), py::arg("spin_ns") = -1);

  sealed(py::class_<PyPending>(m, "_RpcPending", "An outstanding rpc call (internal)."))
      .def("ready", [](const PyPending& p) {
        if (p.gen != g_generation) throw colors::NotAttachedError("this call belongs to a closed attachment");
        return p.p.ready();
      })
      .def("get", [](PyPending& p, py::object timeout) {
        std::int64_t ms = timeout_ms(timeout);  // first: may run Python code, which may detach
        if (p.gen != g_generation) throw colors::NotAttachedError("this call belongs to a closed attachment");
        colors::Value v;
        {
          Blocking b;
          v = p.p.get(ms);
        }
        return from_value(std::move(v));
      }, py::arg("timeout") = py::none());

  sealed(py::class_<colors::rpc::Client>(m, "_RpcClient", "The calling side of an rpc endpoint (internal)."))
      .def(py::init([](const std::string& name, std::int64_t spin_ns) {
             ensure_attached();
             auto c = std::make_unique<colors::rpc::Client>(name);
             c->set_spin_ns(spin_arg(spin_ns));
             return c;
           }), py::arg("name"), py::arg("spin_ns") = -1)
      .def_property_readonly("name", &colors::rpc::Client::name)
      // The capsule holds a strong reference to its _RpcClient (its context, dropped by the
      // capsule's destructor): the client lives at least as long as any capsule of it.
      .def("_capsule", [](py::object self) {
        auto& c = self.cast<colors::rpc::Client&>();
        PyObject* cap = PyCapsule_New(&c, kClientCapsule, &release_client_capsule);
        if (cap == nullptr) throw py::error_already_set();
        if (PyCapsule_SetContext(cap, self.ptr()) != 0) {
          Py_DECREF(cap);
          throw py::error_already_set();
        }
        Py_INCREF(self.ptr());
        return py::reinterpret_steal<py::object>(cap);
      }, "A capsule of this client for _rpc_call (keeps the client alive).")
      .def("server_alive", &colors::rpc::Client::server_alive)
      .def("call", [](colors::rpc::Client& c, const std::string& method, py::handle args, py::object timeout) {
        std::int64_t ms = timeout_ms(timeout);  // first: may run Python code, which may detach
        colors::List a = share_args(args);
        colors::Value v;
        {
          Blocking b;
          v = c.call(method, a, ms);
        }
        return from_value(std::move(v));
      }, py::arg("method"), py::arg("args"), py::arg("timeout") = py::none())
      .def("call_async", [](colors::rpc::Client& c, const std::string& method, py::handle args) {
        colors::List a = share_args(args);
        colors::rpc::Pending p;
        {
          Blocking b;  // a full queue blocks the sender
          p = c.call_async(method, a);
        }
        return PyPending{std::move(p), g_generation};
      }, py::arg("method"), py::arg("args"))
      .def("call_batch", [](colors::rpc::Client& c, py::list calls) {
        // One copy_to for all arguments of the batch, so that objects shared between calls stay
        // shared on the server.
        static py::handle copy_to = py::object(py::module_::import("colors_shm._colors_shm").attr("copy_to")).release();
        ensure_attached();
        // The methods and argument lists first, each item checked, into objects of our own: making
        // an argument list runs Python code (an iterator), which may change `calls` meanwhile.
        const py::tuple items(calls);
        std::vector<std::string> methods;
        py::list all_args;
        for (py::handle item : items) {
          if (!PyTuple_Check(item.ptr()) || PyTuple_GET_SIZE(item.ptr()) != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(item.ptr(), 0)))
            throw py::type_error("call_batch takes a list of (method: str, args) tuples");
          methods.push_back(py::reinterpret_borrow<py::tuple>(item)[0].cast<std::string>());
          all_args.append(py::list(py::reinterpret_borrow<py::tuple>(item)[1]));
        }
        colors::List shared_args(to_value(copy_to(all_args)));
        std::vector<std::pair<std::string, colors::List>> v;
        for (std::size_t i = 0; i < methods.size(); ++i) v.emplace_back(std::move(methods[i]), colors::List(shared_args.get(i)));
        colors::rpc::Pending p;
        {
          Blocking b;
          p = c.call_batch(v);
        }
        return PyPending{std::move(p), g_generation};
      }, py::arg("calls"));
}

}  // namespace colors_py
