// The rpc transport (include/colors/rpc.hpp) between real processes on a real colors-server:
// calls and results as shared objects, handler failures, timeouts, several clients and server
// threads, batches (order and sharing), a server killed mid-call and a client killed mid-call.
// Children are forked before the test process attaches, never return into Catch2 (_exit), and
// every wait is bounded.
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "client_process.hpp"
#include "colors/colors.hpp"
#include "colors/rpc.hpp"
#include "server_process.hpp"

using namespace colors;
using colors::test::eventually;
using colors::test::fork_client;
using colors::test::ServerConfig;
using colors::test::ServerProcess;
using colors::test::TempDir;
using colors::test::wait_child;

namespace {

struct Flags {  // anonymous shared memory between the test and its children
  std::atomic<int> ready{0};
  std::atomic<int> stop{0};
  std::atomic<int> handled{0};
  std::atomic<int> in_handler{0};
  std::atomic<int> go{1};  // a server child registers once this is 1
};

struct SharedFlags {
  Flags* f;
  SharedFlags() {
    void* mem = ::mmap(nullptr, sizeof(Flags), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    REQUIRE(mem != MAP_FAILED);
    f = new (mem) Flags;
  }
  ~SharedFlags() { ::munmap(f, sizeof(Flags)); }
  Flags* operator->() { return f; }
};

struct Kids {
  std::vector<pid_t> pids;
  ~Kids() {
    for (pid_t p : pids) {
      ::kill(p, SIGKILL);
      wait_child(p, 5000);
    }
  }
  pid_t add(pid_t p) {
    pids.push_back(p);
    return p;
  }
};

struct Fixture {
  TempDir dir;
  ServerConfig cfg = ServerConfig::fresh(dir.path());
  std::unique_ptr<ServerProcess> server;
  Fixture() {
    server = std::make_unique<ServerProcess>(cfg, cfg.args({"--heap-size", "32M"}), dir.path() + "/server.log");
    REQUIRE(server->wait_ready());
  }
  ~Fixture() {
    if (is_attached()) detach();
  }
};

// The test handler: add, concat, boom (fails), slow (sleeps), append (mutates its argument),
// build (returns a list of n new lists, like the benchmark's symmetric methods).
rpc::Outcome handle(const std::string& method, const List& args, Flags* flags) {
  flags->handled.fetch_add(1);
  if (method == "add") return rpc::Outcome::success(Value(args.get(0).as_int() + args.get(1).as_int()));
  if (method == "concat") return rpc::Outcome::success(Value(args.get(0).as_string() + args.get(1).as_string()));
  if (method == "boom") throw InvalidArgumentError("boom: " + args.get(0).as_string());
  if (method == "fail") return rpc::Outcome::failure("demo.Failure", "declined");
  if (method == "slow") {
    flags->in_handler.store(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(args.get(0).as_int()));
    return rpc::Outcome::success(Value(true));
  }
  if (method == "append") {
    List(args.get(0)).append(args.get(1));
    return rpc::Outcome::success(Value(static_cast<long long>(List(args.get(0)).size())));
  }
  if (method == "same") return rpc::Outcome::success(Value(args.get(0).same_object(args.get(1))));
  return rpc::Outcome::failure("colors.rpc.NoSuchMethod", "no method '" + method + "'");
}

// A server child: serves `endpoint` with `threads` threads until flags->stop.
pid_t start_server(const std::string& socket, const std::string& endpoint, Flags* flags, int threads = 1,
                   std::uint32_t queue_capacity = 1024) {
  return fork_client(socket, [=] {
    while (flags->go.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    rpc::Server srv(endpoint, queue_capacity);
    flags->ready.store(1);
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&] {
        while (flags->stop.load() == 0) {
          if (auto call = srv.next(50)) call->run([&](const std::string& m, const List& a) { return handle(m, a, flags); });
        }
      });
    }
    for (auto& t : ts) t.join();
    return 0;
  });
}

// The E that f() throws; the test fails if f returns (another exception fails it too).
template <class E, class F>
E thrown_by(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e;
  }
  FAIL("f() did not throw the expected error");
  throw std::logic_error("unreachable: FAIL throws");
}

List args_of(std::initializer_list<Value> vs) {
  List l = new_list(vs.size());
  for (const Value& v : vs) l.append(v);
  return l;
}

}  // namespace

TEST_CASE("rpc: calls, results, remote failures and unknown endpoints") {
  Fixture fx;
  SharedFlags flags;
  Kids kids;
  kids.add(start_server(fx.cfg.socket, "calc", flags.f));
  REQUIRE(eventually([&] { return flags->ready.load() == 1; }, 10000));
  attach(fx.cfg.socket);

  rpc::Client calc("calc");
  CHECK(calc.call("add", args_of({2, 3})).as_int() == 5);
  CHECK(calc.call("concat", args_of({"co", "lors"})).as_string() == "colors");
  {
    RemoteError e = thrown_by<RemoteError>([&] { calc.call("boom", args_of({"x"})); });
    CHECK(e.remote_type() == "colors::InvalidArgumentError");
    CHECK(e.remote_message() == "boom: x");
  }
  {
    RemoteError e = thrown_by<RemoteError>([&] { calc.call("fail", new_list()); });
    CHECK(e.remote_type() == "demo.Failure");
    CHECK(std::string(e.what()) == "demo.Failure: declined");
  }
  CHECK_THROWS_AS(rpc::Client("nobody"), UnavailableError);

  // Arguments are shared, not copied: the server's append is visible here.
  List target = new_list();
  CHECK(calc.call("append", args_of({target, 7})).as_int() == 1);
  CHECK(target.size() == 1);
  CHECK(target.get(0).as_int() == 7);

  // A second server on the same endpoint is refused while the first lives.
  CHECK_THROWS_AS(rpc::Server("calc"), InvalidArgumentError);
  flags->stop.store(1);
}

TEST_CASE("rpc: timeouts, async calls and batches keep order and sharing") {
  Fixture fx;
  SharedFlags flags;
  Kids kids;
  kids.add(start_server(fx.cfg.socket, "svc", flags.f));
  REQUIRE(eventually([&] { return flags->ready.load() == 1; }, 10000));
  attach(fx.cfg.socket);
  rpc::Client c("svc");

  auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(c.call("slow", args_of({500}), 50), TimeoutError);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(400));
  REQUIRE(eventually([&] { return flags->handled.load() == 1; }, 5000));

  std::vector<rpc::Pending> ps;
  for (int i = 0; i < 20; ++i) ps.push_back(c.call_async("add", args_of({i, 100})));
  for (int i = 0; i < 20; ++i) CHECK(ps[static_cast<std::size_t>(i)].get(10000).as_int() == i + 100);

  List shared = new_list();
  rpc::Pending b = c.call_batch({{"append", args_of({shared, 1})},
                                 {"append", args_of({shared, 2})},
                                 {"boom", args_of({"in batch"})},
                                 {"same", args_of({shared, shared})},
                                 {"append", args_of({shared, 3})}});
  auto outs = rpc::Client::outcomes(b.get(10000));
  REQUIRE(outs.size() == 5);
  CHECK(outs[0].value.as_int() == 1);  // in order: each call sees the previous ones
  CHECK(outs[1].value.as_int() == 2);
  CHECK_FALSE(outs[2].ok);
  CHECK(outs[2].error_message == "boom: in batch");
  CHECK(outs[3].value.as_bool());  // one shared object passed twice stays one object
  CHECK(outs[4].value.as_int() == 3);
  CHECK(shared.size() == 3);
  flags->stop.store(1);
}

TEST_CASE("rpc: a call's timeout bounds its wait for a slot in a full request queue") {
  Fixture fx;
  SharedFlags flags;
  Kids kids;
  kids.add(start_server(fx.cfg.socket, "tiny", flags.f, 1, 1));  // one serving thread, one queued call
  REQUIRE(eventually([&] { return flags->ready.load() == 1; }, 10000));
  attach(fx.cfg.socket);
  rpc::Client c("tiny");

  rpc::Pending busy = c.call_async("slow", args_of({3000}));  // the serving thread sleeps 3 s
  REQUIRE(eventually([&] { return flags->in_handler.load() == 1; }, 5000));
  rpc::Pending queued = c.call_async("add", args_of({1, 2}));  // fills the queue
  auto t0 = std::chrono::steady_clock::now();
  auto e = thrown_by<TimeoutError>([&] { c.call("add", args_of({3, 4}), 200); });
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(1500));
  CHECK(std::string(e.what()).find("request queue stayed full") != std::string::npos);
  t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(c.call_async("add", args_of({5, 6}), 100), TimeoutError);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(1500));
  // Nothing was sent by the calls that timed out: the queue drains to the two real calls.
  CHECK(busy.get(10000).as_bool());
  CHECK(queued.get(10000).as_int() == 3);
  CHECK(c.call("add", args_of({7, 8}), 10000).as_int() == 15);
  CHECK(flags->handled.load() == 3);
  flags->stop.store(1);
}

TEST_CASE("rpc: several client processes against several server threads") {
  Fixture fx;
  SharedFlags flags;
  Kids kids;
  kids.add(start_server(fx.cfg.socket, "multi", flags.f, 3));
  REQUIRE(eventually([&] { return flags->ready.load() == 1; }, 10000));
  constexpr int kClients = 4, kCalls = 500;
  std::vector<pid_t> clients;
  for (int k = 0; k < kClients; ++k) {
    clients.push_back(kids.add(fork_client(fx.cfg.socket, [k] {
      rpc::Client c("multi");
      for (int i = 0; i < kCalls; ++i) {
        List a = new_list(2);
        a.append(k * 100000);
        a.append(i);
        if (c.call("add", a, 10000).as_int() != k * 100000 + i) return 10;
      }
      return 0;
    })));
  }
  for (pid_t p : clients) CHECK(wait_child(p, 120000) == 0);
  CHECK(flags->handled.load() == kClients * kCalls);
  flags->stop.store(1);
}

TEST_CASE("rpc: a server killed mid-call fails pending and later calls promptly") {
  Fixture fx;
  SharedFlags flags, flags2;
  Kids kids;
  pid_t srv = kids.add(start_server(fx.cfg.socket, "fragile", flags.f));
  flags2->go.store(0);
  kids.add(start_server(fx.cfg.socket, "fragile", flags2.f));  // the replacement, forked before we attach
  REQUIRE(eventually([&] { return flags->ready.load() == 1; }, 10000));
  attach(fx.cfg.socket);
  rpc::Client c("fragile");
  rpc::Pending p = c.call_async("slow", args_of({60000}));
  REQUIRE(eventually([&] { return flags->in_handler.load() == 1; }, 10000));
  ::kill(srv, SIGKILL);
  auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(p.get(30000), UnavailableError);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(c.call("add", args_of({1, 2}), 30000), UnavailableError);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));

  // A new server takes the endpoint over; calls work again.
  flags2->go.store(1);
  REQUIRE(eventually([&] { return flags2->ready.load() == 1; }, 10000));
  CHECK(c.call("add", args_of({1, 2}), 10000).as_int() == 3);
  flags2->stop.store(1);
}

TEST_CASE("rpc: a client killed mid-call leaves the server serving, and its request is collected") {
  Fixture fx;
  SharedFlags flags;
  Kids kids;
  kids.add(start_server(fx.cfg.socket, "steady", flags.f));
  REQUIRE(eventually([&] { return flags->ready.load() == 1; }, 10000));
  pid_t victim = kids.add(fork_client(fx.cfg.socket, [] {
    rpc::Client c("steady");
    List big = new_list();
    for (int i = 0; i < 20000; ++i) big.append(i);
    List a = new_list(2);
    a.append(300);
    c.call("slow", a);  // killed while the server sleeps in the handler
    return 0;
  }));
  REQUIRE(eventually([&] { return flags->in_handler.load() == 1; }, 10000));
  ::kill(victim, SIGKILL);
  CHECK(wait_child(victim, 10000) == 128 + SIGKILL);
  attach(fx.cfg.socket);
  rpc::Client c("steady");
  CHECK(c.call("add", args_of({20, 22}), 10000).as_int() == 42);
  collect(30000);
  collect(30000);
  CHECK(gc_stats().objects_freed > 0);
  flags->stop.store(1);
}

TEST_CASE("rpc: a call destroyed unanswered fails its caller at once and a moved call answers once") {
  Fixture fx;
  attach(fx.cfg.socket);
  rpc::Server srv("dropper");
  rpc::Client client("dropper");

  rpc::Pending dropped = client.call_async("x", new_list());
  {
    auto call = srv.next(5000);
    REQUIRE(call);
  }  // destroyed without a reply: a server bug, or a reply that could not be stored
  const auto t0 = std::chrono::steady_clock::now();
  {
    RemoteError e = thrown_by<RemoteError>([&] { dropped.get(5000); });
    CHECK(e.remote_type() == "colors.rpc.Dropped");
  }
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1));  // not the timeout

  rpc::Pending moved_call = client.call_async("y", new_list());
  {
    auto call = srv.next(5000);
    REQUIRE(call);
    rpc::Call moved = std::move(*call);
    call.reset();  // the moved-from Call answers nothing
    CHECK_FALSE(moved_call.ready());
    moved.reply(Value(42));
    moved.fail("late", "ignored");  // a second completion is ignored
  }
  CHECK(moved_call.get(5000).as_int() == 42);
}

TEST_CASE("rpc: a call failed or rejected on a full heap reaches its caller at once") {
  Fixture fx;
  attach(fx.cfg.socket);
  rpc::Server srv("full");
  rpc::Client client("full");
  rpc::Pending failed = client.call_async("x", new_list());
  rpc::Pending rejected = client.call_async("y", new_list());
  auto call_x = srv.next(5000), call_y = srv.next(5000);
  REQUIRE(call_x);
  REQUIRE(call_y);

  // Live data until not even a 1-character string fits: the error strings cannot be stored.
  std::optional<List> filler(new_list());
  std::vector<Value> rest;
  try {
    for (;;) filler->append(new_binary(std::vector<std::uint8_t>(1000, 7)));
  } catch (const OutOfMemoryError&) {
  }
  for (std::size_t size : {1000, 100, 1}) {
    try {
      for (;;) rest.emplace_back(std::string(size, 'x'));
    } catch (const OutOfMemoryError&) {
    }
  }
  REQUIRE_THROWS_AS(Value(std::string("demo.Failure")), OutOfMemoryError);

  const auto t0 = std::chrono::steady_clock::now();
  call_x->fail("demo.Failure", "declined because the heap is full");
  call_y->reject("the server is going away");
  {
    RemoteError e = thrown_by<RemoteError>([&] { failed.get(5000); });
    CHECK(e.remote_type() == "colors::OutOfMemoryError");
    CHECK(e.remote_message().find("shared heap exhausted") != std::string::npos);
    CHECK(e.remote_message().find("'full'") != std::string::npos);
  }
  {
    UnavailableError e = thrown_by<UnavailableError>([&] { rejected.get(5000); });
    CHECK(std::string(e.what()).find("rejected") != std::string::npos);
  }
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1));  // not the timeout

  // Once the live data is dropped, calls and their errors carry their strings again.
  filler.reset();
  rest.clear();
  rpc::Pending again = client.call_async("z", new_list());
  auto call_z = srv.next(5000);
  REQUIRE(call_z);
  call_z->fail("demo.Failure", "declined");
  {
    RemoteError e = thrown_by<RemoteError>([&] { again.get(5000); });
    CHECK(e.remote_type() == "demo.Failure");
    CHECK(e.remote_message() == "declined");
  }
}

TEST_CASE("rpc: stray and forged messages in an endpoint's queue never reach a serving thread") {
  Fixture fx;
  SharedFlags flags;
  Kids kids;
  kids.add(start_server(fx.cfg.socket, "guarded", flags.f));
  REQUIRE(eventually([&] { return flags->ready.load() == 1; }, 10000));
  attach(fx.cfg.socket);

  // The queue is a public channel: anyone attached can put anything into it.
  Channel queue = channel("colors.rpc.queue:guarded", 1024);
  REQUIRE(queue.send(Value(42), 1000));
  REQUIRE(queue.send(new_list(), 1000));
  Class other = define_class("test.NotARequest", {{"method", TypeKind::kString, ""}});
  Object impostor = new_object(other);
  impostor.set("method", Value("add"));
  REQUIRE(queue.send(impostor, 1000));
  // A Request of the right class but without its argument list: failed, not served.
  Class request = define_class("colors.rpc.Request", {{"method", TypeKind::kString, ""},
                                                      {"args", TypeKind::kList, ""},
                                                      {"result", TypeKind::kAny, ""},
                                                      {"error_type", TypeKind::kString, ""},
                                                      {"error_message", TypeKind::kString, ""},
                                                      {"state", TypeKind::kInteger, ""}});
  Object bare = new_object(request);
  bare.set("method", Value("add"));
  bare.set("state", Value(0));
  REQUIRE(queue.send(bare, 1000));

  // The server thread survived all four and serves the next real call.
  rpc::Client calc("guarded");
  CHECK(calc.call("add", args_of({20, 22}), 5000).as_int() == 42);
  CHECK(eventually([&] {
    Value t = bare.get("error_type");
    return !t.is_null() && t.as_string() == "colors.rpc.BadRequest";
  }, 5000));
  CHECK(flags->handled.load() == 1);  // only the real call reached the handler
  flags->stop.store(1);
}

TEST_CASE("rpc: servers, clients, calls and pending results of a closed attachment refuse to work") {
  Fixture fx;
  attach(fx.cfg.socket);
  auto srv = std::make_unique<rpc::Server>("stale");
  rpc::Client client("stale");
  rpc::Pending pending = client.call_async("x", new_list());
  std::optional<rpc::Call> call = srv->next(5000);
  REQUIRE(call);
  detach();
  attach(fx.cfg.socket);  // the same server here; another one's segment could be mapped there too

  CHECK_THROWS_AS(client.call("x", new_list(), 100), NotAttachedError);
  CHECK_THROWS_AS(client.server_alive(), NotAttachedError);
  CHECK_THROWS_AS(srv->next(10), NotAttachedError);
  CHECK_THROWS_AS(pending.get(10), NotAttachedError);
  CHECK_THROWS_AS(pending.ready(), NotAttachedError);
  CHECK_THROWS_AS(call->reply(Value(1)), NotAttachedError);
  CHECK_THROWS_AS(call->args(), NotAttachedError);
  call.reset();  // dropped: its attachment is gone, nothing is touched
  srv.reset();   // neither does the destructor

  // This attachment serves and calls the endpoint afresh (the old registration's client is gone).
  rpc::Server fresh("stale");
  rpc::Client again("stale");
  rpc::Pending p = again.call_async("y", new_list());
  auto c = fresh.next(5000);
  REQUIRE(c);
  c->reply(Value(7));
  CHECK(p.get(5000).as_int() == 7);
}
