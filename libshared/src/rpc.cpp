// Remote procedure calls over the shared heap (include/colors/rpc.hpp).
//
// Objects (ordinary user objects, so the collector traces them like any other):
//   colors.rpc.Request   {method: string, args: list, result: any, error_type: string,
//                         error_message: string, state: integer}
//   colors.rpc.Endpoint  {server_client: integer, server_slot: integer, server_pid: integer}
// Names: the repository "colors.rpc.endpoint:<name>" holds the Endpoint of the live server; the
// channel "colors.rpc.queue:<name>" carries Requests to it.
//
// The state word of a Request (a small integer in its `state` slot) is the completion protocol:
//   kQueued -> kWaiting      caller, CAS, just before it blocks (so the server knows to wake it)
//   kQueued|kWaiting -> kDone|kFailed|kRejected|kFailedNoMemory   server, exchange, after
//                            writing result/error fields (kRejected: the call never ran, its caller
//                            gets UnavailableError; kFailedNoMemory: no field was stored, the heap
//                            is full); if it replaced kWaiting it wakes the futex on the word
//   kQueued|kWaiting -> kCancelled      caller, CAS, on timeout (the server's later exchange
//                            overwrites it harmlessly; nobody waits any more)
// Invariants:
//  * result/error fields are written before the exchange (release) that publishes kDone/kFailed,
//    and read after the load (acquire) that sees it.
//  * The futex word is the low half of the 8-byte state slot (little-endian x86-64): the small
//    integer encoding (value << 4 | 1) keeps every state distinct in those 32 bits.
//  * A waiting caller re-checks the server's liveness (its client slot still holds the client id
//    recorded in the Endpoint) at least every kSliceNs, so a dead server fails calls promptly.
#include "colors/rpc.hpp"
#include "transaction.hpp"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <typeinfo>
#include <vector>

#include "colors/config.hpp"
#include "channel.hpp"
#include "classes.hpp"
#include "futex.hpp"
#include "layout.hpp"
#include "objects.hpp"
#include "segment.hpp"
#include "session.hpp"
#include "word.hpp"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the request futex word is the low half of a slot");

namespace colors::rpc {

namespace {

using detail::Word;

// kFailedNoMemory: the call failed and not even its error fit in the heap (fail() could not
// store the strings); the state word alone carries that, so a full heap never leaves a caller
// waiting for its timeout.
enum State : std::int64_t {
  kQueued = 0, kWaiting = 1, kDone = 2, kFailed = 3, kCancelled = 4, kRejected = 5, kFailedNoMemory = 6
};
bool finished_state(std::int64_t st) {
  return st == kDone || st == kFailed || st == kRejected || st == kFailedNoMemory;
}

constexpr std::int64_t kSliceNs = 10'000'000;  // liveness re-check while blocked

// How long a server thread polls its queue before it sleeps: longer than a caller's own spin,
// because a caller that had to sleep takes a futex wake-up (~70 us here) to send its next call,
// and a server that slept meanwhile makes every following call pay two wake-ups. Read once from
// COLORS_RPC_SERVER_SPIN_NS; default 20 x the general budget (COLORS_SPIN_NS), at most 2 ms.
std::int64_t server_spin_ns() {
  static const std::int64_t budget = [] {
    if (const char* s = std::getenv("COLORS_RPC_SERVER_SPIN_NS"); s != nullptr && *s != '\0') {
      char* end = nullptr;
      long long v = std::strtoll(s, &end, 10);
      if (end != nullptr && *end == '\0' && v >= 0) return static_cast<std::int64_t>(v);
    }
    return std::min<std::int64_t>(20 * detail::spin_budget_ns(), 2'000'000);
  }();
  return budget;
}

// Classes and resolved fields, per attachment (class records live as long as the segment).
struct Schema {
  detail::Metadata* meta = nullptr;
  std::uint32_t client = 0;
  Class request, endpoint;
  Field method, args, result, error_type, error_message, state;
  Field server_client, server_slot, server_pid;
};

std::mutex g_schema_mu;
// The schema of the current attachment: immutable once published. A new attachment publishes a
// new one; old ones are never freed (a thread may still read one; a few hundred bytes each).
std::atomic<const Schema*> g_schema{nullptr};
// Every schema ever made, so that the retired ones stay reachable (not reported as leaks).
// Never destroyed: a thread may still read a schema while the process exits. GUARDED_BY g_schema_mu.
std::vector<const Schema*>* g_all_schemas = new std::vector<const Schema*>;

const Schema& schema() {
  detail::Metadata* m = detail::current_meta();
  detail::check_server_state(m);
  std::uint32_t me = detail::current_client_id();
  const Schema* cur = g_schema.load(std::memory_order_acquire);
  if (cur != nullptr && cur->meta == m && cur->client == me) return *cur;
  std::lock_guard<std::mutex> g(g_schema_mu);
  cur = g_schema.load(std::memory_order_acquire);
  if (cur != nullptr && cur->meta == m && cur->client == me) return *cur;
  auto* s = new Schema;
  s->meta = m;
  s->client = me;
  s->request = define_class("colors.rpc.Request", {{"method", TypeKind::kString, ""},
                                                   {"args", TypeKind::kList, ""},
                                                   {"result", TypeKind::kAny, ""},
                                                   {"error_type", TypeKind::kString, ""},
                                                   {"error_message", TypeKind::kString, ""},
                                                   {"state", TypeKind::kInteger, ""}});
  s->endpoint = define_class("colors.rpc.Endpoint", {{"server_client", TypeKind::kInteger, ""},
                                                     {"server_slot", TypeKind::kInteger, ""},
                                                     {"server_pid", TypeKind::kInteger, ""}});
  s->method = Field(s->request, "method");
  s->args = Field(s->request, "args");
  s->result = Field(s->request, "result");
  s->error_type = Field(s->request, "error_type");
  s->error_message = Field(s->request, "error_message");
  s->state = Field(s->request, "state");
  s->server_client = Field(s->endpoint, "server_client");
  s->server_slot = Field(s->endpoint, "server_slot");
  s->server_pid = Field(s->endpoint, "server_pid");
  g_all_schemas->push_back(s);
  g_schema.store(s, std::memory_order_release);
  return *s;
}

std::string endpoint_repo(const std::string& name) { return "colors.rpc.endpoint:" + name; }
std::string queue_name(const std::string& name) { return "colors.rpc.queue:" + name; }

// The name as the caller gave it is checked here, so that an error names the endpoint's limits,
// not those of the repository and channel names it is part of.
void check_endpoint_name(const std::string& name) {
  const std::size_t room = kMaxNameLength - std::max(endpoint_repo("").size(), queue_name("").size());
  if (name.empty() || name.size() > room)
    throw InvalidArgumentError("rpc endpoint name must be 1 to " + std::to_string(room) + " bytes long, got " +
                               std::to_string(name.size()));
  detail::check_name(name, "rpc endpoint name");  // UTF-8, no NUL
}

// The state slot of a request (its class is always the Request class: nobody evolves it).
std::atomic<Word>* state_slot(const Object& req) {
  Word o = req.raw();
  const detail::FieldInfo* f = detail::find_field(detail::class_of(o), "state");
  if (f == nullptr) throw CorruptHeapError("an rpc request object lacks its state field");
  return detail::field_slot(o, *f);
}
std::atomic<std::uint32_t>* futex_word(std::atomic<Word>* slot) {
  return reinterpret_cast<std::atomic<std::uint32_t>*>(slot);
}
std::int64_t state_of(Word w) { return detail::is_small_int(w) ? detail::small_value(w) : -1; }

// Whether the repository record `repo` still holds the Endpoint `ep` (a raw compare: `ep` is
// held by the caller, so its word cannot be reused meanwhile).
bool still_registered(const void* repo, const Value& ep) {
  const auto* r = static_cast<const detail::RepositoryRecord*>(repo);
  return r != nullptr && r->root.load(std::memory_order_acquire) == ep.raw();
}

bool client_alive(detail::Metadata* m, std::uint32_t id, std::uint32_t slot) {
  if (id == 0 || slot >= kMaxClients) return false;
  const detail::ClientSlot& cs = m->clients[slot];
  return cs.state.load(std::memory_order_acquire) == static_cast<std::uint32_t>(detail::ClientState::kActive) &&
         cs.client_id.load(std::memory_order_acquire) == id;
}

// Completes a request: fields first, then the state exchange (see the protocol above).
void finish(const Object& req, std::int64_t st) {
  std::atomic<Word>* s = state_slot(req);
  Word old = s->exchange(detail::make_small(st), std::memory_order_acq_rel);
  if (state_of(old) == kWaiting) detail::futex_wake_all(futex_word(s));
}

std::string type_name_of(const std::exception& e) {
  if (auto* ce = dynamic_cast<const Error*>(&e)) {
    switch (ce->code()) {
      case ErrorCode::kTypeMismatch: return "colors::TypeMismatchError";
      case ErrorCode::kOverflow: return "colors::OverflowError";
      case ErrorCode::kIndex: return "colors::IndexError";
      case ErrorCode::kKey: return "colors::KeyError";
      case ErrorCode::kInvalidArgument: return "colors::InvalidArgumentError";
      case ErrorCode::kRemote: return static_cast<const RemoteError*>(ce)->remote_type();
      default: return "colors::Error";
    }
  }
  return typeid(e).name();
}

Outcome run_one(const Handler& h, const std::string& method, const List& args) {
  try {
    return h(method, args);
  } catch (const RemoteError& e) {
    return Outcome::failure(e.remote_type(), e.remote_message());
  } catch (const std::exception& e) {
    return Outcome::failure(type_name_of(e), e.what());
  }
}

}  // namespace

// ---- Call ----

// A request object of a closed attachment: its word means nothing in the current one.
static void expect_current(const Object& req, const char* what) {
  if (!req.is_current()) throw NotAttachedError(std::string(what) + " belongs to a closed attachment");
}

List Call::args() const {
  expect_current(req_, "this rpc request");
  Value a = req_.get(schema().args);
  return a.is_null() ? new_list() : List(a);
}

// Each completion writes its fields first and marks the call finished only once they are
// stored: a store that throws (heap full, detached) leaves the call open for fail() or drop().
void Call::reply(const Value& result) {
  if (finished_) return;
  expect_current(req_, "this rpc request");
  const Schema& s = schema();
  req_.set(s.result, result);
  finished_ = true;
  finish(req_, kDone);
}

// A failure must reach its caller even on a full heap (the usual reason a call fails late): when
// the error strings cannot be allocated, the state word alone says so (kFailedNoMemory). Other
// errors (detached meanwhile) still leave the call open.
void Call::fail(std::string_view error_type, std::string_view message) {
  if (finished_) return;
  expect_current(req_, "this rpc request");
  const Schema& s = schema();
  std::int64_t st = kFailed;
  try {
    req_.set(s.error_type, Value(error_type));
    req_.set(s.error_message, Value(message));
  } catch (const OutOfMemoryError&) {
    st = kFailedNoMemory;
  }
  finished_ = true;
  finish(req_, st);
}

// The message is best effort for the same reason: the caller's UnavailableError has a default.
void Call::reject(std::string_view message) {
  if (finished_) return;
  expect_current(req_, "this rpc request");
  try {
    req_.set(schema().error_message, Value(message));
  } catch (const OutOfMemoryError&) {
  }
  finished_ = true;
  finish(req_, kRejected);
}

void Call::drop() noexcept {
  if (finished_ || req_.is_null()) return;
  try {
    if (!is_attached() || !req_.is_current()) return;  // the attachment that took it is gone
    fail("colors.rpc.Dropped", "the server dropped the call without replying");
  } catch (...) {
    // Heap full or detached meanwhile: the caller's timeout or the server-death check remains.
  }
  finished_ = true;
}

void Server::reject_queued(const std::string& message) {
  while (auto v = queue_.try_receive()) {
    Call c;
    c.req_ = Object(*v);
    c.reject(message);
  }
}

void Call::run(const Handler& h) {
  try {
    List a = args();
    if (!is_batch()) {
      Outcome o = run_one(h, method_, a);
      if (o.ok) reply(o.value);
      else fail(o.error_type, o.error_message);
      return;
    }
    // A batch: each [method, args] in order; one outcome per call.
    List results = new_list(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      List item(a.get(i));
      std::string m = item.get(0).as_string();
      Value ia = item.get(1);
      Outcome o = run_one(h, m, ia.is_null() ? new_list() : List(ia));
      // The handler is the binding's code (Python, Java), which may have detached: every list here
      // belongs to the closed attachment then (the failure below refuses too, and reaches run's
      // caller as NotAttachedError).
      expect_current(req_, "this rpc request");
      List entry = new_list(3);
      entry.append(o.ok);
      if (o.ok) {
        entry.append(o.value);
      } else {
        entry.append(Value(o.error_type));
        entry.append(Value(o.error_message));
      }
      results.append(entry);
    }
    reply(results);
  } catch (const std::exception& e) {
    // The request itself was malformed (or the heap is full): report it to the caller.
    fail(type_name_of(e), e.what());
  }
}

// ---- Server ----

// Raw record pointers (repo_, queue_) are only valid in the attachment that made them: after a
// detach, another server's segment may be mapped at the same address.
void Server::check_attachment() const {
  if (epoch_ != detail::attachment_epoch())
    throw NotAttachedError("rpc server of endpoint '" + name_ + "' belongs to a closed attachment");
}
void Client::check_attachment() const {
  if (epoch_ != detail::attachment_epoch())
    throw NotAttachedError("rpc client of endpoint '" + name_ + "' belongs to a closed attachment: connect again");
}

Server::Server(const std::string& name, std::uint32_t queue_capacity) : name_(name) {
  check_endpoint_name(name);
  if (queue_capacity < 1 || queue_capacity > detail::kMaxChannelCapacity)
    throw InvalidArgumentError("rpc queue capacity must be between 1 and " +
                               std::to_string(detail::kMaxChannelCapacity) + ", got " + std::to_string(queue_capacity));
  const Schema& s = schema();
  epoch_ = detail::attachment_epoch();
  repo_ = repository(endpoint_repo(name));
  queue_ = channel(queue_name(name), queue_capacity);
  Monitor mon(repo_);  // registrations of one endpoint are serialised by its repository monitor
  Value cur = repo_.get();
  if (!cur.is_null()) {
    Object ep(cur);
    auto id = static_cast<std::uint32_t>(ep.get(s.server_client).as_int());
    auto slot = static_cast<std::uint32_t>(ep.get(s.server_slot).as_int());
    if (client_alive(s.meta, id, slot))
      throw InvalidArgumentError("rpc endpoint '" + name + "' is already served by process " +
                                 std::to_string(ep.get(s.server_pid).as_int()) + " (one server process per endpoint)");
  }
  // Requests left by a server that died were never handled: their callers have been told (or
  // will be) that the server is gone, so they must not run now.
  reject_queued("the previous server of endpoint '" + name + "' died before handling this call");
  Object ep = new_object(s.endpoint);
  ep.set(s.server_client, Value(static_cast<long long>(detail::current_client_id())));
  ep.set(s.server_slot, Value(static_cast<long long>(detail::current_client_slot())));
  ep.set(s.server_pid, Value(static_cast<long long>(::getpid())));
  repo_.set(ep);
  endpoint_ = ep;
}

Server::~Server() {
  try {
    if (!is_attached() || epoch_ != detail::attachment_epoch()) return;  // its records are not ours
    {
      Monitor mon(repo_);
      if (!repo_.get().same_object(endpoint_)) return;  // a successor took over
      repo_.set(Value());
    }
    // Calls queued but not taken will never run: tell their callers now.
    reject_queued("the server of endpoint '" + name_ + "' stopped before handling this call");
  } catch (...) {
    // Detached or server gone: nothing to unregister.
  }
}

// The queue is a public channel: any attached process can put anything in it. Only objects of
// this attachment's Request class are calls; anything else is dropped here (nobody can be waiting
// for it: a caller waits on the state of a Request it sent), so that a stray or forged message
// never reaches a serving thread as an exception. A Request without a method or arguments is
// failed at once. The timeout counts from the first receive.
std::optional<Call> Server::next(std::int64_t timeout_ms, std::int64_t spin_ns) {
  const Schema& s = schema();
  check_attachment();
  constexpr std::int64_t kForeverMs = INT64_MAX / 4'000'000;  // beyond this, no deadline (no overflow)
  const std::int64_t deadline =
      timeout_ms < 0 || timeout_ms > kForeverMs ? -1 : detail::monotonic_ns() + timeout_ms * 1'000'000;
  for (;;) {
    std::int64_t left = -1;
    if (deadline >= 0) left = std::max<std::int64_t>(0, (deadline - detail::monotonic_ns()) / 1'000'000);
    std::optional<Value> v = queue_.receive(left, spin_ns < 0 ? server_spin_ns() : spin_ns);
    if (!v) return std::nullopt;
    if (v->kind() != TypeKind::kObject || !(class_of(*v) == s.request)) continue;  // not a call
    Call c;
    c.req_ = Object(*v);
    Value m = c.req_.get(s.method);
    if (m.is_null() || c.req_.get(s.args).is_null()) {
      c.fail("colors.rpc.BadRequest", "an rpc request without a method name or an argument list");
      continue;
    }
    c.method_ = m.as_string();
    return c;
  }
}

// ---- Client ----

Client::Client(const std::string& name) : name_(name) {
  check_endpoint_name(name);
  schema();
  epoch_ = detail::attachment_epoch();
  repo_ = repository(endpoint_repo(name));
  queue_ = channel(queue_name(name), 1024);
  refresh();
  if (server_client_ == 0) throw UnavailableError("no process serves rpc endpoint '" + name + "'");
}

void Client::refresh() {
  const Schema& s = schema();
  Value cur = repo_.get();
  server_client_ = server_slot_ = 0;
  endpoint_obj_ = cur;
  if (cur.is_null()) return;
  Object ep(cur);
  auto id = static_cast<std::uint32_t>(ep.get(s.server_client).as_int());
  auto slot = static_cast<std::uint32_t>(ep.get(s.server_slot).as_int());
  if (client_alive(s.meta, id, slot)) {
    server_client_ = id;
    server_slot_ = slot;
  }
}

bool Client::current() const {
  return client_alive(schema().meta, server_client_, server_slot_) && still_registered(repo_.address(), endpoint_obj_);
}

bool Client::server_alive() const {
  check_attachment();
  std::lock_guard<std::mutex> g(*mu_);
  return current();
}

Value Client::call(std::string_view method, const List& args, std::int64_t timeout_ms) {
  if (timeout_ms < 0) return call_async(method, args).get(-1);
  const std::int64_t start = detail::monotonic_ns();
  Pending p = call_async(method, args, timeout_ms);
  const std::int64_t spent_ms = (detail::monotonic_ns() - start) / 1'000'000;
  return p.get(std::max<std::int64_t>(0, timeout_ms - spent_ms));
}

Pending Client::call_async(std::string_view method, const List& args, std::int64_t timeout_ms) {
  detail::tx_refuse("a remote call");
  const Schema& s = schema();
  check_attachment();
  Pending p;
  Value mname;
  {
    std::lock_guard<std::mutex> g(*mu_);
    if (!current()) {
      refresh();
      if (server_client_ == 0) throw UnavailableError("no live process serves rpc endpoint '" + name_ + "'");
    }
    // Method names repeat: their shared strings are made once per client (immutable, so sharing
    // them between requests is safe).
    for (const auto& [n, v] : method_names_)
      if (n == method) mname = v;
    if (mname.is_null()) {
      if (method_names_.size() >= 64) method_names_.clear();
      method_names_.emplace_back(std::string(method), Value(method));
      mname = method_names_.back().second;
    }
    p.server_client_ = server_client_;
    p.server_slot_ = server_slot_;
    p.repo_ = repo_.address();
    p.endpoint_obj_ = endpoint_obj_;
  }
  Object req = new_object(s.request);
  req.set(s.method, mname);
  req.set(s.args, args);
  req.set(s.state, Value(static_cast<long long>(kQueued)));
  auto sent_to_live_server = [&] {
    return client_alive(s.meta, p.server_client_, p.server_slot_) && still_registered(p.repo_, p.endpoint_obj_);
  };
  // The queue is bounded: a full queue blocks the caller (back-pressure) until the server keeps
  // up, or fails the call if the server dies or stops meanwhile, or its timeout passes.
  constexpr std::int64_t kForeverMs = INT64_MAX / 4'000'000;  // beyond this, no deadline (no overflow)
  const std::int64_t deadline =
      timeout_ms < 0 || timeout_ms > kForeverMs ? -1 : detail::monotonic_ns() + timeout_ms * 1'000'000;
  for (;;) {
    std::int64_t slice_ms = kSliceNs / 1'000'000;
    if (deadline >= 0) slice_ms = std::min(slice_ms, std::max<std::int64_t>(0, (deadline - detail::monotonic_ns()) / 1'000'000));
    if (queue_.send(req, slice_ms)) break;
    if (!sent_to_live_server()) throw UnavailableError("the server of rpc endpoint '" + name_ + "' died or stopped");
    if (deadline >= 0 && detail::monotonic_ns() >= deadline)
      throw TimeoutError("rpc call '" + std::string(method) + "' to endpoint '" + name_ + "' was not queued within " +
                         std::to_string(timeout_ms) + " ms: the endpoint's request queue stayed full");
  }
  p.req_ = req;
  p.spin_ns_ = spin_ns_;
  p.endpoint_ = name_;
  return p;
}

Pending Client::call_batch(const std::vector<std::pair<std::string, List>>& calls) {
  detail::tx_refuse("a remote call");
  List items = new_list(calls.size());
  for (const auto& [m, a] : calls) {
    List item = new_list(2);
    item.append(Value(std::string_view(m)));
    item.append(a);
    items.append(item);
  }
  return call_async(kBatchMethod, items);
}

std::vector<Outcome> Client::outcomes(const Value& batch_result) {
  std::vector<Outcome> out;
  List l(batch_result);
  for (std::size_t i = 0; i < l.size(); ++i) {
    List e(l.get(i));
    if (e.get(0).as_bool()) out.push_back(Outcome::success(e.get(1)));
    else out.push_back(Outcome::failure(e.get(1).as_string(), e.get(2).as_string()));
  }
  return out;
}

// ---- Pending ----

bool Pending::ready() const {
  expect_current(req_, "this rpc call");
  std::int64_t st = state_of(state_slot(req_)->load(std::memory_order_acquire));
  return finished_state(st);
}

Value Pending::get(std::int64_t timeout_ms) {
  const Schema& s = schema();
  expect_current(req_, "this rpc call");
  std::atomic<Word>* slot = state_slot(req_);
  auto finished = finished_state;
  std::int64_t st = state_of(slot->load(std::memory_order_acquire));
  if (!finished(st)) {
    const std::int64_t start = detail::monotonic_ns();
    const std::int64_t deadline = timeout_ms < 0 ? INT64_MAX : start + timeout_ms * 1'000'000;
    const std::int64_t spin = spin_ns_ < 0 ? detail::spin_budget_ns() : spin_ns_;
    const std::int64_t spin_end = std::min(deadline, start + spin);
    // Spin: one cache line polled, no syscalls.
    detail::Poller poller;
    for (std::int64_t now = start; now < spin_end; now = detail::monotonic_ns()) {
      st = state_of(slot->load(std::memory_order_acquire));
      if (finished(st)) break;
      poller.poll(now);
    }
    // Block: announce the waiter, then sleep on the state word in slices.
    while (!finished(st)) {
      Word expect = detail::make_small(kQueued);
      slot->compare_exchange_strong(expect, detail::make_small(kWaiting), std::memory_order_acq_rel);
      Word cur = slot->load(std::memory_order_acquire);
      st = state_of(cur);
      if (finished(st)) break;
      std::int64_t now = detail::monotonic_ns();
      if (now >= deadline) {
        Word w = cur;
        if (slot->compare_exchange_strong(w, detail::make_small(kCancelled), std::memory_order_acq_rel)) {
          throw TimeoutError("rpc call '" + req_.get(s.method).as_string() + "' to endpoint '" + endpoint_ +
                             "' did not complete within " + std::to_string(timeout_ms) + " ms");
        }
        continue;  // it finished meanwhile
      }
      detail::futex_wait(futex_word(slot), static_cast<std::uint32_t>(cur), std::min(kSliceNs, deadline - now));
      st = state_of(slot->load(std::memory_order_acquire));
      if (finished(st)) break;
      if (!client_alive(s.meta, server_client_, server_slot_))
        throw UnavailableError("the server of rpc endpoint '" + endpoint_ + "' died during the call");
      if (!still_registered(repo_, endpoint_obj_)) {
        // Stopped (or replaced): a call it took still completes; one left in the queue was failed
        // by the server's shutdown. Give either a moment to land, then report.
        detail::futex_wait(futex_word(slot), static_cast<std::uint32_t>(slot->load(std::memory_order_acquire)), kSliceNs);
        st = state_of(slot->load(std::memory_order_acquire));
        if (finished(st)) break;
        throw UnavailableError("the server of rpc endpoint '" + endpoint_ + "' stopped during the call");
      }
      detail::check_wait_interrupts(s.meta);  // InterruptedError / ServerGoneError
    }
  }
  if (st == kFailedNoMemory) {
    throw RemoteError("colors::OutOfMemoryError", "the server of rpc endpoint '" + endpoint_ +
                                                      "' failed the call and could not store its error: shared heap "
                                                      "exhausted");
  }
  if (st == kFailed || st == kRejected) {
    Value t = req_.get(s.error_type), msg = req_.get(s.error_message);
    std::string text = msg.is_null() ? "" : msg.as_string();
    if (st == kRejected) {  // never ran: the transport's error
      throw UnavailableError(text.empty() ? "the server of rpc endpoint '" + endpoint_ + "' rejected the call" : text);
    }
    throw RemoteError(t.is_null() ? "unknown" : t.as_string(), text);
  }
  return req_.get(s.result);
}

}  // namespace colors::rpc
