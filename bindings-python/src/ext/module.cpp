// The _colors_shm extension module: attachment, collector, and the init of every binding area.
// The public API with its docstrings is colors_shm/__init__.py; this module is its engine.
#include <unistd.h>

#include <chrono>
#include <thread>

#include "common.hpp"
#include "monitor.hpp"
#include "segment.hpp"

namespace colors_py {

namespace cd = colors::detail;

std::uint64_t g_generation = 1;

namespace {
pid_t g_module_pid = getpid();  // the process that imported the module
}

void ensure_attached() {
  if (colors::has_segment()) return;  // an attachment whose server died is kept: its calls fail
  colors::attach("");
  ++g_generation;
}

namespace {

py::dict gc_dict(const colors::GcStats& s) {
  py::dict d;
  d["cycle"] = s.cycle;
  d["walk_ns"] = s.walk_ns;
  d["mark_ns"] = s.mark_ns;
  d["remark_ns"] = s.remark_ns;
  d["sweep_ns"] = s.sweep_ns;
  d["total_ns"] = s.total_ns;
  d["marking_passes"] = s.marking_passes;
  d["objects_marked"] = s.objects_marked;
  d["bytes_marked"] = s.bytes_marked;
  d["objects_freed"] = s.objects_freed;
  d["bytes_freed"] = s.bytes_freed;
  d["heap_used_before"] = s.heap_used_before;
  d["heap_used_after"] = s.heap_used_after;
  d["largest_free"] = s.largest_free;
  d["threads"] = s.threads;
  d["pending_objects"] = s.pending_objects;
  return d;
}

}  // namespace

}  // namespace colors_py

namespace {

// pybind11's instance base type (pybind11_object: the base of every class `sealed` guards) makes
// instances of registered classes only; for any other type (itself, reached as
// `type(x).__base__`, or called by copyreg) it throws a C++ exception straight through CPython's
// frames, and the process aborts. Its tp_new is wrapped so that the exception becomes TypeError.
newfunc g_instance_base_new = nullptr;

PyObject* instance_base_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  try {
    return g_instance_base_new(type, args, kwargs);
  } catch (const std::exception& e) {
    PyErr_Format(PyExc_TypeError, "cannot create '%s' instances: %s", type->tp_name, e.what());
    return nullptr;
  }
}

void guard_instance_base() {
  auto* base = reinterpret_cast<PyTypeObject*>(py::detail::get_internals().instance_base);
  if (base == nullptr || base->tp_new == &instance_base_new) return;
  g_instance_base_new = base->tp_new;
  base->tp_new = &instance_base_new;
  PyType_Modified(base);
}

}  // namespace

PYBIND11_MODULE(_colors_shm, m) {
  using namespace colors_py;
  guard_instance_base();
  m.doc() = "Engine of colors_shm (use the colors_shm package, not this module).";
  init_errors(m);
  init_values(m);
  init_containers(m);
  init_sorted_map(m);
  init_sync(m);
  init_classes(m);
  init_rpc(m);
  init_transactions(m);
  init_read_scope(m);
  init_proxy_cache(m);

  m.def("attach", [](py::object socket) {
        if (colors::is_attached()) return;
        std::string path = socket.is_none() ? std::string() : py::str(socket).cast<std::string>();
        // The new generation starts before the GIL is released: a thread that uses the heap as
        // soon as the attachment exists then makes its proxies (and takes its pooled root slots,
        // classes.cpp) in the generation they belong to. Nothing of the previous generation is
        // usable anyway: detach() ended it.
        ++g_generation;
        {
          GilRelease r;
          colors::attach(path);
        }
      }, py::arg("socket") = py::none());
  // Blocked calls of other threads are woken first (they raise NotAttachedError) and the mapping
  // goes only when none is left inside libshared (Blocking, common.hpp).
  m.def("detach", [] {
        if (!colors::has_segment()) return;
        // A monitor held across the detach stays held for every process (libshared monitor.hpp):
        // this thread's are refused at once (its own waiters could never re-acquire them), other
        // threads' are waited for below.
        if (const std::size_t mine = cd::monitors_held_here(cd::current_meta()).thread; mine != 0)
          throw colors::InvalidArgumentError("detach() while this thread holds " + std::to_string(mine) +
                                             " shared monitor(s): exit them first; a monitor held across a detach "
                                             "would stay held for every process");
        struct Closing {
          Closing() { begin_closing(); }
          ~Closing() { end_closing(); }
        } closing;
        if (!colors::has_segment()) return;  // another thread detached while we waited
        // Blocking calls are refused now (a woken waiter holds its monitor again and raises), so
        // other threads only exit monitors, in their with blocks' __exit__: wait for them (without
        // the GIL), and refuse the detach, before anything is dropped, if some are still held.
        std::size_t held = 0;
        for (int i = 0; i < 2000 && (held = cd::monitors_held_here(cd::current_meta()).process) != 0; ++i) {
          GilRelease r;
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        if (held != 0)
          throw colors::InvalidArgumentError("detach() while other threads of this process hold " +
                                             std::to_string(held) +
                                             " shared monitor(s) (for 2 s): exit them first; a monitor held across "
                                             "a detach would stay held for every process");
        // The cached proxies die after the detach (stale by then: nothing of theirs is touched),
        // so no finalizer of theirs runs while it is under way.
        struct Released {
          std::vector<ProxyCache::Entry> entries = take_proxy_cache(proxy_cache_capacity());
          ~Released() { release(entries); }
        } cached;
        clear_identity_cache();
        ++g_generation;
        colors::detach();
      });
  m.def("is_attached", [] { return colors::is_attached(); });
  // os.register_at_fork(after_in_child=...): libshared has already dropped the parent's
  // attachment in the child; proxies inherited from the parent become stale (NotAttachedError),
  // and the next call attaches the child as a client of its own.
  // Does nothing outside a fork child (the process id is the one it last saw).
  m.def("_after_fork_in_child", [] {
    static pid_t seen = 0;
    if (seen == 0) seen = g_module_pid;
    if (getpid() == seen) return;
    seen = getpid();
    reset_blocking_after_fork();
    reset_tx_count_after_fork();
    std::vector<ProxyCache::Entry> cached = take_proxy_cache(proxy_cache_capacity());  // the parent's
    clear_identity_cache();
    ++g_generation;
    release(cached);  // stale now: their handles touch neither table nor root
  });
  m.def("ping", [] { colors::ping(); });
  m.def("collect", [](py::object timeout) {
        ensure_attached();
        std::int64_t ms = timeout_ms(timeout);
        drop_proxy_cache();  // what only the caches kept is garbage the caller wants collected
        drop_string_write_cache();
        colors::GcStats s;
        {
          Blocking b;
          s = colors::collect(ms);
        }
        return gc_dict(s);
      }, py::arg("timeout") = py::none());
  m.def("checkpoint", [] {
        ensure_attached();
        Blocking b;
        return colors::checkpoint();
      });
  m.def("gc_stats", [] {
        ensure_attached();
        return gc_dict(colors::gc_stats());
      });
  m.def("heap_stats", [] {
        ensure_attached();
        colors::HeapStats s = colors::heap_stats();
        py::dict d;
        d["capacity"] = s.capacity;
        d["free_bytes"] = s.free_bytes;
        d["free_chunks"] = s.free_chunks;
        d["largest_free"] = s.largest_free;
        d["allocated_bytes_total"] = s.allocated_bytes_total;
        return d;
      });
}
