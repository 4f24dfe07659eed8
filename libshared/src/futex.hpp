// Process-shared futex wait/wake on 32-bit words in the segment, and the spin-then-block policy.
#pragma once
#include <atomic>
#include <cstdint>

namespace colors::detail {

// Blocks while *word == expected, for at most timeout_ns (negative: no limit). Returns false on
// timeout. Spurious returns are allowed; callers re-check their condition.
bool futex_wait(std::atomic<std::uint32_t>* word, std::uint32_t expected, std::int64_t timeout_ns);
void futex_wake_all(std::atomic<std::uint32_t>* word);

// Nanoseconds a waiter on a latency path busy-polls before it blocks in the kernel. A cross-core
// futex wake costs ~70 us on the target machines while a polled cache line costs ~0.1 us, so a
// short spin wins whenever the peer answers quickly. Read once from COLORS_SPIN_NS (default 50 us;
// 0 disables spinning).
std::int64_t spin_budget_ns();

std::int64_t monotonic_ns();

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// The poll loop of one wait: how a waiter spends its spin budget. Pause-only polls while nothing
// else wants this core, a sched_yield per poll while something does:
//  * a pause loop notices the peer's answer within ~0.1 us, but keeps a peer that runs on the same
//    core (2 vCPUs here: common) off it until the spin budget ends (measured: 61 us rpc round
//    trips with a 50 us budget);
//  * a sched_yield per poll lets such a peer run (7 us round trips), but it is a syscall (~0.5 us
//    here, even with nothing else to run) that delays noticing an answer from another core
//    (measured, C++ <-> C++ rpc round trip: 1.40 us with yielding polls, 0.87 with pause polls).
// Whether something else wants the core shows in how long sched_yield takes: it returns at once
// when nothing else is runnable here. So:
//  * a wait starts in the mode its thread's previous wait ended in;
//  * in pause mode it probes with one sched_yield every kProbeNs of polling;
//  * after any sched_yield: yield mode if it took longer than kRanOtherNs (another thread ran
//    meanwhile), else pause mode.
// COLORS_SPIN_YIELD=0 (read once): pause polls only, never yield.
// Invariant: one Poller per wait, on the waiting thread's stack (its mode goes to the thread's
// next wait when it is destroyed).
class Poller {
 public:
  static constexpr std::int64_t kProbeNs = 20000;
  static constexpr std::int64_t kRanOtherNs = 1500;

  Poller();
  ~Poller();
  Poller(const Poller&) = delete;
  Poller& operator=(const Poller&) = delete;

  // One poll step; `now_ns` is the caller's monotonic_ns() reading for this step.
  void poll(std::int64_t now_ns);
  bool yielding() const { return yielding_; }

 private:
  std::int64_t next_probe_ = 0;  // pause mode: when to probe next (0: at the first poll + kProbeNs)
  bool yielding_;
};

}  // namespace colors::detail
