#include "client_table.hpp"

#include <exception>

#include "container_lock.hpp"
#include "heap.hpp"
#include "roots.hpp"

namespace colors::server {

using detail::ClientSlot;
using detail::ClientState;

namespace {
std::uint32_t state_of(const ClientSlot& s) { return s.state.load(std::memory_order_acquire); }
}  // namespace

std::optional<Claim> claim_client_slot(detail::Metadata* m, pid_t pid, uid_t uid) {
  for (std::uint32_t i = 0; i < kMaxClients; ++i) {
    ClientSlot& s = m->clients[i];
    if (state_of(s) != static_cast<std::uint32_t>(ClientState::kFree)) continue;
    std::uint32_t id = m->next_client_id.fetch_add(1, std::memory_order_relaxed);
    // Wrapped: skip 0 (no client) and kServerLockOwner (the server's rollbacks, container_lock.hpp).
    while (id == 0 || id == detail::kServerLockOwner) id = m->next_client_id.fetch_add(1, std::memory_order_relaxed);
    s.client_id.store(id, std::memory_order_relaxed);
    s.pid.store(static_cast<std::int32_t>(pid), std::memory_order_relaxed);
    s.uid.store(static_cast<std::uint32_t>(uid), std::memory_order_relaxed);
    s.pressure_watchers.store(0, std::memory_order_relaxed);
    s.roots.store(detail::kNull, std::memory_order_relaxed);
    s.live_bytes.store(0, std::memory_order_relaxed);
    s.allocated_since.store(0, std::memory_order_relaxed);
    s.state.store(static_cast<std::uint32_t>(ClientState::kActive), std::memory_order_release);
    return Claim{id, i};
  }
  return std::nullopt;
}

Cleanup release_client_slot(detail::Metadata* m, const Claim& c,
                            const std::function<std::size_t(std::uint32_t, std::uint32_t)>& reclaim) {
  Cleanup r;
  ClientSlot& s = m->clients[c.slot];
  s.state.store(static_cast<std::uint32_t>(ClientState::kReclaiming), std::memory_order_release);
  try {
    r.tlab_bytes = reclaim(c.client_id, c.slot);
  } catch (const std::exception& e) {
    r.ok = false;
    r.error = e.what();
    return r;  // slot stays kReclaiming: see the invariant in the header
  }
  s.pid.store(0, std::memory_order_relaxed);
  s.pressure_watchers.store(0, std::memory_order_relaxed);
  s.client_id.store(0, std::memory_order_relaxed);
  s.state.store(static_cast<std::uint32_t>(ClientState::kFree), std::memory_order_release);
  return r;
}

std::size_t active_clients(const detail::Metadata* m) {
  std::size_t n = 0;
  for (const ClientSlot& s : m->clients)
    if (state_of(s) == static_cast<std::uint32_t>(ClientState::kActive)) ++n;
  return n;
}

}  // namespace colors::server
