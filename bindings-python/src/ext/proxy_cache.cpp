// colors_shm.proxy_cache(): the Python face of the proxy cache (proxy_cache.hpp; the ring lives
// in classes.cpp, next to the identity tables it keeps entries of), and libshared's heap-pressure
// hook that relieves it.
#include "common.hpp"
#include "heap.hpp"

namespace colors_py {

namespace cd = colors::detail;

namespace {

// Default capacity: every proxy an OO7 small traversal makes (about 64k) with room to spare; about
// 1 MiB of ring plus ~130 bytes per proxy held.
constexpr std::size_t kDefaultCapacity = std::size_t{1} << 17;
constexpr std::size_t kMaxCapacity = std::size_t{1} << 26;

cd::HeapPressureHook g_previous_hook = nullptr;

// Called by libshared on the allocating thread. Only a thread holding the GIL may touch the cache
// (a thread of libshared's own, or one that released the GIL around a wait, does not).
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

void init_proxy_cache(py::module_& m) {
  set_capacity(kDefaultCapacity);
  if (cd::heap_pressure_hook() != &on_heap_pressure) {
    g_previous_hook = cd::heap_pressure_hook();
    cd::set_heap_pressure_hook(&on_heap_pressure);
  }
  m.def("proxy_cache", [](py::object capacity) {
        if (!capacity.is_none()) {
          if (!PyLong_Check(capacity.ptr()) || PyBool_Check(capacity.ptr()))
            throw py::type_error("proxy_cache() takes an int capacity (or None to ask)");
          int overflow = 0;
          const long long n = PyLong_AsLongLongAndOverflow(capacity.ptr(), &overflow);
          if (overflow != 0 || n < 0 || static_cast<unsigned long long>(n) > kMaxCapacity)
            throw colors::InvalidArgumentError("proxy cache capacity " + py::str(capacity).cast<std::string>() + " is outside 0.." +
                                               std::to_string(kMaxCapacity));
          set_capacity(static_cast<std::size_t>(n));
        }
        return proxy_cache_capacity();
      }, py::arg("capacity") = py::none());
}

}  // namespace colors_py
