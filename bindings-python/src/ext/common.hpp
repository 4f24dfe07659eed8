// Shared declarations of the _colors_shm extension (one file per binding area: errors.cpp,
// values.cpp, containers.cpp, sync.cpp, module.cpp).
//
// Lifetime rule: every shared reference held by Python is a GC root of this process: a
// colors::Value inside a `Ref`, or the pooled root slot of a user proxy's hidden handle
// (classes.cpp). Container proxies (pure Python, _proxies.py) own exactly one Ref in their `_ref`
// slot; an identity table (values.cpp's wrap: live_other_proxy / track_other_proxy) maps the raw
// word to the live proxy, whose hidden handle erases the entry when the proxy dies, and user
// proxies have a table of their own (classes.cpp), so one shared object has at most one live
// proxy.
#pragma once
#include <pybind11/pybind11.h>

#include <colors/colors.hpp>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "proxy_cache.hpp"

namespace colors::detail {
class Rooted;  // roots.hpp
}

namespace py = pybind11;

namespace colors_py {

// ---- attachment (module.cpp) ----
// Bumped at every attach and detach done through the binding: a Ref from an older generation
// refers to a mapping that is gone.
extern std::uint64_t g_generation;
void ensure_attached();  // implicit attach on first use (COLORS_SOCKET or the default socket)

// Applied to every pybind11 class of the extension (`sealed(py::class_<T>(m, ...))`): instances
// cannot be pickled or copied (copyreg would call pybind11's instance base type, which cannot make
// one: module.cpp guards that type too), cannot change class (all pybind11 instances share one
// layout, so CPython would let `x.__class__ = Other` through, and Other's destructor would then
// free what x does not hold), and cannot be made by `T.__new__(T)` alone (the C++ object, built by
// the constructor, would never exist, and the first method call read uninitialised memory). All
// three raise TypeError.
template <class C>
C sealed(C cls) {
  auto refuse = [](py::handle self, py::args, py::kwargs) -> py::object {
    throw py::type_error("cannot pickle or copy '" + std::string(Py_TYPE(self.ptr())->tp_name) + "' objects");
  };
  cls.def("__reduce_ex__", refuse);
  cls.def("__reduce__", refuse);
  // A data descriptor in the class's own dict (setattr on a class would change the class's class).
  py::cpp_function get(
      [](py::handle self) { return py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(Py_TYPE(self.ptr()))); },
      py::is_method(cls));
  py::cpp_function set(
      [](py::handle self, py::handle) {
        throw py::type_error("__class__ assignment is not supported for '" + std::string(Py_TYPE(self.ptr())->tp_name) + "' objects");
      },
      py::is_method(cls));
  py::object prop = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(&PyProperty_Type))(get, set);
  auto* tp = reinterpret_cast<PyTypeObject*>(cls.ptr());
  if (PyDict_SetItemString(tp->tp_dict, "__class__", prop.ptr()) != 0) throw py::error_already_set();
  // `T(...)` goes through the type's tp_new slot, then the constructor; `T.__new__(T)` looks up
  // `__new__` in the dict. An entry put there directly (not through type's setattr, which would
  // re-point the slot at it) refuses the second and leaves the first as it was. A Python subclass
  // made later finds this `__new__` for its own slot: for it the entry calls the original.
  newfunc original = tp->tp_new;
  py::cpp_function refuse_new(
      [tp, original](py::handle cls, py::args args, py::kwargs kwargs) -> py::object {
        if (cls.ptr() != reinterpret_cast<PyObject*>(tp)) {
          if (!PyType_Check(cls.ptr()) || !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls.ptr()), tp))
            throw py::type_error(std::string(tp->tp_name) + ".__new__(X): X is not a subtype of " + tp->tp_name);
          PyObject* made = original(reinterpret_cast<PyTypeObject*>(cls.ptr()), args.ptr(), kwargs.ptr());
          if (made == nullptr) throw py::error_already_set();
          return py::reinterpret_steal<py::object>(made);
        }
        throw py::type_error("cannot create '" + std::string(tp->tp_name) +
                             "' objects with __new__ alone: call the class (its constructor builds the object)");
      });
  py::object as_static = py::reinterpret_steal<py::object>(PyStaticMethod_New(refuse_new.ptr()));
  if (!as_static || PyDict_SetItemString(tp->tp_dict, "__new__", as_static.ptr()) != 0) throw py::error_already_set();
  PyType_Modified(tp);
  return cls;
}

// ---- references (values.cpp) ----
struct ListMemo;  // read_memo.hpp

struct Ref {
  std::variant<colors::Value, colors::List, colors::Map, colors::Set> v;
  std::uint64_t gen = 0;
  colors::TypeKind kind = colors::TypeKind::kNull;
  std::unique_ptr<ListMemo> memo;  // a list's elements as last iterated (read_memo.hpp), or null

  explicit Ref(colors::Value&& val);
  ~Ref();
  const colors::Value& value() const;
  void check() const;  // NotAttachedError when the proxy outlived its attachment
  colors::List& list();
  colors::Map& map();
  colors::Set& set();
};

// Python -> shared. Scalars (None, bool, int, float, str, bytes, bytearray) are copied in;
// proxies give their object; anything else throws TypeMismatchError telling to use copy_to.
colors::Value to_value(py::handle obj);
// A Python int (not a bool) stored into a float field: the float that holds it exactly, as Java's
// binding widens; SharedOverflowError for an int no float holds (2**53 + 1 would become 2**53)
// or one beyond the float range (classes.cpp).
double int_for_float_field(PyObject* value);
// Same check without allocating: throws exactly what to_value would for an unstorable value.
void check_storable(py::handle obj);
// Shared -> Python: scalars as plain Python values, binaries as bytes, containers as proxies.
py::object from_value(colors::Value&& v);
// copy_to without the proxy: the shared copy of a private value (containers and instances deep).
colors::Value copy_in(py::handle obj);
// The Ref of a proxy (or of a bare _Ref), nullptr for anything else.
Ref* ref_of(py::handle obj);
// Installs `methods` (a null-terminated table of C methods whose self is a proxy) on the registered
// proxy class of `kind` (list or sorted map), `cls`, replacing its Python ones; returns the class.
// TypeError for any other class: on another proxy class they would break every instance of it.
PyTypeObject* install_fast_methods(py::handle cls, PyMethodDef* methods, colors::TypeKind kind);
// Forgets every cached proxy (detach).
void clear_identity_cache();
// Heap pressure (classes.cpp's relieve_proxy_cache): takes the root slot out of a container
// proxy's _Ref when nothing but the proxy holds the _Ref, leaving the _Ref stale, and returns the
// slot (still holding the object: the caller empties it); nullptr (nothing done) otherwise. Runs
// no Python code and calls nothing of libshared (no root_release: heap.hpp's hook rules).
std::atomic<std::uint64_t>* take_unshared_ref_root(PyObject* proxy);

// ---- user classes (classes.cpp) ----
// The shared object of a proxy of a mapped user class (into *out unless null); false if `obj` is
// not one. Throws NotAttachedError for a proxy from an older attachment.
bool user_value_of(py::handle obj, colors::Value* out);
// The proxy of a user object: the cached one, or a new instance of the proxy class its class maps
// to. Sets *generic (and returns nothing) when the class maps to no Python class.
py::object wrap_user_object(colors::Value&& v, bool* generic);
// The live proxy of the user object at word `w` (a new reference), or nullptr. Needs no root of
// `w`: a live proxy holds one. REQUIRES: the GIL, held since `w` was loaded from a slot of an
// object the caller keeps alive (then `w` was that proxy's object when loaded).
PyObject* live_user_proxy(std::uint64_t w);
// Shared -> Python for a word the caller holds rooted in `root` (a slot of this process's root
// table, or nullptr for a non-reference): a new user proxy takes the slot over, anything else
// hands it to the Value it becomes. Saves a second root per user object read from a container.
// `absent`: the caller looked `w` up (live_user_proxy) and found no proxy, holding the GIL since.
py::object from_rooted(std::uint64_t w, std::atomic<std::uint64_t>* root, bool absent = false);
// The Python value of a rooted word libshared returned (containers' and sorted maps' reads),
// through from_rooted. Throws NotAttachedError for a reference of an older attachment: turning
// the earlier items of the same read into proxies ran Python code, which may have detached.
py::object py_of(colors::detail::Rooted&& r);

// A new list or tuple (T: py::list, py::tuple) of n empty items for the caller to fill, hidden
// from the cyclic GC until done(). Making the items may allocate proxies, whose allocation can run
// gc callbacks, and gc.get_objects() there would hand Python code a container with NULL items
// (a crash on first use). Dropped unfinished (an exception), it is freed like any other.
template <class T>
class Unfilled {
 public:
  explicit Unfilled(std::size_t n) : c_(static_cast<py::ssize_t>(n)) { PyObject_GC_UnTrack(c_.ptr()); }
  // Takes a new reference `item` (nullptr: the Python error set, thrown here).
  void set(std::size_t i, PyObject* item) {
    if (item == nullptr) throw py::error_already_set();
    if constexpr (std::is_same_v<T, py::tuple>) PyTuple_SET_ITEM(c_.ptr(), static_cast<py::ssize_t>(i), item);
    else PyList_SET_ITEM(c_.ptr(), static_cast<py::ssize_t>(i), item);
  }
  void set(std::size_t i, py::object&& item) { set(i, item.release().ptr()); }
  // REQUIRES: every item set.
  T done() {
    PyObject_GC_Track(c_.ptr());
    return std::move(c_);
  }

 private:
  T c_;
};
void forget_user_proxies();  // detach
// ---- read scopes (classes.cpp keeps the borrowed proxies; read_scope.cpp is the Python API) ----
// Enters (exits) this thread's read scope; nested scopes count, the outermost one acts. The
// outermost exit roots every borrowed proxy still alive (promote on escape) before the native
// scope ends. enter: NotAttachedError, InvalidArgumentError inside a transaction.
void read_scope_enter();
void read_scope_exit();
bool in_read_scope_here();
std::size_t borrowed_count();  // borrowed proxies alive in this thread's open scope (tests)
// The proxy of the user object `w`, read inside this thread's open scope: its live proxy, or a new
// borrowed one (no root). Sets *generic (returns nullptr) when its class maps to no Python class.
PyObject* borrowed_user_proxy(std::uint64_t w, bool* generic);
// The open read scope's epoch (changes at every outermost entry; 0: no scope open), and the check
// that the scope open with `epoch` still is (InvalidArgumentError otherwise), for code that read
// words in a scope and runs Python code before it is done with them.
std::uint64_t read_scope_epoch();
void require_read_scope_epoch(std::uint64_t epoch);
// How copy_to stores an instance of a private class: the shared class version for its declared
// fields plus `extras` (attributes the class does not declare), and the fields resolved in it.
struct UserLayout {
  colors::Class cls;
  std::vector<const colors::detail::FieldInfo*> infos;  // the fields resolved in `cls`
  std::vector<py::object> names;  // field names as str, in field order
  std::size_t declared = 0;       // the first `declared` fields are the class's own
};
const UserLayout& user_layout(PyTypeObject* type, const std::vector<std::pair<std::string, colors::TypeKind>>& extras);
// user_layout(type, {}) if it is already made for this attachment, else nullptr: runs no Python code.
const UserLayout* cached_user_layout(PyTypeObject* type);
colors::TypeKind kind_for_value(PyObject* v);
std::size_t user_cache_size();  // both identity tables
// ---- the proxy cache (proxy_cache.hpp; proxy_cache.cpp is the Python API) ----
std::size_t proxy_cache_capacity();
// Empties the cache, giving it `capacity` entries, and returns what it held, for the caller to
// release (proxy_cache.hpp's release) where running Python code is safe. Throws std::bad_alloc.
std::vector<ProxyCache::Entry> take_proxy_cache(std::size_t capacity);
// Releases every cached proxy now (may run Python code).
void drop_proxy_cache();
// Lets go of the shared strings kept for strs written again (classes.cpp). REQUIRES: the GIL.
void drop_string_write_cache();
// libshared's heap-pressure hook for this thread (no Python code; REQUIRES: the GIL).
void relieve_proxy_cache() noexcept;
// Starts the heap-pressure watcher thread of this attachment if none was started (proxy_cache.cpp;
// runs Python code).
void start_pressure_watcher();
// The identity table of container and generic SharedObject proxies (values.cpp's wrap): the live
// proxy of `w` (a new reference) or nullptr; and tracking a new proxy, whose hidden handle slot
// at `handle_off` must be empty (it gets a handle that erases the entry when the proxy dies).
PyObject* live_other_proxy(std::uint64_t w);
void track_other_proxy(std::uint64_t w, PyObject* proxy, Py_ssize_t handle_off);
// Hides the object slot at `off` of class `cls` (-1: none of its own) from tp_traverse, so that
// gc.get_referents never exposes a proxy's handle (classes.cpp).
void hide_handle_slot(PyTypeObject* cls, Py_ssize_t off);

// ---- errors (errors.cpp) ----
// Inside a catch block of raw C-API code: sets the Python error for the exception in flight, as
// pybind11's translators would.
void set_python_error();
void raise_colors_error(const colors::Error& e);
// The Python exception class of an error code (borrowed; lives as long as the process).
PyObject* error_type(colors::ErrorCode c);

// ---- blocking calls (sync.cpp) ----
// While alive: the GIL is released and this thread's interrupt hook is installed, so a pending
// signal (Ctrl-C) makes the blocking libshared call throw InterruptedError; the error translator
// then re-raises the Python exception the signal handler raised (KeyboardInterrupt).
//
// Blocking calls and detach() (sync.cpp): detach() must not unmap the segment while a thread is
// inside a blocking libshared call, nor leave such a thread waiting forever.
// Invariants (all with the GIL): g_in_flight counts the threads between Prepare() and ~Prepare()
// (inside a Blocking section); no Blocking section starts while a detach() is closing (it raises
// NotAttachedError at once); while closing, the interrupt hook of every blocked thread returns true
// at its next slice (<= kInterruptSliceNs, 50 ms), so each wait throws and its thread leaves;
// detach() unmaps only once g_in_flight is 0, with the GIL held from that check on, so no thread
// is inside libshared's blocking code when the mapping goes.
// Releases the GIL for its lifetime; the binding's only way to release it (not
// py::gil_scoped_release). At interpreter exit CPython ends a thread that takes the GIL back
// during finalization with pthread_exit, whose forced unwind through a C++ destructor (noexcept)
// aborts the process. So once the exit began (begin_interpreter_exit, the binding's last atexit
// handler), any thread but the exiting one parks here for good instead of taking the GIL back:
// the process is ending, and such a thread has left libshared already.
class GilRelease {
 public:
  GilRelease();
  ~GilRelease();
  GilRelease(const GilRelease&) = delete;
  GilRelease& operator=(const GilRelease&) = delete;

 private:
  PyThreadState* state_;
};

class Blocking {
 public:
  Blocking() = default;

 private:
  struct Prepare {  // runs first, with the GIL: counts the call in flight (or refuses it while
                    // detach() is closing), drops a stale remembered exception, installs the hook
    Prepare();
    ~Prepare();  // runs last, with the GIL again (release_ is destroyed first): the call left
    Prepare(const Prepare&) = delete;
    Prepare& operator=(const Prepare&) = delete;
  } prepare_;
  GilRelease release_;
};
// At interpreter exit (atexit, before finalization), with the GIL: every blocking call of other
// threads is interrupted (they raise, then park in GilRelease), and this waits, without the GIL,
// up to timeout_ms until each thread inside a Blocking section has parked.
void begin_interpreter_exit(std::int64_t timeout_ms);
// detach(): refuses new blocking calls, wakes the blocked ones (they raise NotAttachedError) and
// waits, with the GIL released, until none is left in flight. Returns with the GIL held; the
// caller unmaps, then calls end_closing().
void begin_closing();
void end_closing();
bool detach_closing();  // a detach() is closing (any thread; no GIL needed)
// True (once) if the last InterruptedError of this thread came from a detach() closing the
// attachment; the translator then raises NotAttachedError.
bool take_detach_interrupt();
// In a fork child: the parent's other threads (and their calls in flight) do not exist here.
void reset_blocking_after_fork();
// Takes the exception remembered by the interrupt hook of this thread (PyErr_Restore); returns
// false if there is none.
bool restore_interrupt_exception();

std::int64_t timeout_ms(const py::object& timeout);  // None -> -1; seconds (float) -> ms

void init_errors(py::module_& m);
void init_values(py::module_& m);
void init_containers(py::module_& m);
void init_sorted_map(py::module_& m);
void init_sync(py::module_& m);
void init_classes(py::module_& m);
void init_rpc(py::module_& m);
void init_transactions(py::module_& m);
void init_read_scope(py::module_& m);
void init_proxy_cache(py::module_& m);
// In a fork child: only the forking thread exists, so only it may count in g_tx_threads
// (tx_state.hpp).
void reset_tx_count_after_fork();

}  // namespace colors_py
