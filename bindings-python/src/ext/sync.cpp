// Blocking calls: the interrupt hook, transaction waits, repositories, channels and monitors.
#include <chrono>
#include <cmath>
#include <thread>
#include <optional>

#include "common.hpp"
#include "monitor.hpp"
#include "segment.hpp"
#include "session.hpp"
#include "transaction.hpp"

namespace colors_py {

// ---- interrupts ----
//
// libshared's blocking waits wake every kInterruptSliceNs (50 ms) and call this thread's hook.
// Ours takes the GIL for a moment and runs PyErr_CheckSignals(); if a signal handler raised
// (KeyboardInterrupt for Ctrl-C), the exception is remembered and the wait throws
// InterruptedError, which the translator (errors.cpp) turns back into that exception.

namespace {

// See Blocking (common.hpp) for the invariants.
int g_in_flight = 0;                  // threads inside a Blocking section; GIL-guarded
std::atomic<int> g_closing{0};        // detach() calls waiting for g_in_flight to drain
// Interpreter exit (GilRelease): set once, by begin_interpreter_exit, with the GIL; g_parked
// counts the threads parked since (each was counted in g_in_flight, or in a transaction wait).
std::atomic<bool> g_exiting{false};
std::atomic<unsigned long> g_exit_thread{0};  // PyThread_get_thread_ident() of the exiting thread
std::atomic<int> g_parked{0};

bool other_thread_at_exit() {
  return g_exiting.load(std::memory_order_acquire) &&
         PyThread_get_thread_ident() != g_exit_thread.load(std::memory_order_acquire);
}

[[noreturn]] void park_for_good() {
  g_parked.fetch_add(1, std::memory_order_acq_rel);
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}
thread_local bool t_detach_interrupt = false;  // the hook stopped this thread's wait for a detach
thread_local int t_blocking = 0;  // Blocking sections of this thread (1, or 2 in a signal handler's call)

thread_local PyObject* t_exc_type = nullptr;
thread_local PyObject* t_exc_value = nullptr;
thread_local PyObject* t_exc_tb = nullptr;

void drop_remembered() {  // GIL held
  Py_CLEAR(t_exc_type);
  Py_CLEAR(t_exc_value);
  Py_CLEAR(t_exc_tb);
}

bool interrupt_hook() {
  // No GIL needed: detach() holds it only when no call is in flight (and waits without it).
  if (g_closing.load(std::memory_order_acquire) > 0) {
    t_detach_interrupt = true;
    return true;
  }
  if (other_thread_at_exit()) return true;  // the wait ends; GilRelease parks the thread
  if (Py_IsInitialized() == 0 || _Py_IsFinalizing()) return false;
  PyGILState_STATE s = PyGILState_Ensure();
  bool stop = false;
  if (PyErr_CheckSignals() != 0) {
    drop_remembered();
    PyErr_Fetch(&t_exc_type, &t_exc_value, &t_exc_tb);
    stop = true;
  }
  PyGILState_Release(s);
  return stop;
}

}  // namespace

bool restore_interrupt_exception() {
  if (t_exc_type == nullptr) return false;
  PyErr_Restore(t_exc_type, t_exc_value, t_exc_tb);  // steals the references
  t_exc_type = t_exc_value = t_exc_tb = nullptr;
  return true;
}

GilRelease::GilRelease() : state_(PyEval_SaveThread()) {}

GilRelease::~GilRelease() {
  if (other_thread_at_exit()) park_for_good();
  PyEval_RestoreThread(state_);
}

void begin_interpreter_exit(std::int64_t timeout_ms) {
  g_exit_thread.store(PyThread_get_thread_ident(), std::memory_order_release);
  g_exiting.store(true, std::memory_order_release);
  // Threads that passed GilRelease's check before the flag take the GIL back while this waits
  // without it, and park at their next blocking call (which the hook ends at once).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (g_in_flight > g_parked.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < deadline) {
    GilRelease r;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

Blocking::Prepare::Prepare() {
  if (g_closing.load(std::memory_order_acquire) > 0)
    throw colors::NotAttachedError("detach() is closing the attachment; attach again to make blocking calls");
  drop_remembered();
  t_detach_interrupt = false;
  colors::detail::set_interrupt_hook(&interrupt_hook);
  ++g_in_flight;
  ++t_blocking;
}

Blocking::Prepare::~Prepare() {
  --g_in_flight;
  --t_blocking;
}

void begin_closing() {
  // A signal handler run by the interrupt hook of this thread's own blocking call: that call is in
  // flight and would never leave while detach waits for it.
  if (t_blocking > 0)
    throw colors::InvalidArgumentError(
        "detach() cannot run inside a signal handler that interrupted a blocking call of the same thread; "
        "detach after that call returned");
  g_closing.fetch_add(1, std::memory_order_acq_rel);
  // Read with the GIL; the blocked threads leave within one slice. Threads parked at interpreter
  // exit have left libshared and never come back.
  while (g_in_flight > g_parked.load(std::memory_order_acquire)) {
    GilRelease r;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void end_closing() { g_closing.fetch_sub(1, std::memory_order_acq_rel); }

bool detach_closing() { return g_closing.load(std::memory_order_acquire) > 0; }

bool take_detach_interrupt() {
  bool d = t_detach_interrupt;
  t_detach_interrupt = false;
  return d;
}

// ---- transaction waits ----
//
// A transaction that finds an object held by another transaction waits for it (bounded:
// COLORS_TX_CONFLICT_WAIT_MS) inside whatever field or container operation needed it. The holder
// may be another Python thread of this process, which needs the GIL to finish: libshared's wait
// hooks (transaction.hpp, set_tx_wait_hooks) release it for the wait. The wait counts as a call in
// flight, as a Blocking section does, so that detach() does not unmap the segment under it; when a
// detach() is already closing, the thread keeps the GIL instead (detach cannot unmap before it
// has the GIL back, and the wait is bounded). Threads that do not hold the GIL (libshared's own,
// or a wait inside a Blocking section) are left alone.
// What runs meanwhile in other threads cannot invalidate the waiting call: its Python arguments
// are held by its caller, converted values are rooted, and nothing of the binding's GIL-guarded
// state (root pool, identity tables) is held across a libshared call.
namespace {

void* tx_wait_begin() {
  if (Py_IsInitialized() == 0 || _Py_IsFinalizing() || PyGILState_Check() == 0) return nullptr;
  // A plain change's wait checks the interrupt hook (tx_wait_container_free): Ctrl-C stops it,
  // and so does a detach() closing the attachment (NotAttachedError), as for Blocking calls.
  drop_remembered();
  t_detach_interrupt = false;
  colors::detail::set_interrupt_hook(&interrupt_hook);
  if (g_closing.load(std::memory_order_acquire) > 0) return nullptr;  // the hook then runs no handler
  ++g_in_flight;
  ++t_blocking;  // a signal handler the hook runs must not detach() under this wait (begin_closing)
  return PyEval_SaveThread();
}

void tx_wait_end(void* token) {
  if (token == nullptr) return;
  if (other_thread_at_exit()) park_for_good();  // as GilRelease
  PyEval_RestoreThread(static_cast<PyThreadState*>(token));
  --g_in_flight;
  --t_blocking;
}

}  // namespace

void reset_blocking_after_fork() {
  g_in_flight = 0;
  g_closing.store(0, std::memory_order_relaxed);
}

std::int64_t timeout_ms(const py::object& timeout) {
  if (timeout.is_none()) return -1;
  PyObject* t = timeout.ptr();
  if (!PyFloat_Check(t) && !PyLong_Check(t))
    throw py::type_error(std::string("timeout must be a number of seconds or None, not ") + Py_TYPE(t)->tp_name);
  double s = PyFloat_AsDouble(t);
  if (s == -1.0 && PyErr_Occurred()) throw py::error_already_set();  // an int too large for a double
  if (std::isnan(s) || s < 0) throw colors::InvalidArgumentError("timeout must be a number of seconds >= 0, or None");
  if (s > 9.0e15 / 1000.0) return -1;
  double ms = std::ceil(s * 1000.0);
  return static_cast<std::int64_t>(ms);
}

// ---- repositories and channels ----

namespace {

struct PyRepository {
  std::string name;
  colors::Repository rec;
  std::uint64_t gen = ~0ULL;

  colors::Repository& get() {
    if (gen != g_generation || !colors::has_segment()) {
      ensure_attached();
      rec = colors::repository(name);
      gen = g_generation;
    }
    return rec;
  }
};

struct PyChannel {
  std::string name;
  std::uint32_t capacity;
  colors::Channel ch;
  std::uint64_t gen = ~0ULL;

  colors::Channel& get() {
    if (gen != g_generation || !colors::has_segment()) {
      ensure_attached();
      ch = colors::channel(name, capacity);
      gen = g_generation;
    }
    return ch;
  }
};

[[noreturn]] void timeout_error(const char* what) {
  PyErr_SetString(PyExc_TimeoutError, what);
  throw py::error_already_set();
}

// ---- monitors ----

struct PySynchronized {
  py::object obj;
};

const void* monitor_address(py::handle target) {
  if (Ref* r = ref_of(target)) {
    r->check();
    return reinterpret_cast<const void*>(r->value().raw());
  }
  colors::Value uv;
  if (user_value_of(target, &uv)) return reinterpret_cast<const void*>(uv.raw());
  if (py::isinstance<PyRepository>(target)) return target.cast<PyRepository*>()->get().address();
  PyObject* o = target.ptr();
  std::string tn = Py_TYPE(o)->tp_name;
  throw colors::TypeMismatchError("only shared objects and repositories have monitors, not a private '" + tn +
                                  "' (use copy_to() to share it first)");
}

colors::detail::Metadata* meta() {
  colors::detail::Metadata* m = colors::detail::current_meta();
  colors::detail::check_server_state(m);
  return m;
}

}  // namespace

void init_sync(py::module_& m) {
  m.def("_begin_interpreter_exit", [](std::int64_t timeout_ms) { begin_interpreter_exit(timeout_ms); },
        "At interpreter exit: parks the other threads' blocking calls (GilRelease, internal).");
  colors::detail::set_tx_wait_hooks(&tx_wait_begin, &tx_wait_end);
  sealed(py::class_<PyRepository>(m, "Repository", "A named root of the shared heap: any process can get() what another set()."))
      .def_property_readonly("name", [](const PyRepository& r) { return r.name; })
      .def("get", [](PyRepository& r) { return from_value(r.get().get()); },
           "The object stored in the repository (None if nothing was set).")
      .def("set", [](PyRepository& r, py::handle obj) {
            colors::Repository& rec = r.get();
            rec.set(to_value(obj));
          }, py::arg("obj"), "Stores a shared object (or a scalar) in the repository.")
      .def("__repr__", [](const PyRepository& r) { return "<colors_shm.Repository '" + r.name + "'>"; });

  m.def("repository", [](const std::string& name) {
        PyRepository r{name, {}, ~0ULL};
        r.get();
        return r;
      }, py::arg("name"));

  sealed(py::class_<PyChannel>(m, "Channel", "A named bounded blocking queue of shared values."))
      .def_property_readonly("name", [](const PyChannel& c) { return c.name; })
      .def_property_readonly("capacity", [](PyChannel& c) { return c.get().capacity(); })
      .def("send", [](PyChannel& c, py::handle obj, py::object timeout) {
            // The conversions first: they may run Python code (__float__, a user class's
            // fields), which may detach; nothing of the attachment is held across them.
            std::int64_t ms = timeout_ms(timeout);
            colors::Value v = to_value(obj);
            colors::Channel& ch = c.get();
            bool ok;
            {
              Blocking b;
              ok = ch.send(v, ms);
            }
            if (!ok) timeout_error("Channel.send(): the channel stayed full until the timeout");
          }, py::arg("obj"), py::arg("timeout") = py::none())
      .def("try_send", [](PyChannel& c, py::handle obj) {
            colors::Channel& ch = c.get();
            colors::Value v = to_value(obj);
            return ch.try_send(v);
          }, py::arg("obj"))
      .def("receive", [](PyChannel& c, py::object timeout) {
            std::int64_t ms = timeout_ms(timeout);  // first: may run Python code, which may detach
            colors::Channel& ch = c.get();
            std::optional<colors::Value> v;
            {
              Blocking b;
              v = ch.receive(ms);
            }
            if (!v) timeout_error("Channel.receive(): nothing arrived before the timeout");
            return from_value(std::move(*v));
          }, py::arg("timeout") = py::none())
      .def("try_receive", [](PyChannel& c, py::object dflt) {
            colors::Channel& ch = c.get();
            std::optional<colors::Value> v = ch.try_receive();
            if (!v) return dflt;
            return from_value(std::move(*v));
          }, py::arg("default") = py::none())
      .def("__repr__", [](const PyChannel& c) {
            return "<colors_shm.Channel '" + c.name + "' capacity=" + std::to_string(c.capacity) + ">";
          });

  m.def("channel", [](const std::string& name, py::int_ capacity) {
        // Any Python int: out of range is InvalidArgumentError naming the maximum, not an overflow.
        int overflow = 0;
        const long long cap = PyLong_AsLongLongAndOverflow(capacity.ptr(), &overflow);
        if (overflow != 0 || cap < 1 || cap > static_cast<long long>(colors::Channel::kMaxCapacity)) {
          throw colors::InvalidArgumentError("channel capacity must be between 1 and " +
                                             std::to_string(colors::Channel::kMaxCapacity) + " (the maximum), got " +
                                             py::str(capacity).cast<std::string>());
        }
        PyChannel c{name, static_cast<std::uint32_t>(cap), {}, ~0ULL};
        c.get();
        return c;
      }, py::arg("name"), py::arg("capacity") = 64);

  m.attr("CHANNEL_MAX_CAPACITY") = colors::Channel::kMaxCapacity;
  m.def("delete_repository", [](const std::string& name) {
        ensure_attached();
        return colors::delete_repository(name);
      }, py::arg("name"));
  m.def("delete_channel", [](const std::string& name) {
        ensure_attached();
        Blocking b;  // wakes the channel's blocked threads, which need the GIL to raise
        return colors::delete_channel(name);
      }, py::arg("name"));

  // A context manager of C methods, as threading.Lock's: CPython runs no signal handler between
  // a C __enter__ that returned and the start of the with block (BEFORE_WITH checks nothing), so
  // a handler that raises runs inside the block and __exit__ releases the monitor. A Python
  // __enter__ ran it right after its own call of the acquire returned, and the monitor stayed held.
  sealed(py::class_<PySynchronized>(m, "synchronized", R"doc(Context manager holding the monitor of a shared object (or repository)::

    with synchronized(obj):
        while not obj["ready"]:
            wait(obj)

Re-entrant (the same thread may nest it). Monitors are robust: if a process died holding it,
entering raises :class:`OwnerDiedError` once (the monitor is then free; the guarded state may
be half-updated) and the next attempt succeeds. Blocking to enter releases the GIL and is
interruptible (Ctrl-C); a signal handler that raises once the monitor is held raises inside the
with block, whose exit releases it.)doc"))
      .def(py::init([](py::object obj) { return PySynchronized{std::move(obj)}; }), py::arg("obj"))
      .def("__enter__", [](PySynchronized& s) {
            const void* a = monitor_address(s.obj);
            colors::detail::Metadata* md = meta();
            {
              Blocking b;
              colors::detail::monitor_enter(md, a, -1);
            }
            return s.obj;
          })
      .def("__exit__", [](PySynchronized& s, py::object, py::object, py::object) {
            colors::detail::monitor_exit(meta(), monitor_address(s.obj));
            return false;
          });
  // The timeout is converted before the monitor's address and the segment are taken: converting
  // it may run Python code (__float__), which may detach.
  m.def("_monitor_enter", [](py::handle target, py::object timeout) {
        std::int64_t ms = timeout_ms(timeout);
        const void* a = monitor_address(target);
        colors::detail::Metadata* md = meta();
        Blocking b;
        return colors::detail::monitor_enter(md, a, ms < 0 ? -1 : ms * 1000000);
      }, py::arg("target"), py::arg("timeout") = py::none());
  m.def("_monitor_exit", [](py::handle target) {
        const void* a = monitor_address(target);
        colors::detail::monitor_exit(meta(), a);
      }, py::arg("target"));
  m.def("_monitor_held", [](py::handle target) {
        const void* a = monitor_address(target);
        return colors::detail::monitor_held_by_me(meta(), a);
      }, py::arg("target"));
  m.def("wait", [](py::handle target, py::object timeout) {
        std::int64_t ms = timeout_ms(timeout);
        const void* a = monitor_address(target);
        colors::detail::Metadata* md = meta();
        Blocking b;
        return colors::detail::monitor_wait(md, a, ms < 0 ? -1 : ms * 1000000);
      }, py::arg("obj"), py::arg("timeout") = py::none());
  m.def("notify_all", [](py::handle target) {
        const void* a = monitor_address(target);
        colors::detail::monitor_notify_all(meta(), a);
      }, py::arg("obj"));
}

}  // namespace colors_py
