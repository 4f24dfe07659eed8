// Transactions against a real server: commit and rollback of every kind of change, isolation
// between threads and processes, conflicts and deadlocks, a process killed inside a transaction
// (rolled back by the server), a stopped holder, a transaction too large for its log, a long
// transaction across collector cycles, misuse, and bank transfers in bank-worker processes
// (tests/bank) killed with SIGKILL while an auditor checks the total.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <new>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../integration/server_process.hpp"
#include "client_process.hpp"
#include "colors/colors.hpp"
#include "layout.hpp"
#include "segment.hpp"

using namespace colors;
using colors::test::eventually;
using colors::test::fork_client;
using colors::test::ServerConfig;
using colors::test::ServerProcess;
using colors::test::TempDir;
using colors::test::wait_child;

namespace {

struct Attached {
  TempDir dir;
  ServerConfig cfg = ServerConfig::fresh(dir.path());
  ServerProcess server{cfg, cfg.args({"--heap-size", "32M"}), dir.path() + "/server.log"};
  Attached() {
    REQUIRE(server.wait_ready());
    attach(cfg.socket);
    // Tests fork clients from this process. Under AddressSanitizer (GCC 12's, without a fork
    // handler for its allocator) a fork while another thread holds an allocator lock leaves the
    // child's allocator locked for good; the server watcher that attach starts allocates while it
    // starts up. Letting it settle first keeps the forks away from that window.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ~Attached() { detach(); }
};

Class account_class() { return define_class("tx.Account", {{"balance", TypeKind::kInteger}, {"note", TypeKind::kString}}); }

Object account(long long balance) {
  Object a = new_object(account_class());
  a.set("balance", Value(balance));
  return a;
}

long long balance(const Object& a) { return a.get("balance").as_int(); }

// Reads `f()` in a transaction, retrying while another (maybe dead) transaction holds what it reads.
template <class F>
auto read_when_free(F&& f) {
  for (int i = 0;; ++i) {
    try {
      return atomically(f, 0);
    } catch (const TransactionConflictError&) {
      if (i > 500) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

// Forks a client that runs `hold` inside a transaction and stops itself (SIGSTOP) before the
// commit, keeping what `hold` wrote; returns once it is stopped.
pid_t fork_stopped_in_transaction(const std::string& socket, std::function<void()> hold) {
  pid_t kid = fork_client(socket, [hold] {
    Transaction tx;
    hold();
    ::raise(SIGSTOP);
    tx.commit();
    return 0;
  });
  int st = 0;
  REQUIRE(::waitpid(kid, &st, WUNTRACED) == kid);
  REQUIRE(WIFSTOPPED(st));
  return kid;
}

}  // namespace

TEST_CASE("transactions: a commit publishes every kind of change, a rollback undoes them all") {
  Attached at;
  Object a = account(100);
  List l = new_list();
  l.append(Value(1));
  Map m = new_map();
  m.put(Value("k"), Value(1));
  SortedMap sm = new_sorted_map();
  sm.put(Value(5), Value("five"));
  Repository repo = repository("tx.repo");
  repo.set(Value("before"));

  auto change_all = [&] {
    a.set("balance", Value(7));
    a.set("note", Value("changed"));
    for (int i = 0; i < 100; ++i) l.append(Value(i));  // grows the storage: a new array
    l.set(0, Value(-1));
    for (int i = 0; i < 50; ++i) m.put(Value(i), Value(i));  // rehashes
    m.remove(Value("k"));
    for (int i = 0; i < 200; ++i) sm.put(Value(i * 2), Value(i));  // splits nodes
    sm.remove(Value(5));
    repo.set(new_list());
  };

  SECTION("rolled back by the destructor") {
    {
      Transaction tx;
      change_all();
      CHECK(balance(a) == 7);  // the transaction sees its own writes
      CHECK(l.size() == 101);
    }
    CHECK(balance(a) == 100);
    CHECK(a.get("note").is_null());
    CHECK(l.size() == 1);
    CHECK(l.get(0).as_int() == 1);
    CHECK(m.size() == 1);
    CHECK(m.at(Value("k")).as_int() == 1);
    CHECK(sm.size() == 1);
    CHECK(sm.at(Value(5)).as_string() == "five");
    CHECK(repo.get().as_string() == "before");
    VerifyResult v = verify_heap();
    CHECK(v.ok);
  }
  SECTION("committed") {
    {
      Transaction tx;
      change_all();
      tx.commit();
    }
    CHECK(balance(a) == 7);
    CHECK(a.get("note").as_string() == "changed");
    CHECK(l.size() == 101);
    CHECK(l.get(0).as_int() == -1);
    CHECK(m.size() == 50);
    CHECK(sm.size() == 200);
    CHECK_FALSE(sm.contains(Value(5)));
    CHECK(List(repo.get()).size() == 0);
  }
  SECTION("an exception in atomically rolls back and propagates") {
    CHECK_THROWS_AS(atomically([&] {
                      change_all();
                      throw IndexError("boom");
                    }),
                    IndexError);
    CHECK(balance(a) == 100);
    CHECK(l.size() == 1);
  }
}

TEST_CASE("transactions: nesting is flat, and an inner rollback dooms the whole transaction") {
  Attached at;
  Object a = account(1);
  {
    Transaction outer;
    a.set("balance", Value(2));
    {
      Transaction inner;
      a.set("balance", Value(3));
      inner.commit();  // joins the outer: nothing is published yet
    }
    CHECK(balance(a) == 3);
    outer.commit();
  }
  CHECK(balance(a) == 3);
  {
    Transaction outer;
    a.set("balance", Value(4));
    { Transaction inner; }  // rolled back: the outer cannot commit any more
    CHECK_THROWS_AS(a.set("balance", Value(5)), TransactionAbortedError);
    CHECK_THROWS_AS(outer.commit(), TransactionAbortedError);
  }
  CHECK(balance(a) == 3);
  CHECK_FALSE(in_transaction());
}

TEST_CASE("transactions: misuse gets a clear error") {
  Attached at;
  Object a = account(1);
  Transaction tx;
  CHECK_THROWS_AS(channel("tx.chan", 4).send(Value(1)), InvalidArgumentError);
  CHECK_THROWS_AS(a.add_field({"extra", TypeKind::kInteger}), InvalidArgumentError);
  CHECK_THROWS_AS(delete_repository("tx.any"), InvalidArgumentError);
  std::thread other([&] {
    try {
      tx.commit();
      FAIL("a commit from another thread was accepted");
    } catch (const InvalidArgumentError& e) {
      CHECK(std::string(e.what()).find("thread") != std::string::npos);
    }
  });
  other.join();
  tx.commit();
  CHECK_THROWS_AS(tx.commit(), InvalidArgumentError);  // already ended
  CHECK_FALSE(in_transaction());
  channel("tx.chan", 4).send(Value(1));  // fine outside
}

TEST_CASE("transactions: concurrent transfers between threads keep the total, seen by a transactional auditor") {
  Attached at;
  constexpr int kAccounts = 16;
  List accounts = new_list();
  for (int i = 0; i < kAccounts; ++i) accounts.append(account(1000));
  std::atomic<bool> stop{false};
  std::atomic<long> transfers{0}, audits{0}, bad{0}, errors{0};
  // Exceptions stay in their thread (counted): one escaping would terminate the test process.
  auto guarded = [&](auto body) {
    return [&errors, body](auto... args) {
      try {
        body(args...);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "transfer thread: %s\n", e.what());
        errors.fetch_add(1);
      }
    };
  };
  auto worker = [&](unsigned seed) {
    std::mt19937 rng(seed);
    while (!stop.load()) {
      int x = static_cast<int>(rng() % kAccounts), y = static_cast<int>(rng() % kAccounts);
      long long amount = rng() % 50;
      atomically([&] {
        Object a(accounts.get(static_cast<std::size_t>(x))), b(accounts.get(static_cast<std::size_t>(y)));
        a.set("balance", Value(balance(a) - amount));
        b.set("balance", Value(balance(b) + amount));
      });
      transfers.fetch_add(1);
    }
  };
  auto auditor = [&] {
    while (!stop.load()) {
      long long total = atomically([&] {
        long long t = 0;
        for (int i = 0; i < kAccounts; ++i) t += balance(Object(accounts.get(static_cast<std::size_t>(i))));
        return t;
      });
      if (total != 1000LL * kAccounts) bad.fetch_add(1);
      audits.fetch_add(1);
    }
  };
  std::vector<std::thread> ts;
  ts.emplace_back(guarded(worker), 1u);
  ts.emplace_back(guarded(worker), 2u);
  ts.emplace_back(guarded(worker), 3u);
  ts.emplace_back(guarded(auditor));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  stop = true;
  for (auto& t : ts) t.join();
  CHECK(bad.load() == 0);
  CHECK(errors.load() == 0);
  CHECK(transfers.load() > 100);
  CHECK(audits.load() > 10);
  long long total = 0;
  for (int i = 0; i < kAccounts; ++i) total += balance(Object(accounts.get(static_cast<std::size_t>(i))));
  CHECK(total == 1000LL * kAccounts);
}

TEST_CASE("transactions: increments from several processes in atomically lose none") {
  Attached at;
  Object counter = account(0);
  repository("tx.counter").set(counter);
  constexpr int kProcs = 3, kEach = 300;
  std::vector<pid_t> kids;
  for (int p = 0; p < kProcs; ++p)
    kids.push_back(fork_client(at.cfg.socket, [] {
      Object c(repository("tx.counter").get());
      for (int i = 0; i < kEach; ++i) atomically([&] { c.set("balance", Value(c.get("balance").as_int() + 1)); });
      return 0;
    }));
  for (pid_t k : kids) CHECK(wait_child(k) == 0);
  CHECK(balance(counter) == kProcs * kEach);
}

TEST_CASE("transactions: a deadlock is reported as a conflict naming it, never a hang") {
  Attached at;
  Object a = account(0), b = account(0);
  std::atomic<int> both{0};
  std::atomic<int> deadlocks{0}, done{0};
  auto run = [&](Object first, Object second) {
    try {
      Transaction tx;
      first.set("balance", Value(1));
      both.fetch_add(1);
      while (both.load() < 2) std::this_thread::yield();
      second.set("balance", Value(2));
      tx.commit();
      done.fetch_add(1);
    } catch (const TransactionConflictError& e) {
      if (std::string(e.what()).find("deadlock") != std::string::npos) deadlocks.fetch_add(1);
    }
  };
  auto t0 = std::chrono::steady_clock::now();
  std::thread t1(run, a, b), t2(run, b, a);
  t1.join();
  t2.join();
  CHECK(deadlocks.load() >= 1);
  CHECK(deadlocks.load() + done.load() == 2);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
}

TEST_CASE("transactions: a deadlock across processes is reported as a conflict naming it, never a hang") {
  Attached at;
  Object a = account(0), b = account(0);
  repository("tx.dl.a").set(a);
  repository("tx.dl.b").set(b);
  // Each process takes its first object, waits until both have (a counter in memory shared by
  // the forked processes, outside the heap), then asks for the other's: a cycle of two processes.
  void* mem = ::mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mem != MAP_FAILED);
  auto* both = new (mem) std::atomic<int>(0);
  auto body = [both](const char* first, const char* second) {
    return [both, first, second] {
      Object x(repository(first).get()), y(repository(second).get());
      try {
        Transaction tx;
        x.set("balance", Value(1));
        both->fetch_add(1);
        auto t0 = std::chrono::steady_clock::now();
        while (both->load() < 2) {
          if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(20)) return 20;
          std::this_thread::yield();
        }
        y.set("balance", Value(2));
        tx.commit();
        return 0;  // went through: the other one was the victim
      } catch (const TransactionConflictError& e) {
        std::fprintf(stderr, "conflict: %s\n", e.what());
        return std::string(e.what()).find("deadlock") != std::string::npos ? 10 : 11;
      }
    };
  };
  auto t0 = std::chrono::steady_clock::now();
  pid_t p1 = fork_client(at.cfg.socket, body("tx.dl.a", "tx.dl.b"));
  pid_t p2 = fork_client(at.cfg.socket, body("tx.dl.b", "tx.dl.a"));
  const int r1 = wait_child(p1), r2 = wait_child(p2);
  ::munmap(mem, sizeof(std::atomic<int>));
  INFO("exit codes " << r1 << " " << r2 << " (10: deadlock reported, 0: committed)");
  CHECK((r1 == 10 || r2 == 10));  // at least one was told it was in a deadlock
  CHECK(((r1 == 10 || r1 == 0) && (r2 == 10 || r2 == 0)));  // nothing else happened to either
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(15));
}

TEST_CASE("transactions: a transaction that outlives its attachment fails with a clear error") {
  Attached at;
  Object a = account(1);
  repository("tx.detach.a").set(a);
  pid_t kid = fork_client(at.cfg.socket, [] {
    Object a(repository("tx.detach.a").get());
    Transaction tx;
    a.set("balance", Value(2));
    detach();
    try {
      tx.commit();
      return 10;
    } catch (const TransactionAbortedError& e) {
      if (std::string(e.what()).find("attachment") == std::string::npos) return 11;
    }
    if (in_transaction()) return 12;
    return 0;  // fork_client's detach() after this is a no-op: not attached
  });
  CHECK(wait_child(kid) == 0);
  CHECK(read_when_free([&] { return balance(a); }) == 1);  // the server rolled it back at the detach
}

TEST_CASE("transactions: a process killed inside a transaction is rolled back by the server") {
  Attached at;
  Object a = account(100);
  List l = new_list();
  l.append(Value("kept"));
  SortedMap sm = new_sorted_map();
  sm.put(Value(1), Value(1));
  repository("tx.crash.a").set(a);
  repository("tx.crash.l").set(l);
  repository("tx.crash.sm").set(sm);
  pid_t kid = fork_client(at.cfg.socket, [] {
    Object a(repository("tx.crash.a").get());
    List l(repository("tx.crash.l").get());
    SortedMap sm(repository("tx.crash.sm").get());
    Transaction tx;
    a.set("balance", Value(-1));
    for (int i = 0; i < 1000; ++i) l.append(Value(i));
    for (int i = 2; i < 500; ++i) sm.put(Value(i), Value(i));
    repository("tx.crash.a").set(Value("gone"));
    ::raise(SIGKILL);  // mid-transaction
    return 1;
  });
  CHECK(wait_child(kid) == 128 + SIGKILL);
  // Until the server has rolled it back, its objects are held: a transactional read waits.
  CHECK(read_when_free([&] { return balance(a); }) == 100);
  CHECK(read_when_free([&] { return static_cast<long long>(l.size()); }) == 1);
  CHECK(read_when_free([&] { return static_cast<long long>(sm.size()); }) == 1);
  CHECK(read_when_free([&] { return Object(repository("tx.crash.a").get()).get("balance").as_int(); }) == 100);
  // Its locks are free again: a new transaction writes the same objects.
  atomically([&] {
    a.set("balance", Value(5));
    l.append(Value("after"));
  });
  CHECK(balance(a) == 5);
  CHECK(l.size() == 2);
  collect(30000);
  VerifyResult v = verify_heap();
  CHECK(v.ok);
}

// Whether the server has finished with the client process `pid` (its slot freed, so its
// transactions were rolled back or completed: Collector::reclaim_client).
bool client_reclaimed(pid_t pid) {
  detail::Metadata* m = detail::current_meta();
  for (const detail::ClientSlot& c : m->clients)
    if (c.pid.load() == pid && c.state.load() != static_cast<std::uint32_t>(detail::ClientState::kFree)) return false;
  return true;
}

TEST_CASE("transactions: a process killed after its rollback released its objects does not undo later commits") {
  Attached at;
  Object a = account(1);
  repository("tx.rb.a").set(a);
  pid_t kid = fork_client(at.cfg.socket, [] {
    // The rollback sleeps after its last step (killed in there); read at every rollback.
    ::setenv("COLORS_TX_FAULT_ROLLBACK_US", "60000000", 1);
    Object a(repository("tx.rb.a").get());
    Transaction tx;
    a.set("balance", Value(7));
    std::this_thread::sleep_for(std::chrono::seconds(1));  // long enough for the parent to see the 7
    tx.rollback();
    return 0;
  });
  // The uncommitted 7 is visible outside transactions (weak atomicity): the child is in its transaction.
  REQUIRE(eventually([&] { return balance(a) == 7; }, 30000));
  // Its rollback restores 1 and releases the object; then this transaction commits 42.
  REQUIRE(eventually(
      [&] {
        try {
          atomically([&] { a.set("balance", Value(42)); }, 0);
          return true;
        } catch (const TransactionConflictError&) {
          return false;
        }
      },
      30000));
  ::kill(kid, SIGKILL);  // asleep after its rollback
  CHECK(wait_child(kid) == 128 + SIGKILL);
  REQUIRE(eventually([&] { return client_reclaimed(kid); }, 30000));
  // The server found nothing left to undo: the committed 42 stands.
  CHECK(balance(a) == 42);
  CHECK(read_when_free([&] { return balance(a); }) == 42);
}

TEST_CASE("transactions: a stopped holder makes others fail with a conflict naming it, not wait forever") {
  Attached at;
  Object a = account(1);
  repository("tx.stop.a").set(a);
  pid_t kid = fork_stopped_in_transaction(at.cfg.socket, [] {
    Object a(repository("tx.stop.a").get());
    a.set("balance", Value(2));
  });
  auto t0 = std::chrono::steady_clock::now();
  try {
    atomically([&] { a.set("balance", Value(3)); }, 3);
    FAIL("the write went through while a stopped process held the object");
  } catch (const TransactionConflictError& e) {
    CHECK(std::string(e.what()).find("process " + std::to_string(kid)) != std::string::npos);
  }
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
  ::kill(kid, SIGKILL);
  CHECK(wait_child(kid) == 128 + SIGKILL);
  CHECK(read_when_free([&] { return balance(a); }) == 1);  // its write was rolled back
  atomically([&] { a.set("balance", Value(3)); });
  CHECK(balance(a) == 3);
}

TEST_CASE("transactions: a change outside any transaction waits for the one holding the container, so its rollback tears nothing") {
  Attached at;
  SortedMap sm = new_sorted_map();
  Map m = new_map();
  List l = new_list();
  for (int i = 0; i < 100; ++i) {
    sm.put(Value(i), Value(i));
    m.put(Value(i), Value(i));
    l.append(Value(i));
  }
  using Clock = std::chrono::steady_clock;
  std::atomic<bool> changed{false};
  std::atomic<Clock::rep> first_plain{0};
  std::thread plain([&] {
    while (!changed.load(std::memory_order_acquire)) std::this_thread::yield();
    for (int i = 0; i < 3000; ++i) {  // enough to split the sorted map's nodes and grow both tables
      sm.put(Value(1000 + i), Value(i));
      m.put(Value(1000 + i), Value(i));
      l.append(Value(1000 + i));
      if (i == 0) first_plain.store(Clock::now().time_since_epoch().count(), std::memory_order_release);
    }
  });
  Clock::rep rollback_start = 0;
  {
    Transaction tx;
    for (int i = 100; i < 300; ++i) sm.put(Value(i), Value(i));
    for (int i = 0; i < 50; ++i) sm.remove(Value(i));
    for (int i = 100; i < 300; ++i) m.put(Value(i), Value(i));
    for (int i = 0; i < 50; ++i) m.remove(Value(i));
    for (int i = 0; i < 50; ++i) l.erase(0);
    changed.store(true, std::memory_order_release);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    rollback_start = Clock::now().time_since_epoch().count();
  }  // rolled back
  plain.join();
  CHECK(first_plain.load() > rollback_start);  // the plain thread waited for the rollback

  std::vector<long long> expected;
  for (int i = 0; i < 100; ++i) expected.push_back(i);
  for (int i = 0; i < 3000; ++i) expected.push_back(1000 + i);
  std::vector<long long> sorted_keys;
  for (const auto& [k, v] : sm.items()) sorted_keys.push_back(k.as_int());
  CHECK(sm.size() == expected.size());
  CHECK(sorted_keys == expected);
  std::vector<long long> map_keys;
  for (const auto& [k, v] : m.items()) map_keys.push_back(k.as_int());
  std::sort(map_keys.begin(), map_keys.end());
  CHECK(m.size() == expected.size());
  CHECK(map_keys == expected);
  std::vector<long long> list_items;
  for (const Value& v : l.items()) list_items.push_back(v.as_int());
  CHECK(l.size() == expected.size());
  CHECK(list_items == expected);
  CHECK(verify_heap().ok);
}

TEST_CASE("transactions: a change outside any transaction to a container a stopped holder keeps fails with a conflict naming it") {
  Attached at;
  SortedMap sm = new_sorted_map();
  sm.put(Value(1), Value("one"));
  repository("tx.stop.map").set(sm);
  pid_t kid = fork_stopped_in_transaction(at.cfg.socket, [] {
    SortedMap sm(repository("tx.stop.map").get());
    sm.put(Value(2), Value("two"));
  });
  auto t0 = std::chrono::steady_clock::now();
  try {
    sm.put(Value(3), Value("three"));
    FAIL("a plain put changed a sorted map that a stopped transaction holds");
  } catch (const TransactionConflictError& e) {
    CHECK(std::string(e.what()).find("process " + std::to_string(kid)) != std::string::npos);
    CHECK(std::string(e.what()).find("was not made") != std::string::npos);
  }
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
  ::kill(kid, SIGKILL);
  CHECK(wait_child(kid) == 128 + SIGKILL);
  // The server rolls the dead holder back; the plain change then goes through.
  CHECK(eventually([&] {
    try {
      sm.put(Value(3), Value("three"));
      return true;
    } catch (const TransactionConflictError&) {
      return false;
    }
  }, 10'000));
  CHECK(sm.size() == 2);
  CHECK_FALSE(sm.contains(Value(2)));
  CHECK(sm.at(Value(3)).as_string() == "three");
}

TEST_CASE("transactions: one too large for its log fails with nothing applied") {
  Attached at;
  List l = new_list();
  for (int i = 0; i < 10; ++i) l.append(Value(i));
  repository("tx.large").set(l);
  pid_t kid = fork_client(at.cfg.socket, [] {
    ::setenv("COLORS_TX_MAX_WRITES", "500", 1);  // read at the first transaction of the process
    List l(repository("tx.large").get());
    try {
      Transaction tx;
      for (int i = 0; i < 1000; ++i) l.set(static_cast<std::size_t>(i % 10), Value(-i));
      tx.commit();
      return 10;
    } catch (const TransactionAbortedError& e) {
      if (std::string(e.what()).find("too large") == std::string::npos) return 11;
    }
    for (int i = 0; i < 10; ++i)
      if (l.get(static_cast<std::size_t>(i)).as_int() != i) return 12;
    return 0;
  });
  CHECK(wait_child(kid) == 0);
  for (int i = 0; i < 10; ++i) CHECK(l.get(static_cast<std::size_t>(i)).as_int() == i);
}

TEST_CASE("transactions: a long transaction across back-to-back collector cycles keeps its old and new values") {
  Attached at;
  constexpr int kN = 2000;
  List objs = new_list();
  for (int i = 0; i < kN; ++i) {
    Object o = account(i);
    o.set("note", Value("old " + std::to_string(i)));
    objs.append(o);
  }
  {
    Transaction tx;
    for (int i = 0; i < kN; ++i) {
      Object o(objs.get(static_cast<std::size_t>(i)));
      o.set("note", Value("new " + std::to_string(i)));  // the old string lives only in the log
      if (i % 500 == 0) collect(30000);
    }
    collect(30000);
    collect(30000);
    for (int i = 0; i < kN; i += 97) CHECK(Object(objs.get(static_cast<std::size_t>(i))).get("note").as_string() == "new " + std::to_string(i));
  }  // rolled back: the old strings come back from the log
  collect(30000);
  for (int i = 0; i < kN; ++i) {
    if (Object(objs.get(static_cast<std::size_t>(i))).get("note").as_string() != "old " + std::to_string(i)) {
      FAIL("note " << i << " was not restored");
    }
  }
  VerifyResult v = verify_heap();
  CHECK(v.ok);
}

namespace {

// A bank-worker process (tests/bank/bank_worker.cpp) transferring between the accounts of
// bank.accounts, its stdout in `out` and the commit window widened by the fault hook. Exec'd, not
// forked from this process: the hook is read once per process, and this one may have read it.
pid_t spawn_bank_worker(const std::string& socket, unsigned seed, const std::string& out) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) ::dup2(fd, 1);
    ::setenv("COLORS_TX_FAULT_COMMIT_US", "1000", 1);
    std::string seed_s = std::to_string(seed);
    const char* argv[] = {BANK_WORKER_BIN, "--socket", socket.c_str(), "--seed", seed_s.c_str(), nullptr};
    ::execv(BANK_WORKER_BIN, const_cast<char* const*>(argv));
    ::_exit(127);
  }
  return pid;
}

// The last `transfers N` a worker printed to `path` (0 if none).
long long last_transfers(const std::string& path) {
  std::string text = colors::test::read_file(path);
  long long n = 0;
  for (std::size_t at = text.find("transfers "); at != std::string::npos; at = text.find("transfers ", at + 1))
    n = std::atoll(text.c_str() + at + 10);
  return n;
}

}  // namespace

TEST_CASE("transactions: bank transfers in processes killed with SIGKILL mid-commit keep the total, seen by an auditor") {
  TempDir dir;
  ServerConfig cfg = ServerConfig::fresh(dir.path());
  // --gc-debug: the heap verifier runs after every cycle (the auditor asks for cycles) and
  // complains in the server's log.
  const std::string server_log = dir.path() + "/server.log";
  ServerProcess server{cfg, cfg.args({"--heap-size", "32M", "--gc-debug"}), server_log};
  REQUIRE(server.wait_ready());
  attach(cfg.socket);
  constexpr int kAccounts = 32, kWorkers = 3;
  constexpr long long kBalance = 1000, kTotal = kAccounts * kBalance;
  Class cls = define_class("bank.Account", {{"balance", TypeKind::kInteger}});
  Field balance(cls, "balance");
  List accounts = new_list();
  for (int i = 0; i < kAccounts; ++i) {
    Object a = new_object(cls);
    a.set(balance, Value(kBalance));
    accounts.append(a);
  }
  repository("bank.accounts").set(accounts);
  repository("bank.total").set(Value(kTotal));

  std::atomic<bool> stop{false};
  std::atomic<long> audits{0}, violations{0}, audit_errors{0};
  std::thread auditor([&] {
    auto last_collect = std::chrono::steady_clock::now();
    while (!stop.load()) {
      try {
        long long total = read_when_free([&] {
          long long t = 0;
          for (int i = 0; i < kAccounts; ++i) t += Object(accounts.get(static_cast<std::size_t>(i))).get(balance).as_int();
          return t;
        });
        if (total != kTotal) {
          std::fprintf(stderr, "auditor: total %lld, expected %lld\n", total, kTotal);
          violations.fetch_add(1);
        }
        audits.fetch_add(1);
        if (std::chrono::steady_clock::now() - last_collect > std::chrono::milliseconds(300)) {
          collect(30000);
          last_collect = std::chrono::steady_clock::now();
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "auditor: %s\n", e.what());
        audit_errors.fetch_add(1);
      }
    }
  });

  std::mt19937 rng(Catch::rngSeed());
  std::vector<pid_t> kids(kWorkers);
  std::vector<std::string> outs(kWorkers);
  int incarnations = 0, kills = 0, unexpected_exits = 0;
  long long transfers = 0;
  auto start = [&](int w) {
    outs[w] = dir.path() + "/worker" + std::to_string(w) + "." + std::to_string(incarnations++) + ".out";
    kids[w] = spawn_bank_worker(cfg.socket, static_cast<unsigned>(rng()), outs[w]);
  };
  for (int w = 0; w < kWorkers; ++w) start(w);
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(6)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + rng() % 300));
    const int w = static_cast<int>(rng() % kWorkers);
    ::kill(kids[w], SIGKILL);
    const int rc = wait_child(kids[w]);
    if (rc != 128 + SIGKILL) {
      std::fprintf(stderr, "worker %d exited with %d before it was killed\n", w, rc);
      ++unexpected_exits;
    }
    ++kills;
    transfers += last_transfers(outs[w]);
    start(w);
  }
  for (int w = 0; w < kWorkers; ++w) {
    ::kill(kids[w], SIGKILL);
    wait_child(kids[w]);
    transfers += last_transfers(outs[w]);
  }
  stop = true;
  auditor.join();
  INFO("kills " << kills << ", transfers (as last reported) " << transfers << ", audits " << audits.load());
  CHECK(unexpected_exits == 0);
  CHECK(violations.load() == 0);
  CHECK(audit_errors.load() == 0);
  // The auditor ran throughout (its count depends on how long its collections wait on a loaded
  // machine: 5 in 6 s were seen under ctest -j2; the property is the zero violations above).
  CHECK(audits.load() > 2);
  CHECK(transfers > 100);
  CHECK(kills > 5);
  // Once the server rolled back the last victims, the total is intact outside a transaction too.
  CHECK(read_when_free([&] {
          long long t = 0;
          for (int i = 0; i < kAccounts; ++i) t += Object(accounts.get(static_cast<std::size_t>(i))).get(balance).as_int();
          return t;
        }) == kTotal);
  long long plain = 0;
  for (int i = 0; i < kAccounts; ++i) plain += Object(accounts.get(static_cast<std::size_t>(i))).get(balance).as_int();
  CHECK(plain == kTotal);
  collect(30000);
  collect(30000);
  VerifyResult v = verify_heap();
  INFO(v.report);
  CHECK(v.ok);
  const std::string slog = colors::test::read_file(server_log);
  INFO(slog);
  CHECK(slog.find("heap verifier") == std::string::npos);
  detach();
}
