// Every failure of the C++ API is one of these exceptions. Messages say what happened and what to
// do about it; the bindings translate each class to their language's own exception.
#pragma once
#include <stdexcept>
#include <string>
#include <utility>

namespace colors {

enum class ErrorCode {
  kGeneric,
  kNotAttached,       // no segment mapped in this process
  kServerGone,        // the server shut down or died
  kVersionMismatch,   // client and server speak different protocol/layout versions
  kAddressInUse,      // the fixed address range is already mapped in this process
  kRefused,           // the server refused the connection (credentials, capacity)
  kOutOfMemory,       // objects or classes space exhausted
  kTypeMismatch,      // value of the wrong shared type
  kOverflow,          // a number does not fit the target type
  kOwnerDied,         // a process died holding a monitor
  kNotOwner,          // monitor operation by a thread that does not hold it
  kIndex,             // index out of range
  kKey,               // missing key / missing field
  kInvalidArgument,   // bad input (name too long, invalid UTF-8, ...)
  kInterrupted,       // a blocking wait was interrupted by the caller's interrupt hook
  kCorrupt,           // the heap verifier found a broken invariant
  kTimeout,           // a call did not complete in time (rpc)
  kRemote,            // the remote handler of a call failed (rpc): type and message in the error
  kUnavailable,       // no live process serves the endpoint, or it died during the call (rpc)
  kTransactionConflict,  // another transaction holds what this one needs, or changed what it read
  kTransactionAborted,   // the transaction was rolled back (timeout, too large, doomed earlier)
  kNotDurable,           // committed in memory, but the server could not make it durable (--durability full)
};

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& what) : std::runtime_error(what), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

#define COLORS_DEFINE_ERROR(Name, Code)                                              \
  class Name : public Error {                                                        \
   public:                                                                           \
    explicit Name(const std::string& what) : Error(ErrorCode::Code, what) {}         \
  };

COLORS_DEFINE_ERROR(NotAttachedError, kNotAttached)
COLORS_DEFINE_ERROR(ServerGoneError, kServerGone)
COLORS_DEFINE_ERROR(VersionMismatchError, kVersionMismatch)
COLORS_DEFINE_ERROR(AddressInUseError, kAddressInUse)
COLORS_DEFINE_ERROR(RefusedError, kRefused)
COLORS_DEFINE_ERROR(OutOfMemoryError, kOutOfMemory)
COLORS_DEFINE_ERROR(TypeMismatchError, kTypeMismatch)
COLORS_DEFINE_ERROR(OverflowError, kOverflow)
COLORS_DEFINE_ERROR(OwnerDiedError, kOwnerDied)
COLORS_DEFINE_ERROR(NotOwnerError, kNotOwner)
COLORS_DEFINE_ERROR(IndexError, kIndex)
COLORS_DEFINE_ERROR(KeyError, kKey)
COLORS_DEFINE_ERROR(InvalidArgumentError, kInvalidArgument)
COLORS_DEFINE_ERROR(InterruptedError, kInterrupted)
COLORS_DEFINE_ERROR(CorruptHeapError, kCorrupt)
COLORS_DEFINE_ERROR(TimeoutError, kTimeout)
COLORS_DEFINE_ERROR(UnavailableError, kUnavailable)
// A transaction conflicted with another (or was part of a deadlock); it is rolled back and may be
// retried (colors::atomically does).
COLORS_DEFINE_ERROR(TransactionConflictError, kTransactionConflict)
// A transaction was aborted for another reason (its timeout, its log limit, an earlier error in
// it, its attachment ending); it is rolled back.
COLORS_DEFINE_ERROR(TransactionAbortedError, kTransactionAborted)
// A transaction committed (other threads and processes see it) but, under colors-server
// --durability full, the server could not put it on disk (a full disk, a failed write): it is not
// durable yet. The next successful checkpoint or durable commit covers it.
COLORS_DEFINE_ERROR(DurabilityError, kNotDurable)

// The handler of a remote call failed: remote_type() is the error's type in the server's
// language (e.g. "ValueError", "java.lang.IllegalStateException"), remote_message() its message.
class RemoteError : public Error {
 public:
  RemoteError(std::string type, std::string message)
      : Error(ErrorCode::kRemote, type + ": " + message), type_(std::move(type)), message_(std::move(message)) {}
  const std::string& remote_type() const noexcept { return type_; }
  const std::string& remote_message() const noexcept { return message_; }

 private:
  std::string type_, message_;
};

#undef COLORS_DEFINE_ERROR

}  // namespace colors
