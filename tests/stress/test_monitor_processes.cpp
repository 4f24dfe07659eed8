// Multi-process tests of monitors, channels and repositories: the segment is created in the
// test process, then fork()ed children (which inherit the mapping at the same address) act as
// separate clients with their own client ids. Children never return into Catch2: they _exit.
// Every wait is bounded so that a bug fails the test instead of hanging it.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <functional>
#include <thread>
#include <vector>

#include "channel.hpp"
#include "classes.hpp"
#include "colors/errors.hpp"
#include "futex.hpp"
#include "monitor.hpp"
#include "repository.hpp"
#include "session.hpp"
#include "test_segment.hpp"
#include "verifier.hpp"

using namespace colors;
using namespace colors::detail;

namespace {

constexpr std::int64_t kMs = 1'000'000;
constexpr std::int64_t kChildTimeoutMs = 60'000;

// Runs `body` in a child process as client `client_id`; exit status 0 = success.
pid_t spawn(std::uint32_t client_id, const std::function<int()>& body) {
  std::fflush(nullptr);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int rc = 100;
    try {
      set_current_client(client_id, client_id);
      rc = body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child %u: %s\n", client_id, e.what());
      rc = 101;
    } catch (...) {
      rc = 102;
    }
    _exit(rc);
  }
  return pid;
}

// Waits for the child (bounded); kills it on timeout. Returns its exit code, or -signal.
int reap(pid_t pid, std::int64_t timeout_ms = kChildTimeoutMs) {
  const std::int64_t deadline = monotonic_ns() + timeout_ms * kMs;
  int status = 0;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (monotonic_ns() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      FAIL("child " << pid << " did not finish in time");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return -WTERMSIG(status);
}

void kill9(pid_t pid) {
  REQUIRE(kill(pid, SIGKILL) == 0);
  CHECK(reap(pid, 10'000) == -SIGKILL);
}

// Polls `cond` for up to timeout_ms.
template <typename F>
bool eventually(F cond, std::int64_t timeout_ms = 10'000) {
  const std::int64_t deadline = monotonic_ns() + timeout_ms * kMs;
  while (!cond()) {
    if (monotonic_ns() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

// Shared scratch memory in the classes space (zero-filled, visible to every child).
template <typename T>
T* shared_alloc(Metadata* m, std::size_t n = 1) {
  RobustLockGuard g(m->classes_lock);
  return static_cast<T*>(classes_alloc(m, sizeof(T) * n));
}

}  // namespace

TEST_CASE("processes: counter incremented under a monitor by several processes", "[monitor][process]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  auto* counter = shared_alloc<std::uint64_t>(m);
  auto* started = shared_alloc<std::atomic<std::uint32_t>>(m);
  constexpr int kProcs = 4, kIters = 100000;
  std::vector<pid_t> kids;
  for (int p = 0; p < kProcs; ++p) {
    kids.push_back(spawn(10 + p, [&] {
      // Start together so that the processes really contend.
      started->fetch_add(1);
      const std::int64_t gate = monotonic_ns() + 10'000 * kMs;
      while (started->load() < kProcs && monotonic_ns() < gate) cpu_relax();
      for (int i = 0; i < kIters; ++i) {
        if (!monitor_enter(m, counter, 10'000 * kMs)) return 1;
        volatile std::uint64_t* c = counter;
        *c = *c + 1;  // deliberately not atomic: the monitor provides exclusion
        monitor_exit(m, counter);
      }
      return 0;
    }));
  }
  for (pid_t k : kids) CHECK(reap(k) == 0);
  CHECK(*counter == static_cast<std::uint64_t>(kProcs) * kIters);
  CHECK(monitor_for(m, counter).recursion.load() == 0);
  CHECK(monitor_for(m, counter).owner.load() == 0);
}

TEST_CASE("processes: channel ping-pong", "[channel][process]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  ChannelRecord* ping = find_or_create_channel(m, "ping", 1);
  ChannelRecord* pong = find_or_create_channel(m, "pong", 1);
  constexpr int kRounds = 10000;
  pid_t kid = spawn(20, [&] {
    // The child finds the channels by name, as another client would.
    ChannelRecord* in = find_or_create_channel(m, "ping", 64);
    ChannelRecord* out = find_channel(m, "pong");
    if (in != ping || out != pong) return 2;
    for (int i = 0; i < kRounds; ++i) {
      Word w = kNull;
      if (!channel_receive(m, in, &w, 10'000 * kMs)) return 3;
      if (!channel_send(m, out, make_small(small_value(w) * 2 + 1), 10'000 * kMs)) return 4;
    }
    return 0;
  });
  int wrong = 0, lost = 0;
  for (int i = 0; i < kRounds; ++i) {
    if (!channel_send(m, ping, make_small(i), 10'000 * kMs)) { ++lost; break; }
    Word w = kNull;
    if (!channel_receive(m, pong, &w, 10'000 * kMs)) { ++lost; break; }
    if (w != make_small(2 * i + 1)) ++wrong;
  }
  CHECK(lost == 0);
  CHECK(wrong == 0);
  CHECK(reap(kid) == 0);
  CHECK(channel_size(ping) == 0);
  CHECK(channel_size(pong) == 0);
}

TEST_CASE("processes: repository handoff with wait/notify", "[monitor][repository][process]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  RepositoryRecord* r = find_or_create_repository(m, "handoff");
  auto* ready = shared_alloc<std::atomic<std::uint32_t>>(m);
  constexpr int kKids = 3;
  std::vector<pid_t> kids;
  for (int k = 0; k < kKids; ++k) {
    kids.push_back(spawn(30 + k, [&] {
      RepositoryRecord* mine = find_or_create_repository(m, "handoff");
      if (mine != r) return 2;
      if (!monitor_enter(m, mine, 10'000 * kMs)) return 3;
      ready->fetch_add(1);
      const std::int64_t deadline = monotonic_ns() + 20'000 * kMs;
      while (repository_get(mine) == kNull && monotonic_ns() < deadline) monitor_wait(m, mine, 1000 * kMs);
      const Word w = repository_get(mine);
      monitor_exit(m, mine);
      return w == make_small(4242) ? 0 : 4;
    }));
  }
  REQUIRE(eventually([&] { return ready->load() == kKids && monitor_for(m, r).waiters.load() == kKids; }));
  REQUIRE(monitor_enter(m, r, 10'000 * kMs));
  repository_set(r, make_small(4242));
  monitor_notify_all(m, r);
  monitor_exit(m, r);
  for (pid_t k : kids) CHECK(reap(k) == 0);
}

TEST_CASE("processes: kill -9 of a monitor holder gives one OwnerDiedError, then the monitor works",
          "[monitor][process][crash]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  auto* obj = shared_alloc<std::uint64_t>(m, 2);
  auto* holding = shared_alloc<std::atomic<std::uint32_t>>(m);
  pid_t kid = spawn(40, [&] {
    monitor_enter(m, obj);
    monitor_enter(m, obj);  // recursion must not survive the owner either
    holding->store(1);
    for (;;) pause();
    return 0;
  });
  REQUIRE(eventually([&] { return holding->load() == 1; }));
  kill9(kid);

  // A process blocked on the monitor when the holder dies gets the error too (not a hang).
  bool died = false;
  std::string message;
  try {
    monitor_enter(m, obj, 5000 * kMs);
  } catch (const OwnerDiedError& e) {
    died = true;
    message = e.what();
  }
  CHECK(died);
  CHECK(message.find("died") != std::string::npos);
  CHECK(message.find("usable again") != std::string::npos);
  CHECK_FALSE(monitor_held_by_me(m, obj));
  CHECK(monitor_for(m, obj).recursion.load() == 0);
  // Exactly once: the next enter succeeds, in this process and in another one.
  REQUIRE(monitor_enter(m, obj, 5000 * kMs));
  monitor_exit(m, obj);
  pid_t kid2 = spawn(41, [&] {
    if (!monitor_enter(m, obj, 5000 * kMs)) return 1;
    monitor_exit(m, obj);
    return 0;
  });
  CHECK(reap(kid2) == 0);
}

namespace {

// Runs `body` in a fresh child as client `id`: 0 = no error, 1 = OwnerDiedError, 2 = timeout.
int enter_in_child(std::uint32_t id, Metadata* m, const void* obj) {
  pid_t kid = spawn(id, [&] {
    try {
      if (!monitor_enter(m, obj, 5000 * kMs)) return 2;
    } catch (const OwnerDiedError&) {
      return 1;
    }
    monitor_exit(m, obj);
    return 0;
  });
  return reap(kid);
}

}  // namespace

TEST_CASE("processes: the owner-died report goes to the next acquirer of the dead owner's object, not to "
          "objects sharing its monitor entry",
          "[monitor][process][crash]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  set_monitor_table_bits(m, 0);  // one entry: every object collides
  auto* x = shared_alloc<std::uint64_t>(m, 2);
  auto* y = shared_alloc<std::uint64_t>(m, 2);
  auto* holding = shared_alloc<std::atomic<std::uint32_t>>(m);
  REQUIRE(&monitor_for(m, x) == &monitor_for(m, y));
  pid_t a = spawn(140, [&] {
    monitor_enter(m, x);
    holding->store(1);
    for (;;) pause();
    return 0;
  });
  REQUIRE(eventually([&] { return holding->load() == 1; }));
  kill9(a);
  CHECK(enter_in_child(141, m, y) == 0);  // B: Y was not held by the dead process
  CHECK(enter_in_child(142, m, x) == 1);  // C: X's next acquirer is told, once
  CHECK(enter_in_child(143, m, x) == 0);
  CHECK(enter_in_child(144, m, y) == 0);
  CHECK(monitor_for(m, x).poison.load() == 0);
}

TEST_CASE("processes: a dead owner holding several colliding objects reports each to its own next acquirer",
          "[monitor][process][crash]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  set_monitor_table_bits(m, 0);
  auto* objs = shared_alloc<std::uint64_t>(m, 16);
  const void* x = &objs[0];
  const void* y = &objs[2];
  const void* z = &objs[4];
  const void* released = &objs[6];
  auto* holding = shared_alloc<std::atomic<std::uint32_t>>(m);
  pid_t a = spawn(150, [&] {
    monitor_enter(m, x);
    monitor_enter(m, released);  // entered and left again: its critical section is over
    monitor_enter(m, y);
    monitor_enter(m, y);
    monitor_exit(m, released);
    holding->store(1);
    for (;;) pause();
    return 0;
  });
  REQUIRE(eventually([&] { return holding->load() == 1; }));
  kill9(a);
  CHECK(enter_in_child(151, m, z) == 0);
  CHECK(enter_in_child(152, m, released) == 0);
  CHECK(enter_in_child(153, m, y) == 1);
  CHECK(enter_in_child(154, m, y) == 0);
  // In this process, re-entrantly: holding z, an enter of x still gets x's report (and does
  // not enter), and z stays held.
  REQUIRE(monitor_enter(m, z, 5000 * kMs));
  CHECK_THROWS_AS(monitor_enter(m, x, 0), OwnerDiedError);
  CHECK_FALSE(monitor_held_by_me(m, x));
  CHECK(monitor_held_by_me(m, z));
  REQUIRE(monitor_enter(m, x, 0));
  monitor_exit(m, x);
  monitor_exit(m, z);
  CHECK(enter_in_child(155, m, x) == 0);
}

TEST_CASE("processes: a waiter on an object gets the report of a dead owner of that object only",
          "[monitor][process][crash]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  set_monitor_table_bits(m, 0);
  auto* x = shared_alloc<std::uint64_t>(m, 2);
  auto* y = shared_alloc<std::uint64_t>(m, 2);
  auto* state = shared_alloc<std::atomic<std::uint32_t>>(m);
  auto* outcome = shared_alloc<std::atomic<std::uint32_t>>(m, 2);
  // Two waiters, one on x and one on y (same entry); the holder of x dies while they wait.
  auto waiter = [&](std::uint32_t id, const void* obj, std::atomic<std::uint32_t>* out) {
    return spawn(id, [=] {
      if (!monitor_enter(m, obj, 5000 * kMs)) return 1;
      try {
        while (state->load() != 2) monitor_wait(m, obj, 50 * kMs);
        out->store(1);
      } catch (const OwnerDiedError&) {
        out->store(2);
      }
      monitor_exit(m, obj);
      return 0;
    });
  };
  pid_t wx = waiter(160, x, &outcome[0]);
  pid_t wy = waiter(161, y, &outcome[1]);
  REQUIRE(eventually([&] { return monitor_for(m, x).waiters.load() == 2; }));
  pid_t holder = spawn(162, [&] {
    monitor_enter(m, x);
    state->store(1);
    for (;;) pause();
    return 0;
  });
  REQUIRE(eventually([&] { return state->load() == 1; }));
  kill9(holder);
  state->store(2);
  CHECK(reap(wx) == 0);
  CHECK(reap(wy) == 0);
  CHECK(outcome[0].load() == 2);  // the waiter on x is x's next acquirer after the death
  CHECK(outcome[1].load() == 1);
  CHECK(enter_in_child(163, m, x) == 0);
}

TEST_CASE("processes: a waiter blocked on the dead holder's monitor is released", "[monitor][process][crash]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  auto* obj = shared_alloc<std::uint64_t>(m, 2);
  auto* holding = shared_alloc<std::atomic<std::uint32_t>>(m);
  auto* result = shared_alloc<std::atomic<std::uint32_t>>(m);
  pid_t holder = spawn(50, [&] {
    monitor_enter(m, obj);
    holding->store(1);
    for (;;) pause();
    return 0;
  });
  REQUIRE(eventually([&] { return holding->load() == 1; }));
  pid_t blocked = spawn(51, [&] {
    try {
      monitor_enter(m, obj, 20'000 * kMs);
      result->store(1);  // not expected: it must report the death
      monitor_exit(m, obj);
    } catch (const OwnerDiedError&) {
      result->store(2);
    }
    return 0;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // `blocked` sleeps in the lock
  kill9(holder);
  CHECK(reap(blocked) == 0);
  CHECK(result->load() == 2);
  REQUIRE(monitor_enter(m, obj, 5000 * kMs));
  monitor_exit(m, obj);
}

TEST_CASE("processes: kill -9 of a child blocked in monitor_wait leaves the monitor usable",
          "[monitor][process][crash]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  auto* obj = shared_alloc<std::uint64_t>(m, 2);
  pid_t kid = spawn(60, [&] {
    monitor_enter(m, obj);
    for (;;) monitor_wait(m, obj, -1);
    return 0;
  });
  REQUIRE(eventually([&] { return monitor_for(m, obj).waiters.load() == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  kill9(kid);
  // The waiter had released the mutex: no owner-died report, just a free monitor.
  REQUIRE(monitor_enter(m, obj, 5000 * kMs));
  monitor_notify_all(m, obj);  // finds a stale waiter count; must be harmless
  monitor_exit(m, obj);

  // And wait/notify across processes still work on it.
  auto* flag = shared_alloc<std::uint64_t>(m);
  pid_t waiter = spawn(61, [&] {
    if (!monitor_enter(m, obj, 5000 * kMs)) return 1;
    const std::int64_t deadline = monotonic_ns() + 20'000 * kMs;
    while (*static_cast<volatile std::uint64_t*>(flag) == 0 && monotonic_ns() < deadline) monitor_wait(m, obj, 1000 * kMs);
    const bool ok = *static_cast<volatile std::uint64_t*>(flag) == 1;
    monitor_exit(m, obj);
    return ok ? 0 : 2;
  });
  REQUIRE(eventually([&] { return monitor_for(m, obj).waiters.load() == 2; }));  // 1 stale + 1 live
  REQUIRE(monitor_enter(m, obj, 5000 * kMs));
  *flag = 1;
  monitor_notify_all(m, obj);
  monitor_exit(m, obj);
  CHECK(reap(waiter) == 0);
}

TEST_CASE("processes: kill -9 of a child blocked in channel_receive leaves the channel usable",
          "[channel][process][crash]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  ChannelRecord* c = find_or_create_channel(m, "victim", 2);
  pid_t kid = spawn(70, [&] {
    Word w = kNull;
    channel_receive(m, c, &w, -1);
    return 9;  // must not get here
  });
  REQUIRE(eventually([&] { return c->recv_waiters.load() == 1; }));
  kill9(kid);

  Word w = kNull;
  REQUIRE(channel_send(m, c, make_small(7), 1000 * kMs));
  REQUIRE(channel_receive(m, c, &w, 1000 * kMs));
  CHECK(w == make_small(7));
  pid_t kid2 = spawn(71, [&] {
    Word v = kNull;
    if (!channel_receive(m, c, &v, 10'000 * kMs)) return 1;
    if (v != make_small(8)) return 2;
    return channel_send(m, c, make_small(9), 10'000 * kMs) ? 0 : 3;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  REQUIRE(channel_send(m, c, make_small(8), 10'000 * kMs));
  CHECK(reap(kid2) == 0);
  REQUIRE(channel_receive(m, c, &w, 10'000 * kMs));
  CHECK(w == make_small(9));
}

TEST_CASE("processes: kill -9 of a child holding a channel's lock leaves the channel usable",
          "[channel][process][crash]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  ChannelRecord* c = find_or_create_channel(m, "locked", 2);
  REQUIRE(channel_send(m, c, make_small(1), 0));
  auto* holding = shared_alloc<std::atomic<std::uint32_t>>(m);
  pid_t kid = spawn(80, [&] {
    c->lock.lock();
    holding->store(1);
    for (;;) pause();
    return 0;
  });
  REQUIRE(eventually([&] { return holding->load() == 1; }));
  kill9(kid);
  Word w = kNull;
  REQUIRE(channel_receive(m, c, &w, 1000 * kMs));
  CHECK(w == make_small(1));
  REQUIRE(channel_send(m, c, make_small(2), 1000 * kMs));
  REQUIRE(channel_receive(m, c, &w, 1000 * kMs));
  CHECK(w == make_small(2));
}

TEST_CASE("processes: deleting a channel wakes another process blocked in receive or send with KeyError",
          "[channel][process][delete]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  ChanRef empty = open_channel(m, "doomed.empty", 2);
  ChanRef full = open_channel(m, "doomed.full", 1);
  REQUIRE(channel_send(m, full.rec, make_small(1), 0, -1, full.generation));
  // Children exit 0 only when the blocked call ends in KeyError naming the deleted channel.
  auto blocked = [&](std::uint32_t id, bool receive) {
    return spawn(id, [=] {
      try {
        if (receive) {
          Word w = kNull;
          channel_receive(m, empty.rec, &w, 30'000 * kMs, -1, nullptr, empty.generation);
        } else {
          channel_send(m, full.rec, make_small(2), 30'000 * kMs, -1, full.generation);
        }
        return 1;
      } catch (const KeyError& e) {
        return std::string(e.what()).find("was deleted") != std::string::npos ? 0 : 2;
      }
    });
  };
  pid_t r = blocked(170, true);
  pid_t s = blocked(171, false);
  REQUIRE(eventually([&] { return empty.rec->recv_waiters.load() == 1 && full.rec->send_waiters.load() == 1; }));
  const std::int64_t t0 = monotonic_ns();
  REQUIRE(delete_channel(m, "doomed.empty"));
  REQUIRE(delete_channel(m, "doomed.full"));
  CHECK(reap(r) == 0);
  CHECK(reap(s) == 0);
  CHECK(monotonic_ns() - t0 < 20'000 * kMs);  // woken by the deletion, not by the timeout
  // The name works again, for every process.
  ChanRef again = open_channel(m, "doomed.empty", 2);
  pid_t k = spawn(172, [&] {
    ChanRef mine = open_channel(m, "doomed.empty", 99);
    return channel_send(m, mine.rec, make_small(9), 5000 * kMs, -1, mine.generation) ? 0 : 1;
  });
  CHECK(reap(k) == 0);
  Word w = kNull;
  REQUIRE(channel_receive(m, again.rec, &w, 5000 * kMs, -1, nullptr, again.generation));
  CHECK(w == make_small(9));
}

TEST_CASE("processes: concurrent create, use and delete of channels and repositories by several processes",
          "[channel][repository][process][delete]") {
  test::TestSegment seg(1 << 20, 2 << 20);
  Metadata* m = seg.meta();
  constexpr int kProcs = 3;
  constexpr int kRounds = 3000;
  std::vector<pid_t> kids;
  for (int p = 0; p < kProcs; ++p) {
    kids.push_back(spawn(180 + p, [=] {
      // Every process works on the same few names: any operation may find its handle stale.
      for (int i = 0; i < kRounds; ++i) {
        const std::string name = "shared." + std::to_string(i % 3);
        try {
          ChanRef c = open_channel(m, name, (i % 2) ? 1024 : 3000);
          channel_send(m, c.rec, make_small(i), 0, -1, c.generation);
          Word w = kNull;
          channel_receive(m, c.rec, &w, 0, -1, nullptr, c.generation);
          if (w != kNull && !is_small_int(w)) return 3;
          RepoRef r = open_repository(m, name);
          repository_store(r, make_small(i));
          const Word v = repository_load(r).word();
          if (v != kNull && !is_small_int(v)) return 4;
        } catch (const KeyError&) {
          // Another process deleted the name between our open and use: the expected outcome.
        }
        if (i % 5 == p) {
          delete_channel(m, name);
          delete_repository(m, name);
        }
      }
      return 0;
    }));
  }
  for (pid_t k : kids) CHECK(reap(k) == 0);
  // 3 processes x 3000 rounds of channels of up to 3000 slots went through 2 MiB.
  for (int i = 0; i < 3; ++i) {
    delete_channel(m, "shared." + std::to_string(i));
    delete_repository(m, "shared." + std::to_string(i));
  }
  ChanRef c = open_channel(m, "shared.0", 4);
  REQUIRE(channel_send(m, c.rec, make_small(1), 0, -1, c.generation));
}

TEST_CASE("processes: kill -9 of a process creating and deleting channels and repositories leaves them usable",
          "[channel][repository][process][delete][crash]") {
  test::TestSegment seg(1 << 20, 2 << 20);
  Metadata* m = seg.meta();
  auto* rounds = shared_alloc<std::atomic<std::uint64_t>>(m);
  for (int kill = 0; kill < 6; ++kill) {
    const std::uint64_t before = rounds->load();
    pid_t kid = spawn(190 + kill, [&] {
      for (std::uint64_t i = 0;; ++i) {
        const std::string name = "crash." + std::to_string(i % 2);
        ChanRef c = open_channel(m, name, 1 + (i % 3) * 1000);
        channel_send(m, c.rec, make_small(static_cast<std::int64_t>(i)), 0, -1, c.generation);
        RepoRef r = open_repository(m, name);
        repository_store(r, make_small(static_cast<std::int64_t>(i)));
        delete_channel(m, name);
        delete_repository(m, name);
        rounds->fetch_add(1);
      }
      return 0;
    });
    // Kill it at some point of its loop (it may hold classes_lock or a record's lock).
    REQUIRE(eventually([&] { return rounds->load() > before + 50 + kill * 37; }));
    kill9(kid);
    for (int i = 0; i < 2; ++i) {
      // The name may be live (the kid died between creating and deleting it, maybe with a full
      // channel of capacity 1) or deleted: delete it either way, then it must work afresh.
      const std::string name = "crash." + std::to_string(i);
      delete_channel(m, name);
      delete_repository(m, name);
      ChanRef c = open_channel(m, name, 4);
      CHECK(channel_capacity(c) == 4);
      REQUIRE(channel_send(m, c.rec, make_small(7), 1000 * kMs, -1, c.generation));
      Word w = kNull;
      REQUIRE(channel_receive(m, c.rec, &w, 1000 * kMs, -1, nullptr, c.generation));
      RepoRef r = open_repository(m, name);
      repository_store(r, make_small(8));
      CHECK(repository_load(r).word() == make_small(8));
      CHECK(delete_channel(m, name));
      CHECK(delete_repository(m, name));
    }
  }
  VerifyReport report = verify_heap(m);
  INFO(report.summary());
  CHECK(report.ok());
}
