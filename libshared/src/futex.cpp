#include "futex.hpp"

#include <sched.h>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <ctime>

namespace colors::detail {

bool futex_wait(std::atomic<std::uint32_t>* word, std::uint32_t expected, std::int64_t timeout_ns) {
  timespec ts{};
  timespec* tsp = nullptr;
  if (timeout_ns >= 0) {
    ts.tv_sec = timeout_ns / 1000000000;
    ts.tv_nsec = timeout_ns % 1000000000;
    tsp = &ts;
  }
  // Not FUTEX_PRIVATE_FLAG: the word lives in memory shared between processes.
  long rc = syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAIT, expected, tsp, nullptr, 0);
  return !(rc == -1 && errno == ETIMEDOUT);
}

void futex_wake_all(std::atomic<std::uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

std::int64_t spin_budget_ns() {
  static const std::int64_t budget = [] {
    const char* s = std::getenv("COLORS_SPIN_NS");
    if (s == nullptr || *s == '\0') return std::int64_t{50000};
    char* end = nullptr;
    long long v = std::strtoll(s, &end, 10);
    return (end != nullptr && *end == '\0' && v >= 0) ? static_cast<std::int64_t>(v) : std::int64_t{50000};
  }();
  return budget;
}

namespace {
thread_local bool t_yielding = false;  // the mode the thread's last wait ended in (see Poller)

bool yield_enabled() {
  static const bool yield = [] {
    const char* s = std::getenv("COLORS_SPIN_YIELD");
    return !(s != nullptr && s[0] == '0' && s[1] == '\0');
  }();
  return yield;
}
}  // namespace

Poller::Poller() : yielding_(t_yielding) {}

Poller::~Poller() { t_yielding = yielding_; }

void Poller::poll(std::int64_t now_ns) {
  if (!yield_enabled()) {
    cpu_relax();
    return;
  }
  if (!yielding_) {
    if (next_probe_ == 0) next_probe_ = now_ns + kProbeNs;
    if (now_ns < next_probe_) {
      cpu_relax();
      return;
    }
  }
  sched_yield();
  const std::int64_t after = monotonic_ns();
  yielding_ = after - now_ns > kRanOtherNs;
  next_probe_ = after + kProbeNs;
}

std::int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace colors::detail
