// Transactions for Python (libshared/src/transaction.hpp): the Transaction context manager that
// colors_shm.transaction() returns, the retry loop of colors_shm.atomically(), in_transaction().
// The field paths that must take the transactional route inside one are in classes.cpp; every
// container, repository and generic-object operation goes through libshared, which is
// transactional already.
//
// Invariants (everything here runs with the GIL):
//  * tx_state.hpp's: a thread whose libshared transaction runs is counted in g_tx_threads
//    (sync_count() after every begin, commit and rollback, also when they throw).
//  * A Transaction object ends at most the level it began, on the thread that began it, and only
//    while that level is the innermost one (check_usable); so the binding never commits or rolls
//    back a level it does not own, and an inner transaction left open is reported, not ended.
//  * A conflict wait releases the GIL (the wait hooks of sync.cpp), and so does the backoff
//    between attempts: the thread holding the object may be another Python thread of this process.
#include <chrono>
#include <cmath>
#include <string>

#include "common.hpp"
#include "segment.hpp"
#include "tx_state.hpp"

namespace colors_py {

int g_tx_threads = 0;

namespace {

namespace cd = colors::detail;

thread_local bool t_counted = false;  // this thread is counted in g_tx_threads

void sync_count() {
  const bool in = cd::in_transaction();
  if (in != t_counted) {
    t_counted = in;
    g_tx_threads += in ? 1 : -1;
  }
}

// Begins (or joins) this thread's transaction; returns the depth of the new level.
int begin(std::int64_t timeout_ns) {
  ensure_attached();
  try {
    cd::tx_begin(timeout_ns);
  } catch (...) {
    sync_count();
    throw;
  }
  sync_count();
  return cd::tx_depth();
}

// Ends the innermost level: commits it, or rolls it back.
void end(bool commit) {
  try {
    if (commit) cd::tx_commit();
    else cd::tx_rollback();
  } catch (...) {
    sync_count();
    throw;
  }
  sync_count();
}

// Rolls back every level from the innermost down to `depth` (inclusive); the levels inside it
// (left open by mistake) doom the transaction as they go, which the rollback of `depth` completes
// if it is the outermost.
void unwind_to(int depth) {
  while (cd::in_transaction() && cd::tx_depth() >= depth) end(false);
}

std::int64_t monotonic_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Seconds (int or float, > 0) -> ns; None -> 0 (no timeout).
std::int64_t timeout_ns_arg(const py::object& timeout) {
  if (timeout.is_none()) return 0;
  PyObject* t = timeout.ptr();
  if (PyBool_Check(t) || (!PyFloat_Check(t) && !PyLong_Check(t)))
    throw py::type_error(std::string("timeout must be a number of seconds or None, not ") + Py_TYPE(t)->tp_name);
  const double s = PyFloat_AsDouble(t);
  if (s == -1.0 && PyErr_Occurred()) throw py::error_already_set();
  if (std::isnan(s) || s <= 0)
    throw colors::InvalidArgumentError("a transaction's timeout must be a number of seconds > 0, or None");
  if (s > 9.0e9) return 0;  // ~285 years: none
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(s * 1e9)));
}

// ---- Transaction ----

struct PyTransaction {
  enum State { kNew, kOpen, kEnded };
  std::int64_t timeout_ns = 0;  // 0: none
  State state = kNew;
  unsigned long thread = 0;     // PyThread_get_thread_ident() of the thread that began it
  int depth = 0;                // its level (1: the outermost)
  std::int64_t started_ns = 0;

  PyTransaction() = default;
  PyTransaction(const PyTransaction&) = delete;
  PyTransaction& operator=(const PyTransaction&) = delete;

  // Dropped while still open (entered by hand and never ended): rolled back, as a C++
  // colors::Transaction that goes out of scope, when that is still this object's level on its
  // own thread; otherwise left alone (the thread's transaction is not this object's to end).
  ~PyTransaction() {
    if (state != kOpen || thread != PyThread_get_thread_ident() || !cd::in_transaction() || cd::tx_depth() != depth)
      return;
    state = kEnded;
    try {
      end(false);
    } catch (...) {
    }
  }

  void check_usable(const char* what) const {
    if (state == kNew)
      throw colors::InvalidArgumentError(std::string("cannot ") + what +
                                         ": this transaction was not begun (use it in a with statement)");
    if (state == kEnded) throw colors::InvalidArgumentError(std::string("cannot ") + what + ": this transaction already ended");
    if (thread != PyThread_get_thread_ident())
      throw colors::InvalidArgumentError(std::string("cannot ") + what +
                                         " a transaction from a thread other than the one that began it");
    const int d = cd::tx_depth();
    if (d > depth)
      throw colors::InvalidArgumentError(std::string("cannot ") + what + " this transaction: an inner transaction is still open");
    if (d < depth)
      throw colors::InvalidArgumentError(std::string("cannot ") + what +
                                         " this transaction: the transaction of its thread ended without it");
  }

  void enter() {
    if (state != kNew)
      throw colors::InvalidArgumentError(
          "a transaction object is used for one transaction: call colors_shm.transaction() again for the next one");
    depth = begin(timeout_ns);
    thread = PyThread_get_thread_ident();
    started_ns = monotonic_ns();
    state = kOpen;
  }

  void commit() {
    check_usable("commit");
    state = kEnded;
    // libshared checks the deadline where a transaction waits or reads much; a transaction that
    // did neither is held to its timeout here, at its commit.
    if (depth == 1 && timeout_ns > 0 && monotonic_ns() - started_ns > timeout_ns) {
      end(false);
      throw colors::TransactionAbortedError("the transaction ran longer than its timeout (" +
                                            std::to_string(static_cast<double>(timeout_ns) / 1e9) +
                                            " s) and was rolled back instead of committed");
    }
    end(true);
  }

  void rollback() {
    check_usable("roll back");
    state = kEnded;
    end(false);
  }

  // The with statement's exit: commits on a normal exit, rolls back when the block raised (the
  // exception then propagates). Nothing to do when the block ended the transaction itself.
  bool exit(const py::object& exc_type) {
    if (state == kEnded) return false;
    if (exc_type.is_none()) commit();
    else rollback();
    return false;
  }
};

void backoff(int attempt) {
  {
    GilRelease r;
    cd::transaction_backoff(attempt);
  }
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();  // Ctrl-C between attempts
}

// colors_shm.atomically's loop (colors.hpp's atomically, with the Python callable).
py::object atomically(py::object fn, py::tuple args, py::object kwargs, int retries) {
  if (!PyCallable_Check(fn.ptr()))
    throw py::type_error(std::string("atomically() takes a callable, not ") + Py_TYPE(fn.ptr())->tp_name);
  if (retries < 0) throw colors::InvalidArgumentError("atomically(): retries must be >= 0");
  if (!kwargs.is_none() && !PyDict_Check(kwargs.ptr())) throw py::type_error("atomically(): kwargs must be a dict");
  PyObject* conflict = error_type(colors::ErrorCode::kTransactionConflict);
  // Inside an enclosing transaction fn joins it and a conflict goes to the outermost: a flat
  // transaction cannot retry a part of itself.
  const bool nested = cd::in_transaction();
  for (int attempt = 0;; ++attempt) {
    const int depth = begin(0);
    if (!nested && attempt >= cd::kEscalateAttempt) cd::tx_escalate();
    PyObject* r = PyObject_Call(fn.ptr(), args.ptr(), kwargs.is_none() ? nullptr : kwargs.ptr());
    if (r == nullptr) {
      PyObject *et, *ev, *tb;
      PyErr_Fetch(&et, &ev, &tb);
      const bool retry = !nested && attempt < retries && PyErr_GivenExceptionMatches(et, conflict);
      try {
        unwind_to(depth);
      } catch (...) {
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(tb);
        throw;
      }
      if (!retry) {
        PyErr_Restore(et, ev, tb);
        throw py::error_already_set();
      }
      Py_XDECREF(et);
      Py_XDECREF(ev);
      Py_XDECREF(tb);
      backoff(attempt + 1);
      continue;
    }
    py::object result = py::reinterpret_steal<py::object>(r);
    const int now = cd::tx_depth();
    if (now != depth) {
      if (now > depth) {
        unwind_to(depth);
        throw colors::InvalidArgumentError(
            "the function given to atomically() left an inner transaction open; the whole transaction was rolled back");
      }
      throw colors::InvalidArgumentError("the function given to atomically() ended the transaction atomically() began");
    }
    try {
      end(true);
    } catch (const colors::TransactionConflictError&) {
      if (nested || attempt >= retries) throw;
      backoff(attempt + 1);
      continue;
    }
    return result;
  }
}

}  // namespace

void reset_tx_count_after_fork() { g_tx_threads = t_counted ? 1 : 0; }

void init_transactions(py::module_& m) {
  sealed(py::class_<PyTransaction>(m, "Transaction",
                            "A transaction (colors_shm.transaction()): a context manager that begins it on entry, "
                            "commits on a normal exit and rolls back when the block raises."))
      .def("__enter__", [](py::object self) {
            self.cast<PyTransaction&>().enter();
            return self;
          })
      .def("__exit__", [](PyTransaction& t, py::object exc_type, py::object, py::object) { return t.exit(exc_type); })
      .def("commit", &PyTransaction::commit,
           "Commits now (the outermost level publishes everything; an inner one just ends). The rest of the "
           "with block then runs outside this transaction. Raises TransactionConflictError or "
           "TransactionAbortedError (the transaction is then rolled back), InvalidArgumentError on misuse.")
      .def("rollback", &PyTransaction::rollback,
           "Rolls back now (an inner level dooms the whole transaction). The rest of the with block then runs "
           "outside this transaction.")
      .def_property_readonly("active", [](const PyTransaction& t) { return t.state == PyTransaction::kOpen; },
                             "True between the start of the with block and the commit or rollback.")
      .def_property_readonly("timeout", [](const PyTransaction& t) -> py::object {
            if (t.timeout_ns == 0) return py::none();
            return py::float_(static_cast<double>(t.timeout_ns) / 1e9);
          }, "The timeout in seconds, or None.")
      .def("__repr__", [](const PyTransaction& t) {
            const char* s = t.state == PyTransaction::kNew ? "not begun" : t.state == PyTransaction::kOpen ? "active" : "ended";
            return std::string("<colors_shm.Transaction ") + s + ">";
          });

  m.def("transaction", [](py::object timeout) {
        auto t = std::make_unique<PyTransaction>();
        t->timeout_ns = timeout_ns_arg(timeout);
        return t;
      }, py::arg("timeout") = py::none());
  m.def("in_transaction", [] { return cd::in_transaction(); });
  m.def("_transaction_depth", [] { return cd::tx_depth(); });
  m.def("_atomically", &atomically, py::arg("fn"), py::arg("args"), py::arg("kwargs"), py::arg("retries"));
}

}  // namespace colors_py
