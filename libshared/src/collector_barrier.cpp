#include "collector_barrier.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace colors::detail {

std::atomic<bool> g_roots_unfenced{false};

namespace {

long membarrier(int cmd) { return ::syscall(__NR_membarrier, cmd, 0u, 0); }

}  // namespace

bool collector_barrier_available() {
  static const bool available = [] {
    // Fault hook (tests/integration/test_server_survival.cpp): a server as on a kernel without it.
    if (const char* f = std::getenv("COLORS_MEMBARRIER_FAULT"); f != nullptr && *f != '\0' && *f != '0') return false;
    const long cmds = membarrier(MEMBARRIER_CMD_QUERY);
    return cmds > 0 && (cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) != 0 && (cmds & MEMBARRIER_CMD_GLOBAL) != 0;
  }();
  return available;
}

void collector_barrier() {
  if (membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) == 0) return;
  if (membarrier(MEMBARRIER_CMD_GLOBAL) == 0) return;
  std::fprintf(stderr, "colors: membarrier failed (%s): clients may be relying on it, stopping the collector's process\n",
               std::strerror(errno));
  std::abort();
}

bool use_collector_barrier(const Metadata* m) {
  const char* fenced = std::getenv("COLORS_FENCED_ROOTS");
  const bool on = m->collector_barrier.load(std::memory_order_acquire) == 1 && (fenced == nullptr || *fenced == '\0' || *fenced == '0') &&
                  membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0;
  g_roots_unfenced.store(on, std::memory_order_release);
  return on;
}

void stop_using_collector_barrier() { g_roots_unfenced.store(false, std::memory_order_release); }

}  // namespace colors::detail
