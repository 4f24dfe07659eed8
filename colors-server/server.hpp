// The colors-server process: startup (single-instance locks, stale leftovers, segment, socket),
// the event loop, and the clean shutdown.
//
// Threads: one event-loop thread does everything here. It must never block for long (the
// collector will later run on its own threads): sockets are non-blocking, handshakes are
// answered as soon as their 16 bytes arrived and time out after kHandshakeTimeoutMs, and the loop
// only sleeps in poll().
#pragma once
#include "options.hpp"

namespace colors::server {

// Exit code of a stop whose shutdown checkpoint (--data-dir) failed: the heap was kept for the
// next server on the name, which adopts it, since it is newer than every checkpoint on disk.
inline constexpr int kExitShutdownCheckpointFailed = 4;

// Runs the server until SIGTERM or SIGINT. Returns the process's exit code: 0 after a clean
// shutdown, kExitShutdownCheckpointFailed, 1 when it could not start (another server holds the
// name or socket, the segment or socket could not be created, ...), with the reason logged, or
// kExitHeapRefused (adoption.hpp).
int run_server(const Options& options);

}  // namespace colors::server
