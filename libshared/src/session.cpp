#include "session.hpp"

#include <unistd.h>

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <new>
#include <vector>

#include "colors/errors.hpp"
#include "server_watch.hpp"

namespace colors::detail {

std::atomic<std::uint32_t> g_client_id{0};
std::atomic<std::uint32_t> g_client_slot{0};

namespace {
thread_local InterruptHook t_hook = nullptr;
}  // namespace

namespace {
std::mutex g_own_ids_mu;
std::vector<std::uint32_t> g_own_ids;  // guarded by g_own_ids_mu; a few per attach, never many
}  // namespace

void set_current_client(std::uint32_t client_id, std::uint32_t slot) {
  if (client_id != 0) {
    std::lock_guard<std::mutex> g(g_own_ids_mu);
    if (std::find(g_own_ids.begin(), g_own_ids.end(), client_id) == g_own_ids.end()) g_own_ids.push_back(client_id);
  }
  g_client_slot.store(slot, std::memory_order_relaxed);
  g_client_id.store(client_id, std::memory_order_release);
}

std::vector<std::uint32_t> own_client_ids() {
  std::lock_guard<std::mutex> g(g_own_ids_mu);
  return g_own_ids;
}

// In a fork child (one thread): the parent's ids are not the child's, and the mutex may have been
// held by another parent thread.
void forget_own_client_ids() {
  new (&g_own_ids_mu) std::mutex();
  g_own_ids.clear();
}

void set_interrupt_hook(InterruptHook hook) { t_hook = hook; }

void check_server_state(Metadata* m) {
  if (m->server_state.load(std::memory_order_acquire) == static_cast<std::uint32_t>(ServerState::kStopped)) {
    throw ServerGoneError("the colors server has shut down; restart colors-server and attach again");
  }
}

namespace {
std::atomic<ReconnectHook> g_reconnect{nullptr};
}  // namespace

void set_reconnect_hook(ReconnectHook hook) { g_reconnect.store(hook, std::memory_order_release); }

void check_server_link() {
  if (!server_lost()) return;
  if (ReconnectHook hook = g_reconnect.load(std::memory_order_acquire); hook != nullptr) {
    hook();  // back with the successor, or ServerGoneError
    return;
  }
  throw ServerGoneError("the colors server died (its connection closed); restart colors-server and attach again");
}

void check_server(Metadata* m) {
  check_server_state(m);
  check_server_link();
}

void check_interrupt() {
  if (t_hook != nullptr && t_hook()) throw InterruptedError("blocking wait interrupted");
}

void check_wait_interrupts(Metadata* m) {
  check_interrupt();
  check_server(m);
}

}  // namespace colors::detail
