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

// One step of a waiter's poll loop: gives the core away if another thread wants it. With few
// cores (2 vCPUs here) the peer a waiter waits for often runs on the same core; a poll loop that
// does not yield keeps it off the core for the whole spin budget (measured: an rpc round trip of
// 61 us with a 50 us budget, 7 us with yielding polls). sched_yield returns at once when nothing
// else is runnable on this core, so polling stays fast when the peer has a core of its own.
// Read once from COLORS_SPIN_YIELD (default 1; 0: plain pause loop).
void poll_pause();

}  // namespace colors::detail
