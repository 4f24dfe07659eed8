// colors_shm.read_scope(): the Python face of read scopes. The borrowed proxies themselves live in
// classes.cpp (read_scope_enter / read_scope_exit, "read scopes: borrowed user proxies"), next to
// the handles they are made of.
#include "common.hpp"

namespace colors_py {

namespace {

// One `with` block: enters at __enter__, exits at __exit__, once each.
struct PyReadScope {
  bool entered = false;
  bool exited = false;
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
            return self;
          })
      .def("__exit__", [](PyReadScope& s, py::object, py::object, py::object) {
            if (!s.entered || s.exited) throw colors::InvalidArgumentError("this ReadScope is not open");
            s.exited = true;
            read_scope_exit();
            return false;
          });
  m.def("read_scope", [] { return PyReadScope{}; });
  m.def("in_read_scope", [] { return in_read_scope_here(); });
  m.def("_borrowed_count", [] { return borrowed_count(); });
}

}  // namespace colors_py
