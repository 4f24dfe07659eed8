// Multi-process integration tests: real colors-server, real client processes (fork), the public
// C++ API, and the heap verifier at the end of every test.
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <atomic>
#include <csignal>
#include <functional>
#include <thread>

#include "colors/colors.hpp"
#include "client_process.hpp"
#include "server_process.hpp"
#include "segment.hpp"  // detail::current_meta(): a raw pointer into the segment
#include "layout.hpp"
#include "monitor.hpp"
#include "session.hpp"

using namespace colors;
using colors::test::ServerConfig;
using colors::test::ServerProcess;
using colors::test::TempDir;

namespace {

using colors::test::fork_client;
using colors::test::wait_child;

struct Fixture {
  TempDir dir;
  ServerConfig cfg = ServerConfig::fresh(dir.path());
  std::unique_ptr<ServerProcess> server;
  explicit Fixture(const std::vector<std::string>& extra = {"--heap-size", "32M"}) {
    server = std::make_unique<ServerProcess>(cfg, cfg.args(extra), dir.path() + "/server.log");
    REQUIRE(server->wait_ready());
  }
  ~Fixture() {
    if (is_attached()) detach();
  }
  // Attaches this (test) process and waits until the heap verifies: dead clients' TLABs are
  // reclaimed by the server asynchronously, after it notices their connection closing.
  void attach_and_verify() {
    attach(cfg.socket);
    VerifyResult v{false, ""};
    bool ok = colors::test::eventually([&] { return (v = verify_heap()).ok; }, 10000);
    INFO(v.report);
    REQUIRE(ok);
  }
};

// A client process that holds the monitor of repository `name` until it is killed; returns once
// it holds it.
pid_t fork_monitor_holder(const std::string& socket, const std::string& name) {
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  pid_t kid = fork_client(socket, [&] {
    ::close(ready[0]);
    Monitor m(repository(name));
    char c = 1;
    (void)::write(ready[1], &c, 1);
    ::pause();
    return 0;
  });
  ::close(ready[1]);
  char c;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  ::close(ready[0]);
  return kid;
}

}  // namespace

TEST_CASE("several processes allocate concurrently - their data survives and the heap verifies") {
  Fixture f;
  const int kProcs = 3, kItems = 3000;
  std::vector<pid_t> kids;
  for (int p = 0; p < kProcs; ++p) {
    kids.push_back(fork_client(f.cfg.socket, [p, kItems] {
      Class pt = define_class("test.Point", {{"x", TypeKind::kInteger, ""}, {"label", TypeKind::kString, ""}});
      List keep = new_list();
      for (int i = 0; i < kItems; ++i) {
        Object o = new_object(pt);
        o.set("x", Value(p * 1000000 + i));
        o.set("label", Value("p" + std::to_string(p) + "-" + std::to_string(i)));
        if (i % 3 == 0) keep.append(o);            // some kept, most garbage
        Map m = new_map();                         // containers of every kind
        m.put(Value(i), Value(std::string(i % 50, 'z')));
        List l = new_list();
        l.append(m);
        l.append(new_binary(std::vector<std::uint8_t>(i % 300, 7)));
      }
      repository("proc-" + std::to_string(p)).set(keep);
      return 0;
    }));
  }
  for (pid_t k : kids) REQUIRE(wait_child(k) == 0);
  f.attach_and_verify();
  for (int p = 0; p < kProcs; ++p) {
    List keep(repository("proc-" + std::to_string(p)).get());
    REQUIRE(keep.size() == kItems / 3);
    for (std::size_t i = 0; i < keep.size(); ++i) {
      Object o(keep[i]);
      REQUIRE(o.get("x").as_int() == p * 1000000 + static_cast<long long>(i) * 3);
      REQUIRE(o.get("label").as_string() == "p" + std::to_string(p) + "-" + std::to_string(i * 3));
    }
  }
}

TEST_CASE("kill -9 of a client mid-allocation: its TLAB is reclaimed and the heap verifies") {
  Fixture f;
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  pid_t kid = fork_client(f.cfg.socket, [&] {
    ::close(ready[0]);
    for (long i = 0;; ++i) {
      List l = new_list();
      l.append(Value("garbage " + std::to_string(i)));
      if (i == 1000) {
        char c = 1;
        (void)::write(ready[1], &c, 1);
      }
    }
    return 0;
  });
  ::close(ready[1]);
  char c;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  ::close(ready[0]);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ::kill(kid, SIGKILL);
  REQUIRE(wait_child(kid) == 128 + SIGKILL);
  REQUIRE(f.server->wait_for_log("died"));
  f.attach_and_verify();  // an orphaned TLAB would fail verification
  HeapStats s = heap_stats();
  REQUIRE(s.free_bytes > 0);
}

TEST_CASE("cross-process channel ping-pong") {
  Fixture f;
  const int kRounds = 2000;
  pid_t kid = fork_client(f.cfg.socket, [kRounds] {
    Channel ping = channel("ping", 4), pong = channel("pong", 4);
    for (int i = 0; i < kRounds; ++i) {
      auto v = ping.receive(10000);
      if (!v) return 4;
      List l(*v);
      pong.send(Value(l[0].as_int() + 1));
    }
    return 0;
  });
  attach(f.cfg.socket);
  Channel ping = channel("ping", 4), pong = channel("pong", 4);
  for (int i = 0; i < kRounds; ++i) {
    List l = new_list();
    l.append(Value(i));
    REQUIRE(ping.send(l, 10000));
    auto r = pong.receive(10000);
    REQUIRE(r.has_value());
    REQUIRE(r->as_int() == i + 1);
  }
  REQUIRE(wait_child(kid) == 0);
  detach();
  f.attach_and_verify();
}

TEST_CASE("repository handoff with monitor wait/notify") {
  Fixture f;
  pid_t kid = fork_client(f.cfg.socket, [] {
    Repository r = repository("db");
    Value got;
    {
      Monitor m(r);
      while ((got = r.get()).is_null()) {
        if (!m.wait(10000)) return 4;
      }
    }
    Map db(got);
    if (db.at(Value("answer")).as_int() != 42) return 5;
    db.put(Value("seen-by"), Value(static_cast<long long>(getpid())));
    channel("done").send(Value(true));
    return 0;
  });
  attach(f.cfg.socket);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the child block in wait()
  Map db = new_map();
  db.put(Value("answer"), Value(42));
  Repository r = repository("db");
  {
    Monitor m(r);
    r.set(db);
    m.notify_all();
  }
  auto done = channel("done").receive(10000);
  REQUIRE(done.has_value());
  REQUIRE(db.at(Value("seen-by")).as_int() == kid);
  REQUIRE(wait_child(kid) == 0);
  detach();
  f.attach_and_verify();
}

TEST_CASE("kill -9 of a client holding a monitor: next acquirer gets owner-died, then it works") {
  Fixture f;
  pid_t kid = fork_monitor_holder(f.cfg.socket, "locked");
  ::kill(kid, SIGKILL);
  REQUIRE(wait_child(kid) == 128 + SIGKILL);
  attach(f.cfg.socket);
  Repository r = repository("locked");
  bool owner_died = false;
  try {
    Monitor m(r);
  } catch (const OwnerDiedError& e) {
    owner_died = true;
    REQUIRE(std::string(e.what()).find("died") != std::string::npos);
  }
  REQUIRE(owner_died);
  {
    Monitor m(r);  // usable again, no deadlock
    m.notify_all();
  }
  detach();
  f.attach_and_verify();
}

TEST_CASE("detach is refused while a thread of this process holds a monitor, not for other processes' monitors") {
  Fixture f;
  pid_t kid = fork_monitor_holder(f.cfg.socket, "held.elsewhere");  // holds it throughout

  attach(f.cfg.socket);
  Repository r = repository("held.here");
  {
    Monitor m(r);
    CHECK_THROWS_WITH(detach(), Catch::Contains("1 shared monitor(s) (1 by this thread)"));
    REQUIRE(is_attached());
  }
  std::atomic<int> phase{0};
  std::thread holder([&] {
    Monitor m(r);
    phase.store(1);
    while (phase.load() != 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  while (phase.load() != 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK_THROWS_WITH(detach(), Catch::Contains("1 shared monitor(s) (0 by this thread)"));
  REQUIRE(is_attached());
  phase.store(2);
  holder.join();
  detach();  // the other process's monitor does not count
  REQUIRE_FALSE(is_attached());
  // What was held here was released into the shared heap: another process takes it at once.
  pid_t taker = fork_client(f.cfg.socket, [&] {
    const void* a = repository("held.here").address();
    if (!detail::monitor_enter(detail::current_meta(), a, 0)) return 1;
    detail::monitor_exit(detail::current_meta(), a);
    return 0;
  });
  CHECK(wait_child(taker, 10000) == 0);
  ::kill(kid, SIGKILL);
  wait_child(kid);
  f.attach_and_verify();
}

TEST_CASE("a dead process's monitor record naming one of our thread ids does not block our detach") {
  // A killed holder stays recorded in its monitor entry until the next acquirer recovers it, and
  // the kernel reuses thread ids: the record below names this very thread under another
  // process's client id, as after a pid wrap-around.
  Fixture f;
  attach(f.cfg.socket);
  Repository r = repository("dead.holder");
  detail::MonitorEntry& e = detail::monitor_for(detail::current_meta(), r.address());
  const auto tid = static_cast<std::uint64_t>(::syscall(SYS_gettid));
  const std::uint64_t dead_client = detail::current_client_id() + 1000;
  e.owner.store(dead_client << 32 | tid);
  e.held.store(reinterpret_cast<std::uintptr_t>(r.address()));
  CHECK(detail::monitors_held_here(detail::current_meta()).process == 0);
  CHECK_NOTHROW(detach());
  attach(f.cfg.socket);
  detail::MonitorEntry& again = detail::monitor_for(detail::current_meta(), repository("dead.holder").address());
  again.held.store(0);
  again.owner.store(0);
  detach();
  f.attach_and_verify();
}

TEST_CASE("attach is refused when the fixed address range is taken in the client") {
  Fixture f;
  pid_t kid = ::fork();
  REQUIRE(kid >= 0);
  if (kid == 0) {
    void* p = ::mmap(reinterpret_cast<void*>(f.cfg.address + (1 << 20)), 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED) ::_exit(10);
    try {
      attach(f.cfg.socket);
      ::_exit(11);  // must not succeed
    } catch (const AddressInUseError& e) {
      std::string msg = e.what();
      bool names_address = msg.find(f.cfg.address_hex()) != std::string::npos && msg.find("--address") != std::string::npos;
      // The existing mapping is intact.
      volatile char x = *static_cast<char*>(p);
      (void)x;
      ::_exit(names_address ? 0 : 12);
    } catch (...) {
      ::_exit(13);
    }
  }
  REQUIRE(wait_child(kid) == 0);
}

TEST_CASE("server shutdown: attached clients get ServerGoneError, blocked receivers wake") {
  Fixture f;
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  pid_t kid = fork_client(f.cfg.socket, [&] {
    ::close(ready[0]);
    char c = 1;
    (void)::write(ready[1], &c, 1);
    try {
      channel("never").receive(20000);
      return 4;  // neither a value nor a timeout may end this wait
    } catch (const ServerGoneError&) {
      return 0;
    }
  });
  ::close(ready[1]);
  char c;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  ::close(ready[0]);
  attach(f.cfg.socket);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto t0 = std::chrono::steady_clock::now();
  f.server->signal(SIGTERM);
  REQUIRE(f.server->wait_exit(10000) == 0);
  REQUIRE(wait_child(kid, 15000) == 0);
  REQUIRE(colors::test::ms_since(t0) < 5000);
  REQUIRE_THROWS_AS(ping(), ServerGoneError);
  REQUIRE_THROWS_AS(channel("x").try_receive(), ServerGoneError);
  detach();
}

TEST_CASE("fork of an attached process: the child starts detached, attaches as a new client, and both heaps of work survive") {
  Fixture f;
  attach(f.cfg.socket);
  List mine = new_list();
  for (int i = 0; i < 1000; ++i) mine.append(Value("parent " + std::to_string(i)));  // a TLAB in use
  Channel ch = channel("fork-handoff", 4);
  std::fflush(nullptr);
  pid_t kid = ::fork();
  REQUIRE(kid >= 0);
  if (kid == 0) {
    int rc = 0;
    try {
      if (is_attached()) rc = 10;  // the parent's attachment is not ours
      try {
        mine.append(Value(1));  // a Value of the parent's attachment: no updates through it here
        rc = 11;
      } catch (const NotAttachedError&) {
      }
      attach(f.cfg.socket);  // a new client of the same server
      List theirs = new_list();
      for (int i = 0; i < 1000; ++i) theirs.append(Value("child " + std::to_string(i)));
      if (!channel("fork-handoff", 4).send(theirs, 10000)) rc = 12;
      detach();
    } catch (...) {
      rc = 13;
    }
    ::_exit(rc);
  }
  // The parent keeps allocating from its own TLAB while the child does from its own.
  for (int i = 1000; i < 3000; ++i) mine.append(Value("parent " + std::to_string(i)));
  std::optional<Value> got = ch.receive(10000);
  REQUIRE(wait_child(kid) == 0);
  REQUIRE(got);
  List theirs(*got);
  REQUIRE(theirs.size() == 1000);
  CHECK(theirs.get(999).as_string() == "child 999");
  REQUIRE(mine.size() == 3000);
  CHECK(mine.get(0).as_string() == "parent 0");
  CHECK(mine.get(2999).as_string() == "parent 2999");
  collect(30000);
  VerifyResult v{false, ""};
  bool ok = colors::test::eventually([&] { return (v = verify_heap()).ok; }, 10000);
  INFO(v.report);
  REQUIRE(ok);
}

TEST_CASE("a process that exits while another of its threads works in the heap exits cleanly") {
  // exit() runs static destructors while other threads still run (a JVM's daemon threads, Python
  // threads; the JVM's heap-pressure watcher polls the segment through a raw pointer): the segment
  // must stay mapped until the kernel ends the process.
  Fixture f;
  for (int round = 0; round < 20; ++round) {
    pid_t kid = fork_client(f.cfg.socket, [] {
      const detail::Metadata* m = detail::current_meta();
      std::atomic<long> reads{0};
      std::thread([m, &reads] {
        for (;;) {
          (void)m->gc_done_seq.load(std::memory_order_acquire);
          reads.fetch_add(1, std::memory_order_relaxed);
        }
      }).detach();
      while (reads.load() < 100000) std::this_thread::yield();
      std::exit(0);
      return 1;
    });
    INFO("round " << round);
    CHECK(wait_child(kid, 30000) == 0);
  }
}

TEST_CASE("a thread allocating while another thread attaches leaves no TLAB without a client") {
  // A worker started before attach() allocates as soon as the heap is mapped. Until attach() has
  // named the client, its carve would tag a TLAB with no client's id: one the server never
  // reclaims, which the verifier reports. attach() publishes the segment only once it is whole.
  Fixture f;
  for (int round = 0; round < 40; ++round) {
    std::atomic<bool> started{false};
    std::thread worker([&started] {
      started.store(true, std::memory_order_release);
      for (int made = 0; made < 50;) {
        try {
          List l = new_list();
          l.append(Value(made));
          ++made;
        } catch (const NotAttachedError&) {
        }
      }
    });
    while (!started.load(std::memory_order_acquire)) std::this_thread::yield();
    attach(f.cfg.socket);
    worker.join();
    detach();
  }
  f.attach_and_verify();
}
