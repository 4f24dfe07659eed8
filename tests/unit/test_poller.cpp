// Module tests of the waiters' poll loop (futex.hpp, Poller): pause polls while nothing else wants
// the core, a sched_yield per poll while another thread does, and the mode carried to the thread's
// next wait.
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "futex.hpp"

using namespace colors::detail;

namespace {

bool pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

// Polls until the poller's mode is `want` or `limit_ns` passed; true if it got there.
bool poll_until_mode(Poller& p, bool want, std::int64_t limit_ns) {
  const std::int64_t end = monotonic_ns() + limit_ns;
  for (std::int64_t now = monotonic_ns(); now < end; now = monotonic_ns()) {
    p.poll(now);
    if (p.yielding() == want) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("a poller yields while another thread wants its core, and pauses again once none does") {
  const int cpu = sched_getcpu();
  REQUIRE(cpu >= 0);
  REQUIRE(pin_to(cpu));
  {
    Poller p;  // nothing else of ours on this core: pause mode (or back to it at the first probe)
    REQUIRE(poll_until_mode(p, false, 2'000'000'000));
  }
  std::atomic<bool> stop{false};
  std::atomic<bool> running{false};
  std::thread hog([&] {
    pin_to(cpu);
    running.store(true, std::memory_order_release);
    while (!stop.load(std::memory_order_acquire)) cpu_relax();
  });
  while (!running.load(std::memory_order_acquire)) std::this_thread::yield();
  {
    Poller p;  // a probe's sched_yield lets the hog run for its time slice: yield mode
    REQUIRE(poll_until_mode(p, true, 5'000'000'000));
  }
  {
    Poller next;  // the thread's next wait starts where the last one ended
    CHECK(next.yielding());
  }
  stop.store(true, std::memory_order_release);
  hog.join();
  {
    Poller p;  // alone again: the next sched_yield returns at once, pause mode
    REQUIRE(p.yielding());
    REQUIRE(poll_until_mode(p, false, 2'000'000'000));
  }
  {
    Poller next;
    CHECK_FALSE(next.yielding());
  }
  cpu_set_t all;
  CPU_ZERO(&all);
  for (int c = 0; c < CPU_SETSIZE; ++c) CPU_SET(c, &all);
  pthread_setaffinity_np(pthread_self(), sizeof all, &all);
}
