// colors_shm.proxy_cache(): the Python face of the proxy cache (proxy_cache.hpp; the ring lives
// in classes.cpp, next to the identity tables it keeps entries of), and libshared's heap-pressure
// hook that relieves it.
#include "common.hpp"
#include "heap.hpp"
#include "segment.hpp"

namespace colors_py {

namespace cd = colors::detail;

namespace {

// Default capacity: every proxy an OO7 small traversal makes (about 64k) with room to spare; about
// 1 MiB of ring plus ~130 bytes per proxy held.
constexpr std::size_t kDefaultCapacity = std::size_t{1} << 17;
constexpr std::size_t kMaxCapacity = std::size_t{1} << 22;  // a ring of 64 MiB

cd::HeapPressureHook g_previous_hook = nullptr;

// The Python function that starts the heap-pressure watcher thread (colors_shm/__init__.py's
// _start_pressure_watcher), and the generation it last started one for.
PyObject* g_watcher_starter = nullptr;
std::uint64_t g_watcher_gen = 0;

// Set at interpreter exit (atexit, __init__.py's _stop_pressure_watcher): the watcher must leave
// its wait and end before finalization, since a daemon thread that takes the GIL back then is
// ended by CPython inside pybind11's GIL release guard, which terminates the process.
std::atomic<bool> g_watch_exit{false};

bool stop_watching() { return detach_closing() || g_watch_exit.load(std::memory_order_acquire); }

// Called by libshared on the allocating thread. Only a thread holding the GIL may touch the cache
// (a thread of libshared's own, or one that released the GIL around a wait, does not). No relief
// is noted here: the allocation goes on to wait for other processes' watchers (a JVM's collection
// takes longer than the cycles alone), never for this process's own (heap.cpp, pressure_watched).
void on_heap_pressure() noexcept {
  if (Py_IsInitialized() != 0 && _Py_IsFinalizing() == 0 && PyGILState_Check() != 0) relieve_proxy_cache();
  if (g_previous_hook != nullptr) g_previous_hook();
}

void set_capacity(std::size_t n) {
  std::vector<ProxyCache::Entry> old = take_proxy_cache(n);
  release(old);
}

}  // namespace

void drop_proxy_cache() { set_capacity(proxy_cache_capacity()); }

// Heap pressure from other processes: their allocations cannot call this process's hook, so a
// watcher thread (one per attachment, a Python daemon thread running __init__.py's
// _watch_heap_pressure) waits in libshared's await_heap_pressure, inside a Blocking section (a
// detach wakes it and waits for it to leave), and relieves the cache when woken, then tells the
// waiting allocations (note_heap_relief). It is started the first time the cache keeps a proxy in
// an attachment, so a process that caches nothing runs none.
void start_pressure_watcher() {
  if (g_watcher_gen == g_generation || g_watcher_starter == nullptr || proxy_cache_capacity() == 0 ||
      g_watch_exit.load(std::memory_order_relaxed))
    return;
  g_watcher_gen = g_generation;
  PyObject* gen = PyLong_FromUnsignedLongLong(g_generation);
  PyObject* r = gen != nullptr ? PyObject_CallOneArg(g_watcher_starter, gen) : nullptr;
  Py_XDECREF(gen);
  if (r == nullptr) PyErr_WriteUnraisable(g_watcher_starter);  // e.g. no thread to be had: the read goes on
  Py_XDECREF(r);
}

void init_proxy_cache(py::module_& m) {
  set_capacity(kDefaultCapacity);
  if (cd::heap_pressure_hook() != &on_heap_pressure) {
    g_previous_hook = cd::heap_pressure_hook();
    cd::set_heap_pressure_hook(&on_heap_pressure);
  }
  m.def("_set_pressure_watcher_starter", [](py::object fn) {
    Py_XSETREF(g_watcher_starter, fn.is_none() ? nullptr : fn.release().ptr());
  });
  // The watcher's calls, each for the attachment generation it was started in (never attaching:
  // a watcher that starts after its detach just ends): its start (counted in this client's slot,
  // so that allocations under pressure wait for its relief) returns heap_pressure_seq; a wait
  // returns the new sequence number; both return -1 once that attachment is closing or gone.
  m.def("_watch_heap_pressure_start", [](std::uint64_t gen) -> long long {
    if (gen != g_generation || !colors::has_segment() || stop_watching()) return -1;
    cd::Metadata* m = cd::current_meta();
    cd::register_pressure_watcher(m);
    return cd::await_heap_pressure(m, 0, 0, nullptr);
  });
  m.def("_await_heap_pressure", [](std::uint64_t gen, std::uint32_t seen, double timeout_s) -> long long {
    if (!(timeout_s >= 0 && timeout_s <= 60))  // also NaN: the conversion below needs a finite value
      throw colors::InvalidArgumentError("_await_heap_pressure: the timeout must be 0..60 seconds");
    if (gen != g_generation || !colors::has_segment()) return -1;
    cd::Metadata* m = cd::current_meta();
    std::uint32_t now;
    {
      Blocking b;  // NotAttachedError when a detach is closing
      now = cd::await_heap_pressure(m, seen, static_cast<std::int64_t>(timeout_s * 1e9), &stop_watching);
    }
    if (stop_watching() || gen != g_generation) return -1;
    return now;
  });
  m.def("_stop_pressure_watcher", [] { g_watch_exit.store(true, std::memory_order_release); });
  m.def("_relieve_heap_pressure", [](std::uint64_t gen) {
    if (gen != g_generation || !colors::has_segment()) return;
    relieve_proxy_cache();
    cd::note_heap_relief(cd::current_meta());
  });
  m.def("proxy_cache", [](py::object capacity) {
        if (!capacity.is_none()) {
          if (!PyLong_Check(capacity.ptr()) || PyBool_Check(capacity.ptr()))
            throw py::type_error("proxy_cache() takes an int capacity (or None to ask)");
          int overflow = 0;
          const long long n = PyLong_AsLongLongAndOverflow(capacity.ptr(), &overflow);
          if (overflow != 0 || n < 0 || static_cast<unsigned long long>(n) > kMaxCapacity)
            throw colors::InvalidArgumentError("proxy cache capacity " + py::str(capacity).cast<std::string>() +
                                               " is outside 0.." + std::to_string(kMaxCapacity));
          set_capacity(static_cast<std::size_t>(n));
        }
        return proxy_cache_capacity();
      }, py::arg("capacity") = py::none());
}

}  // namespace colors_py
