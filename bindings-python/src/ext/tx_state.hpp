// Whether the calling thread runs a transaction, as the extension's hot paths ask it (field reads
// and writes of classes.cpp). libshared's answer is a thread-local (transaction.hpp's t_tx), and
// in this dlopen'ed module every thread-local access is a __tls_get_addr call; so the extension
// first reads a plain global that is 0 whenever no thread of the process runs a transaction.
//
// Invariant (transactions.cpp keeps it; everything with the GIL): every Python thread whose
// libshared transaction is running (t_tx != nullptr) is counted in g_tx_threads. A thread is
// counted from its outermost begin until the binding sees that its transaction ended; one that
// ended without the binding seeing it (its thread exited inside a transaction) stays counted:
// that only sends the other threads to the thread-local check, never past it.
#pragma once
#include "transaction.hpp"

namespace colors_py {

extern int g_tx_threads;  // GIL-guarded

// REQUIRES: the GIL.
inline bool in_tx() { return g_tx_threads != 0 && colors::detail::in_transaction(); }

}  // namespace colors_py
