// Remote procedure calls between processes attached to one colors heap: arguments and results are
// shared objects, so nothing is serialized. The transport every binding builds on.
//
//   // server process                              // client process
//   colors::rpc::Server srv("calc");               colors::rpc::Client calc("calc");
//   while (auto call = srv.next())                 colors::List args = colors::new_list();
//     call->run([](const std::string& method,      args.append(2); args.append(3);
//                  const colors::List& args) {     colors::Value r = calc.call("add", args);  // 5
//       return colors::rpc::Outcome::success(
//           args.get(0).as_int() + args.get(1).as_int());
//     });
//
// A call is a shared Request object (class "colors.rpc.Request": method, args, result,
// error_type, error_message, state) handed to the server through the endpoint's queue (a channel);
// the server writes the result into the same object and flips `state`; the caller spins on it for
// the spin budget (COLORS_SPIN_NS, or per client), then blocks on a futex over that word.
// Endpoints are named; one live server process serves an endpoint at a time, with any number of
// threads calling next(). If the server process dies, pending and later calls fail with
// UnavailableError within one wait slice; if a caller dies, its request is finished by the server
// and then reclaimed by the collector like any garbage.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "colors/colors.hpp"

namespace colors::rpc {

// Method name of a batch request: args are [method, args] pairs, run in order by the server; the
// result is a list of per-call outcomes [true, value] or [false, error_type, error_message].
inline constexpr std::string_view kBatchMethod = "colors.rpc.batch";

// The result of running one call on the server side.
struct Outcome {
  bool ok = true;
  Value value;
  std::string error_type, error_message;
  static Outcome success(Value v) { return Outcome{true, std::move(v), {}, {}}; }
  static Outcome failure(std::string type, std::string message) {
    return Outcome{false, Value(), std::move(type), std::move(message)};
  }
};

// Runs one call: method name and arguments in, outcome out. A handler may also throw; a
// colors::Error or std::exception becomes a failure with its type name and message.
using Handler = std::function<Outcome(const std::string& method, const List& args)>;

// A request taken from the endpoint queue by a server thread.
class Call {
 public:
  Call() = default;
  // Move-only: one object answers a request. A moved-from Call answers nothing.
  Call(Call&& o) noexcept : req_(std::move(o.req_)), method_(std::move(o.method_)), finished_(o.finished_) {
    o.finished_ = true;
  }
  Call& operator=(Call&& o) noexcept {
    if (this != &o) {
      drop();
      req_ = std::move(o.req_);
      method_ = std::move(o.method_);
      finished_ = o.finished_;
      o.finished_ = true;
    }
    return *this;
  }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;
  // A call destroyed unanswered fails ("colors.rpc.Dropped"), so that its caller does not wait
  // for a reply that will never come.
  ~Call() { drop(); }

  const std::string& method() const { return method_; }
  List args() const;
  bool is_batch() const { return method_ == kBatchMethod; }
  // Completes the call (exactly one of these, once; later ones are ignored). reject: the call is
  // not run at all (its server is going away); the caller gets UnavailableError. A reply that
  // throws (the result could not be stored) leaves the call open: fail it, or let it be dropped.
  // fail and reject complete the call even on a full heap: the caller then gets
  // RemoteError("colors::OutOfMemoryError", ...) or an UnavailableError with a default message.
  void reply(const Value& result);
  void fail(std::string_view error_type, std::string_view message);
  void reject(std::string_view message);
  // Runs the call (or every call of a batch, in order) through `h` and completes it.
  void run(const Handler& h);
  const Object& request() const { return req_; }

 private:
  friend class Server;
  void drop() noexcept;
  Object req_;
  std::string method_;
  bool finished_ = false;
};

// Serves endpoint `name` from this process (registers it; InvalidArgumentError if another live
// process serves it). Requests queued for a server that died are failed at registration.
class Server {
 public:
  explicit Server(const std::string& name, std::uint32_t queue_capacity = 1024);
  ~Server();  // unregisters; queued calls and later calls fail with UnavailableError
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  // The next request (poll for spin_ns, < 0: COLORS_RPC_SERVER_SPIN_NS or 20 x COLORS_SPIN_NS up to
  // 2 ms, then block); nullopt on timeout.
  std::optional<Call> next(std::int64_t timeout_ms = -1, std::int64_t spin_ns = -1);
  const std::string& name() const { return name_; }

 private:
  void reject_queued(const std::string& message);  // every call still queued
  void check_attachment() const;  // NotAttachedError once the attachment that made it is closed
  std::string name_;
  Repository repo_;
  Channel queue_;
  Value endpoint_;
  std::uint64_t epoch_ = 0;  // the attachment whose records repo_ and queue_ point at
};

// An outstanding call.
class Pending {
 public:
  Pending() = default;
  bool ready() const;
  // Waits for the outcome: the result, or RemoteError (the handler failed), TimeoutError
  // (timeout_ms >= 0 passed; the call is abandoned), UnavailableError (the server died).
  Value get(std::int64_t timeout_ms = -1);
  const Object& request() const { return req_; }

 private:
  friend class Client;
  Object req_;
  std::uint32_t server_client_ = 0, server_slot_ = 0;
  const void* repo_ = nullptr;  // the endpoint's repository record
  Value endpoint_obj_;          // the Endpoint the call was sent to
  std::int64_t spin_ns_ = -1;
  std::string endpoint_;
};

class Client {
 public:
  // UnavailableError when no live process serves `name`.
  explicit Client(const std::string& name);
  // timeout_ms >= 0 bounds the whole call: the wait for a slot in a full request queue, then the
  // wait for the result (TimeoutError when either passes it).
  Value call(std::string_view method, const List& args, std::int64_t timeout_ms = -1);
  // Sends the call. The request queue is bounded: while it is full the caller waits for a slot
  // (back-pressure), at most timeout_ms when that is >= 0 (TimeoutError, nothing was sent).
  Pending call_async(std::string_view method, const List& args, std::int64_t timeout_ms = -1);
  // One request running every (method, args) in order; the Pending's result is the list of
  // outcomes (see kBatchMethod); outcomes() splits it.
  Pending call_batch(const std::vector<std::pair<std::string, List>>& calls);
  static std::vector<Outcome> outcomes(const Value& batch_result);
  // Spin budget of this client's waits for results (< 0: COLORS_SPIN_NS / the default).
  void set_spin_ns(std::int64_t ns) { spin_ns_ = ns; }
  const std::string& name() const { return name_; }
  bool server_alive() const;

 private:
  void refresh();  // re-reads the endpoint when its cached server is gone or unregistered
  bool current() const;  // the cached server still lives and still serves the endpoint
  void check_attachment() const;  // NotAttachedError once the attachment that made it is closed
  std::string name_;
  Repository repo_;
  Channel queue_;
  Value endpoint_obj_;
  std::uint32_t server_client_ = 0, server_slot_ = 0;
  std::int64_t spin_ns_ = -1;
  std::vector<std::pair<std::string, Value>> method_names_;  // shared strings reused per method
  std::uint64_t epoch_ = 0;  // the attachment whose records repo_ and queue_ point at
  // Guards the cached endpoint and method names: one Client may be used by several threads.
  std::shared_ptr<std::mutex> mu_ = std::make_shared<std::mutex>();
};

}  // namespace colors::rpc
