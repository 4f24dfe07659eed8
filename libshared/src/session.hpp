// Process-wide attachment state shared by the internal modules.
#pragma once
#include <atomic>
#include <vector>
#include <cstdint>

#include "layout.hpp"

namespace colors::detail {

// Client id of this process's attachment (0 when not attached). Monitor owners and TLAB owners
// are derived from it.
// Inline: every allocation reads the id (its TLAB's owner).
extern std::atomic<std::uint32_t> g_client_id;    // written only by set_current_client
extern std::atomic<std::uint32_t> g_client_slot;
inline std::uint32_t current_client_id() { return g_client_id.load(std::memory_order_relaxed); }
inline std::uint32_t current_client_slot() { return g_client_slot.load(std::memory_order_relaxed); }
void set_current_client(std::uint32_t client_id, std::uint32_t slot);
// Every client id this process has had (set_current_client records them; a fork child starts
// with none). A monitor's owner word keeps the client id of its thread's first monitor operation,
// which may be an earlier attachment's (monitor.cpp), and tells this process's holders from a
// dead process's whose thread id the kernel gave to one of ours.
std::vector<std::uint32_t> own_client_ids();
void forget_own_client_ids();
// Changes at every attach and detach (and in a fork child): an object that keeps raw pointers into
// the segment remembers it and refuses to work once it changed (another attachment, maybe another
// server's segment, can be mapped at the same address).
extern std::atomic<std::uint64_t> g_attachment_epoch;  // defined in client.cpp
// Inline: transactions check it on every read.
inline std::uint64_t attachment_epoch() { return g_attachment_epoch.load(std::memory_order_acquire); }

// Blocking waits (monitor enter and wait, channel send and receive) wake at least every
// kInterruptSliceNs and call the hook; when it returns true they throw InterruptedError. Bindings
// install one (Python: pending signals; Java: Thread.interrupted()). Per thread.
using InterruptHook = bool (*)();
inline constexpr std::int64_t kInterruptSliceNs = 50'000'000;
void set_interrupt_hook(InterruptHook hook);
// Throws InterruptedError if the hook asks to. Also throws ServerGoneError when the server stopped
// (kStopped), and after a server's death waits for a successor (check_server_link).
void check_wait_interrupts(Metadata* m);
// The hook half of check_wait_interrupts: throws InterruptedError if the hook asks to. For waits
// that do not need the server (a plain change waiting for a transaction to finish).
void check_interrupt();

// Throws ServerGoneError when the server has shut down (its state in the segment) or its
// connection is gone (the watcher's flag, server_watch.hpp). No system call.
void check_server(Metadata* m);
// The connection half of check_server. Once the server's connection closed it runs the
// reconnect hook, which waits (up to the attach timeout) for a successor server that adopted the
// heap and reattaches this client's slot to it, or throws ServerGoneError. Operations that need
// the server (repositories, channels, classes, rpc, collect, blocking waits) call it; reads and
// writes of objects already held, and allocation while the heap has room, do not need it.
void check_server_link();
// Installed by attach (client.cpp): the reattach after a server's death. Throws ServerGoneError
// when no successor takes the client back in time.
using ReconnectHook = void (*)();
void set_reconnect_hook(ReconnectHook hook);
// The cheap half of check_server: only the server state word (no system call). Every API entry
// point that touches shared state calls it, so a clean shutdown is noticed at once.
void check_server_state(Metadata* m);

}  // namespace colors::detail
