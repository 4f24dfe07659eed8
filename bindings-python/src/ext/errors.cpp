// colors::Error -> Python exceptions. Every class derives from colors_shm.SharedMemoryError; where
// Python has a matching builtin exception the class derives from it too, so ordinary `except
// IndexError` / `except TypeError` code keeps working on shared containers.
#include <array>

#include "common.hpp"

namespace colors_py {
namespace {

constexpr int kCodes = static_cast<int>(colors::ErrorCode::kNotDurable) + 1;
std::array<PyObject*, kCodes> g_types{};  // owned forever (module lifetime = process lifetime)
PyObject* g_remote_factory = nullptr;     // colors_shm.rpc._remote_error(type, message) -> exception

PyObject* make_type(py::module_& m, const char* name, PyObject* base1, PyObject* base2, const char* doc) {
  std::string qual = std::string("colors_shm.") + name;
  PyObject* bases = base2 ? PyTuple_Pack(2, base1, base2) : PyTuple_Pack(1, base1);
  if (bases == nullptr) throw py::error_already_set();
  PyObject* t = PyErr_NewExceptionWithDoc(qual.c_str(), doc, bases, nullptr);
  Py_DECREF(bases);
  if (t == nullptr) throw py::error_already_set();
  m.add_object(name, py::reinterpret_borrow<py::object>(t));
  return t;
}

void set(colors::ErrorCode c, PyObject* t) { g_types[static_cast<int>(c)] = t; }

}  // namespace

PyObject* error_type(colors::ErrorCode c) {
  int i = static_cast<int>(c);
  return (i >= 0 && i < kCodes && g_types[i]) ? g_types[i] : g_types[0];
}

void raise_colors_error(const colors::Error& e) {
  if (e.code() == colors::ErrorCode::kInterrupted && take_detach_interrupt()) {
    PyErr_SetString(g_types[static_cast<int>(colors::ErrorCode::kNotAttached)],
                    "detach() closed the attachment while this call was waiting");
    return;
  }
  if (e.code() == colors::ErrorCode::kInterrupted && restore_interrupt_exception()) return;
  if (e.code() == colors::ErrorCode::kRemote && g_remote_factory != nullptr) {
    const auto& re = static_cast<const colors::RemoteError&>(e);
    PyObject* t = PyUnicode_DecodeUTF8(re.remote_type().data(), static_cast<Py_ssize_t>(re.remote_type().size()), "replace");
    PyObject* msg = PyUnicode_DecodeUTF8(re.remote_message().data(), static_cast<Py_ssize_t>(re.remote_message().size()), "replace");
    PyObject* exc = (t && msg) ? PyObject_CallFunctionObjArgs(g_remote_factory, t, msg, nullptr) : nullptr;
    Py_XDECREF(t);
    Py_XDECREF(msg);
    if (exc == nullptr) return;  // the factory's own error stands
    if (PyExceptionInstance_Check(exc)) {
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc)), exc);
      Py_DECREF(exc);
      return;
    }
    Py_DECREF(exc);  // not an exception: the plain RemoteError below
  }
  int i = static_cast<int>(e.code());
  PyObject* t = (i >= 0 && i < kCodes && g_types[i]) ? g_types[i] : g_types[0];
  PyErr_SetString(t, e.what());
}

void init_errors(py::module_& m) {
  using C = colors::ErrorCode;
  PyObject* base = make_type(m, "SharedMemoryError", PyExc_Exception, nullptr,
                             "Base class of every error of colors_shm (the shared-memory heap).");
  set(C::kGeneric, base);
  set(C::kNotAttached, make_type(m, "NotAttachedError", base, nullptr,
                                 "Not attached to a colors server, or a proxy outlived detach()."));
  set(C::kServerGone, make_type(m, "ServerGoneError", base, nullptr,
                                "The colors server is not running, shut down or died."));
  set(C::kVersionMismatch, make_type(m, "VersionMismatchError", base, nullptr,
                                     "Client and server were built from different colors versions."));
  set(C::kAddressInUse, make_type(m, "AddressInUseError", base, nullptr,
                                  "The segment's fixed address range is already mapped in this process."));
  set(C::kRefused, make_type(m, "RefusedError", base, nullptr, "The server refused the connection."));
  set(C::kOutOfMemory, make_type(m, "OutOfMemoryError", base, nullptr,
                                 "The shared heap (objects or classes space) is exhausted."));
  set(C::kTypeMismatch, make_type(m, "TypeMismatchError", base, PyExc_TypeError,
                                  "A value of the wrong type for shared memory (e.g. a private list: use copy_to)."));
  set(C::kOverflow, make_type(m, "SharedOverflowError", base, PyExc_OverflowError,
                              "A number does not fit its shared type (shared integers are 64-bit signed)."));
  set(C::kOwnerDied, make_type(m, "OwnerDiedError", base, nullptr,
                               "A process died holding this monitor; the guarded state may be half-updated."));
  set(C::kNotOwner, make_type(m, "NotOwnerError", base, PyExc_RuntimeError,
                              "wait()/notify_all() on a monitor this thread does not hold."));
  set(C::kIndex, make_type(m, "SharedIndexError", base, PyExc_IndexError, "Index out of range of a shared list."));
  set(C::kKey, make_type(m, "SharedKeyError", base, PyExc_KeyError, "Missing key or field."));
  set(C::kInvalidArgument, make_type(m, "InvalidArgumentError", base, PyExc_ValueError,
                                     "Bad argument (name too long, invalid UTF-8, ...)."));
  set(C::kInterrupted, make_type(m, "SharedInterruptedError", base, nullptr, "A blocking call was interrupted."));
  set(C::kCorrupt, make_type(m, "CorruptHeapError", base, nullptr, "The heap verifier found a broken invariant."));
  set(C::kTimeout, make_type(m, "CallTimeoutError", base, PyExc_TimeoutError, "An rpc call did not complete in time."));
  set(C::kRemote, make_type(m, "RemoteError", base, nullptr,
                            "The remote handler of an rpc call failed (remote_type, remote_message)."));
  set(C::kUnavailable, make_type(m, "UnavailableError", base, nullptr,
                                 "No live process serves the rpc endpoint, or its server died during the call."));
  set(C::kTransactionConflict,
      make_type(m, "TransactionConflictError", base, nullptr,
                "Another transaction holds what this transaction needs (past the bounded wait, or a deadlock), or "
                "changed what it read. The transaction is rolled back when it ends; atomically() retries it."));
  set(C::kTransactionAborted,
      make_type(m, "TransactionAbortedError", base, nullptr,
                "The transaction was rolled back: its timeout passed, its undo log outgrew COLORS_TX_MAX_WRITES, "
                "an earlier conflict or an inner rollback doomed it, or its attachment ended."));
  set(C::kNotDurable,
      make_type(m, "DurabilityError", base, nullptr,
                "The transaction committed (everyone sees it) but the server, running with --durability full, could "
                "not put it on disk (e.g. a full disk); the next successful checkpoint or durable commit covers it."));
  // Called once, by colors_shm.rpc at import.
  m.def("_register_remote_error_factory", [](py::object f) {
    if (g_remote_factory != nullptr) throw colors::InvalidArgumentError("_register_remote_error_factory: already registered");
    if (!PyCallable_Check(f.ptr())) throw py::type_error("_register_remote_error_factory takes a callable");
    g_remote_factory = f.release().ptr();
  });

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const colors::Error& e) {
      raise_colors_error(e);
    }
  });
}

}  // namespace colors_py
