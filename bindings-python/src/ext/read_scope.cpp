// colors_shm.read_scope(): the Python face of read scopes. The borrowed proxies themselves live in
// classes.cpp (read_scope_enter / read_scope_exit, "read scopes: borrowed user proxies"), next to
// the handles they are made of.
#include <pthread.h>

#include "common.hpp"

namespace colors_py {

namespace {

// One `with` block: enters at __enter__, exits at __exit__, once each, on the same thread (a
// scope is its thread's: a generator suspended inside one and closed by another thread must not
// end that thread's scope).
struct PyReadScope {
  bool entered = false;
  bool exited = false;
  pthread_t thread{};
};

}  // namespace

void init_read_scope(py::module_& m) {
  sealed(py::class_<PyReadScope>(m, "ReadScope",
                          "A read scope (colors_shm.read_scope()): a context manager inside which the shared "
                          "objects this thread reads or allocates take no GC root each."))
      .def("__enter__", [](py::object self) {
            auto& s = self.cast<PyReadScope&>();
            if (s.entered) throw colors::InvalidArgumentError("a ReadScope is entered once; make another");
            read_scope_enter();
            s.entered = true;
            s.thread = pthread_self();
            return self;
          })
      .def("__exit__", [](PyReadScope& s, py::object, py::object, py::object) {
            if (!s.entered || s.exited) throw colors::InvalidArgumentError("this ReadScope is not open");
            if (pthread_equal(s.thread, pthread_self()) == 0)
              throw colors::InvalidArgumentError(
                  "a ReadScope is exited on the thread that entered it (it ended with that thread)");
            s.exited = true;
            read_scope_exit();
            return false;
          });
  m.def("read_scope", [] { return PyReadScope{}; });
  m.def("in_read_scope", [] { return in_read_scope_here(); });
  m.def("_borrowed_count", [] { return borrowed_count(); });
}

}  // namespace colors_py
