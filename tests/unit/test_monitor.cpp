// Unit tests of shared monitors (libshared/src/monitor.*), within one process.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>
#include <vector>

#include "colors/errors.hpp"
#include "futex.hpp"
#include "monitor.hpp"
#include "session.hpp"
#include "test_segment.hpp"

using namespace colors;
using namespace colors::detail;

namespace {

constexpr std::int64_t kMs = 1'000'000;

std::int64_t elapsed_ms(std::int64_t start) { return (monotonic_ns() - start) / kMs; }

// Two distinct, 16-byte aligned addresses whose monitors share one table entry.
std::pair<const void*, const void*> colliding_pair(Metadata* m) {
  const std::uintptr_t base = 0x7000'0000'0000ULL;
  const std::size_t want = monitor_index(m, reinterpret_cast<const void*>(base));
  for (std::uintptr_t a = base + 16;; a += 16) {
    if (monitor_index(m, reinterpret_cast<const void*>(a)) == want) {
      return {reinterpret_cast<const void*>(base), reinterpret_cast<const void*>(a)};
    }
  }
}

bool interrupt_now() { return true; }

}  // namespace

TEST_CASE("monitor: hashing spreads neighbouring objects", "[monitor]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  std::vector<int> used(kMonitorCount, 0);
  for (std::uintptr_t a = 0x600000100000ULL, i = 0; i < kMonitorCount; ++i, a += 32) {
    ++used[monitor_index(m, reinterpret_cast<const void*>(a))];
  }
  int distinct = 0;
  for (int u : used) distinct += u != 0;
  // Random placement of n balls in n bins fills ~63%; a poor hash (address bits) far less.
  CHECK(distinct > static_cast<int>(kMonitorCount / 2));
}

TEST_CASE("monitor: enter is re-entrant and exit counts down", "[monitor]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  int obj = 0;
  REQUIRE(monitor_enter(m, &obj));
  REQUIRE(monitor_enter(m, &obj));
  REQUIRE(monitor_enter(m, &obj, 0));
  CHECK(monitor_held_by_me(m, &obj));
  CHECK(monitor_for(m, &obj).recursion.load() == 3);

  std::atomic<int> other{-1};
  std::thread([&] { other = monitor_enter(m, &obj, 0) ? 1 : 0; }).join();
  CHECK(other == 0);  // held by us

  monitor_exit(m, &obj);
  monitor_exit(m, &obj);
  CHECK(monitor_held_by_me(m, &obj));
  monitor_exit(m, &obj);
  CHECK_FALSE(monitor_held_by_me(m, &obj));
  CHECK_THROWS_AS(monitor_exit(m, &obj), NotOwnerError);

  std::thread([&] {
    other = monitor_enter(m, &obj, 0) ? 1 : 0;
    if (other == 1) monitor_exit(m, &obj);
  }).join();
  CHECK(other == 1);
}

TEST_CASE("monitor: exit, wait and notify by a non-owner throw NotOwnerError", "[monitor]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  int obj = 0;
  CHECK_THROWS_AS(monitor_exit(m, &obj), NotOwnerError);
  CHECK_THROWS_AS(monitor_wait(m, &obj, 1000), NotOwnerError);
  CHECK_THROWS_AS(monitor_notify_all(m, &obj), NotOwnerError);

  REQUIRE(monitor_enter(m, &obj));
  int thrown = 0;
  std::thread([&] {
    try {
      monitor_exit(m, &obj);
    } catch (const NotOwnerError& e) {
      ++thrown;
      CHECK(std::string(e.what()).find("does not hold") != std::string::npos);
    }
    try {
      monitor_notify_all(m, &obj);
    } catch (const NotOwnerError&) {
      ++thrown;
    }
    try {
      monitor_wait(m, &obj, 1000);
    } catch (const NotOwnerError&) {
      ++thrown;
    }
  }).join();
  CHECK(thrown == 3);
  CHECK(monitor_held_by_me(m, &obj));  // the failed attempts changed nothing
  monitor_exit(m, &obj);
}

TEST_CASE("monitor: enter with a timeout gives up while another thread holds it", "[monitor]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  int obj = 0;
  std::atomic<bool> held{false}, release{false};
  std::thread holder([&] {
    monitor_enter(m, &obj);
    held = true;
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    monitor_exit(m, &obj);
  });
  while (!held) std::this_thread::yield();
  std::int64_t t0 = monotonic_ns();
  CHECK_FALSE(monitor_enter(m, &obj, 80 * kMs));  // longer than one interrupt slice
  std::int64_t ms = elapsed_ms(t0);
  CHECK(ms >= 75);
  CHECK(ms < 2000);
  release = true;
  holder.join();
  CHECK(monitor_enter(m, &obj, 1000 * kMs));
  monitor_exit(m, &obj);
}

TEST_CASE("monitor: wait times out, returns false and keeps the recursion count", "[monitor]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  int obj = 0;
  monitor_enter(m, &obj);
  monitor_enter(m, &obj);
  std::int64_t t0 = monotonic_ns();
  CHECK_FALSE(monitor_wait(m, &obj, 30 * kMs));
  std::int64_t ms = elapsed_ms(t0);
  CHECK(ms >= 29);
  CHECK(ms < 1000);
  CHECK(monitor_held_by_me(m, &obj));
  CHECK(monitor_for(m, &obj).recursion.load() == 2);
  CHECK(monitor_for(m, &obj).waiters.load() == 0);
  // Also across several interrupt slices, without spinning.
  t0 = monotonic_ns();
  CHECK_FALSE(monitor_wait(m, &obj, 120 * kMs, 0));
  CHECK(elapsed_ms(t0) >= 119);
  monitor_exit(m, &obj);
  monitor_exit(m, &obj);
  CHECK_THROWS_AS(monitor_exit(m, &obj), NotOwnerError);
}

TEST_CASE("monitor: wait releases the monitor while waiting", "[monitor]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  int obj = 0;
  std::atomic<int> phase{0};
  std::thread waiter([&] {
    monitor_enter(m, &obj);
    phase = 1;
    while (phase != 2) monitor_wait(m, &obj, 5000 * kMs);
    phase = 3;
    monitor_exit(m, &obj);
  });
  while (phase != 1) std::this_thread::yield();
  REQUIRE(monitor_enter(m, &obj, 5000 * kMs));  // possible only because the waiter released it
  phase = 2;
  monitor_notify_all(m, &obj);
  monitor_exit(m, &obj);
  waiter.join();
  CHECK(phase == 3);
}

TEST_CASE("monitor: notify_all wakes every waiting thread", "[monitor]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  int obj = 0;
  constexpr int kThreads = 6;
  bool go = false;  // guarded by the monitor
  std::atomic<int> woken{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < kThreads; ++i) {
    ts.emplace_back([&, i] {
      monitor_enter(m, &obj);
      // Half spin first, half go straight to the kernel.
      const std::int64_t spin = i % 2 == 0 ? -1 : 0;
      const std::int64_t deadline = monotonic_ns() + 10'000 * kMs;
      while (!go && monotonic_ns() < deadline) monitor_wait(m, &obj, 10'000 * kMs, spin);
      if (go) ++woken;
      monitor_exit(m, &obj);
    });
  }
  MonitorEntry& e = monitor_for(m, &obj);
  std::int64_t t0 = monotonic_ns();
  while (e.waiters.load() < static_cast<std::uint32_t>(kThreads) && elapsed_ms(t0) < 5000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(e.waiters.load() == kThreads);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // let the spinners reach the kernel
  t0 = monotonic_ns();
  monitor_enter(m, &obj);
  go = true;
  monitor_notify_all(m, &obj);
  monitor_exit(m, &obj);
  for (auto& t : ts) t.join();
  CHECK(woken == kThreads);
  CHECK(elapsed_ms(t0) < 2000);  // woken by the notify, not by their 10 s timeouts
  CHECK(e.waiters.load() == 0);
}

TEST_CASE("monitor: objects that share an entry still work", "[monitor]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  auto [a, b] = colliding_pair(m);
  REQUIRE(a != b);
  REQUIRE(&monitor_for(m, a) == &monitor_for(m, b));

  // Nested entry of both from one thread: no self-deadlock; the entry names both objects.
  REQUIRE(monitor_enter(m, a));
  REQUIRE(monitor_enter(m, b, 0));
  CHECK(monitor_for(m, a).recursion.load() == (1 | kMonitorOthersHeld));
  CHECK(monitor_for(m, a).extra_used.load() == 1);
  CHECK(monitor_held_by_me(m, a));
  CHECK(monitor_held_by_me(m, b));
  int other = -1;
  std::thread([&] { other = monitor_enter(m, b, 0); }).join();
  CHECK(other == 0);  // b's monitor is busy because a's is held
  monitor_exit(m, b);
  monitor_exit(m, a);

  // A waiter on `a` is woken by a notify on `b` (spuriously, from its point of view), and a
  // notify on `a` reaches it even though waiters of `b` share the entry.
  std::atomic<int> state{0};
  std::thread waiter([&] {
    monitor_enter(m, a);
    state = 1;
    while (state != 2) monitor_wait(m, a, 5000 * kMs);
    state = 3;
    monitor_exit(m, a);
  });
  while (state != 1) std::this_thread::yield();
  monitor_enter(m, b);
  state = 2;
  monitor_notify_all(m, b);
  monitor_exit(m, b);
  waiter.join();
  CHECK(state == 3);
}

TEST_CASE("monitor: a blocking wait runs the interrupt hook and keeps the monitor", "[monitor]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  int obj = 0;
  bool caught = false, held_after = false;
  std::int64_t ms = 0;
  std::thread t([&] {
    set_interrupt_hook(&interrupt_now);
    monitor_enter(m, &obj);
    std::int64_t t0 = monotonic_ns();
    try {
      monitor_wait(m, &obj, -1, 0);
    } catch (const InterruptedError&) {
      caught = true;
    }
    ms = elapsed_ms(t0);
    held_after = monitor_held_by_me(m, &obj);
    monitor_exit(m, &obj);
    set_interrupt_hook(nullptr);
  });
  t.join();
  CHECK(caught);
  CHECK(held_after);
  CHECK(ms < 1000);  // within about one slice (50 ms)
}

TEST_CASE("monitor: a stopped server ends blocking waits with ServerGoneError", "[monitor]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  int obj = 0;
  const std::uint32_t before = m->server_state.load();
  monitor_enter(m, &obj);
  m->server_state.store(static_cast<std::uint32_t>(ServerState::kStopped));
  CHECK_THROWS_AS(monitor_wait(m, &obj, 10'000 * kMs, 0), ServerGoneError);
  CHECK(monitor_held_by_me(m, &obj));
  // A contended enter notices too.
  bool gone = false;
  std::thread([&] {
    try {
      monitor_enter(m, &obj, 10'000 * kMs);
    } catch (const ServerGoneError&) {
      gone = true;
    }
  }).join();
  CHECK(gone);
  m->server_state.store(before);
  monitor_exit(m, &obj);
}

TEST_CASE("monitor: many threads incrementing under one monitor", "[monitor]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  static std::uint64_t counter = 0;
  counter = 0;
  constexpr int kThreads = 4, kIters = 20000;
  std::vector<std::thread> ts;
  for (int i = 0; i < kThreads; ++i) {
    ts.emplace_back([&] {
      for (int k = 0; k < kIters; ++k) {
        MonitorGuard g(m, &counter);
        counter = counter + 1;
      }
    });
  }
  for (auto& t : ts) t.join();
  CHECK(counter == static_cast<std::uint64_t>(kThreads) * kIters);
}

TEST_CASE("monitor: one thread holding many objects of one entry, in any exit order", "[monitor]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  set_monitor_table_bits(m, 0);  // every object on one entry
  std::uint64_t objs[16] = {};
  MonitorEntry& e = monitor_for(m, &objs[0]);
  // More distinct objects than the entry names (1 + kMonitorExtraHolds): the rest are counted.
  for (int i = 0; i < 8; ++i) REQUIRE(monitor_enter(m, &objs[i * 2], 0));
  REQUIRE(monitor_enter(m, &objs[0], 0));
  CHECK(e.overflow.load() == 8 - 1 - kMonitorExtraHolds);
  for (int i = 0; i < 8; ++i) CHECK(monitor_held_by_me(m, &objs[i * 2]));
  // Leave the first object first: the entry stays held while the others are.
  monitor_exit(m, &objs[0]);
  monitor_exit(m, &objs[0]);
  int other = -1;
  std::thread([&] { other = monitor_enter(m, &objs[14], 0); }).join();
  CHECK(other == 0);
  for (int i = 1; i < 8; ++i) monitor_exit(m, &objs[i * 2]);
  CHECK(e.owner.load() == 0);
  CHECK(e.recursion.load() == 0);
  CHECK(e.held.load() == 0);
  CHECK(e.extra_used.load() == 0);
  std::thread([&] {
    other = monitor_enter(m, &objs[14], 0);
    if (other) monitor_exit(m, &objs[14]);
  }).join();
  CHECK(other == 1);

  // Without overflow, exiting an object not held is NotOwnerError, and a wait keeps both held.
  REQUIRE(monitor_enter(m, &objs[0]));
  REQUIRE(monitor_enter(m, &objs[2]));
  CHECK_THROWS_AS(monitor_exit(m, &objs[4]), NotOwnerError);
  CHECK_THROWS_AS(monitor_wait(m, &objs[4], 0), NotOwnerError);
  CHECK_FALSE(monitor_wait(m, &objs[2], 1 * kMs));
  CHECK(monitor_held_by_me(m, &objs[0]));
  CHECK(monitor_held_by_me(m, &objs[2]));
  monitor_exit(m, &objs[0]);
  CHECK(monitor_held_by_me(m, &objs[2]));
  CHECK_FALSE(monitor_held_by_me(m, &objs[0]));
  monitor_exit(m, &objs[2]);
  CHECK(e.owner.load() == 0);
}
