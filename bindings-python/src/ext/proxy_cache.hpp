// The proxy cache: the proxies made last, each held by one strong reference of a ring.
//
// Why: a Python proxy lives only while Python code holds it, so a program that reads the same
// shared objects again (a traversal repeated, an index probed twice) made and freed a proxy per
// read: CPython's allocation and deallocation, a root, an identity-table insert and erase, about
// 90 ns, against about 10 ns to read an attribute of a private object. A proxy the cache keeps is
// found again in the identity tables (classes.cpp's read_ref, containers.cpp's snapshot_live), so
// a read of an object read before costs a table lookup.
//
// What it costs: up to capacity() proxies, and the shared objects they root, stay alive after the
// program dropped them. The collector cannot free those objects until their proxy leaves the
// ring: `capacity()` proxies made later, colors_shm.collect() (which empties the ring first), a
// detach, or heap pressure (classes.cpp's relieve_proxy_cache, libshared's heap-pressure hook:
// the roots of the cached proxies nothing else holds are dropped before the collector's retries).
//
// Invariants (everything here runs with the GIL held):
//  * every non-null `proxy` entry is a strong reference, and `handle` is the handle in that
//    proxy's hidden slot (it dies with its proxy, so it lives while the entry does);
//  * the ring's own state is consistent before every Py_DECREF done here: a decref may run Python
//    code (a finalizer, a weakref callback), which may use the cache again;
//  * `next_ < ring_.size()` whenever the ring is not empty; an empty ring (capacity 0) keeps
//    nothing.
#pragma once
#include <Python.h>

#include <cstddef>
#include <utility>
#include <vector>

namespace colors_py {

class ProxyCache {
 public:
  struct Entry {
    PyObject* proxy = nullptr;   // strong
    PyObject* handle = nullptr;  // borrowed: the proxy's hidden handle
  };

  std::size_t capacity() const { return ring_.size(); }

  // Holds a new reference to `proxy`; the oldest entry goes when the ring is full.
  void keep(PyObject* proxy, PyObject* handle) {
    if (ring_.empty()) return;
    Entry old = ring_[next_];
    ring_[next_] = Entry{Py_NewRef(proxy), handle};
    if (++next_ == ring_.size()) next_ = 0;
    Py_XDECREF(old.proxy);  // last: may run Python code
  }

  // Moves every entry out, leaving the ring empty with its capacity (or `capacity` if given), for
  // the caller to release (release() below) when it is safe to run Python code. Throws
  // std::bad_alloc, with the cache unchanged.
  std::vector<Entry> take(std::size_t capacity) {
    std::vector<Entry> fresh(capacity);
    fresh.swap(ring_);
    next_ = 0;
    return fresh;
  }
  std::vector<Entry> take() { return take(ring_.size()); }

  // Visits every entry (f must not release one, nor run Python code).
  template <class F>
  void for_each(F&& f) {
    for (Entry& e : ring_)
      if (e.proxy != nullptr) f(e);
  }

 private:
  std::vector<Entry> ring_;
  std::size_t next_ = 0;
};

// Drops the references of entries taken out of a ProxyCache (may run Python code).
inline void release(std::vector<ProxyCache::Entry>& entries) {
  for (ProxyCache::Entry& e : entries) Py_CLEAR(e.proxy);
}

}  // namespace colors_py
