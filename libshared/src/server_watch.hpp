// Noticing the server's death without a system call per operation.
//
// While attached, one thread per process sleeps in poll() on the server connection and on a
// wake-up pipe. The connection carries nothing but the rare ping, so the only event it reports
// is the server closing its end: the server exited, was killed (the kernel closes its sockets),
// or shut down. The watcher then sets the process-wide `server_lost` flag and exits; the
// operations that need the server read the flag (one acquire load) and, once it is set, wait
// for a successor and reattach or throw ServerGoneError (session.hpp, check_server_link), and
// is_attached() turns false. So a client learns of the death within the wake-up latency of one
// thread (microseconds), not at its next system call.
//
// Invariants:
//  * At most one watcher runs per process, started by attach after the link exists and joined by
//    detach (or by attach replacing a lost attachment, or by a reattach replacing the dead
//    connection with the successor's) before the link's fd is closed, so the
//    watcher never polls a closed or reused descriptor.
//  * The watcher polls with POLLRDHUP only (POLLHUP and POLLERR are always reported): a pong
//    waiting to be read by ping_server does not wake it, and it never reads from the connection.
//  * `server_lost` is set only by the watcher of the current connection and cleared only by
//    start_server_watch (attach, or a reattach to a successor), under the link lock
//    (client.cpp, g_link_mu), before the new watcher starts.
//  * After fork() the child has no watcher (threads do not survive fork) and starts detached.
#pragma once

namespace colors::detail {

// True once the server of the current attachment closed its connection. Cheap: one load.
bool server_lost();

// Starts the watcher on `link_fd`. REQUIRES: the link lock is held, no watcher runs.
void start_server_watch(int link_fd);
// Stops and joins the watcher, if one runs. REQUIRES: the link lock is held.
void stop_server_watch();
// Fork child: forgets the parent's watcher (it does not exist in the child) and its pipe.
void forget_server_watch_after_fork();

}  // namespace colors::detail
