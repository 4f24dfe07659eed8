// Client side of the connection to colors-server: finding the socket, the versioned attach
// handshake, and the liveness checks on the connection kept open afterwards.
//
// Invariants:
//  * A client keeps its link's fd open for as long as it is attached: the server treats EOF on
//    it as the client's exit or death and then reclaims the client's TLABs and roots. Closing the
//    fd while still using the segment is therefore a bug (the server would reclaim live TLABs).
//  * The fd is opened with SOCK_CLOEXEC so an exec'd child does not keep a dead parent "alive".
//    A fork()ed child without exec does inherit it; see colors-server/README.md.
//
// REQUIRES: ping_server and close_link are not called concurrently on the same fd (callers
// serialize them, e.g. under the attach lock). server_link_alive never consumes data and may be
// called from any thread at any time.
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "colors/errors.hpp"

namespace colors::detail {

// $XDG_RUNTIME_DIR/colors/<name>.sock, or /tmp/colors-<uid>/<name>.sock without XDG_RUNTIME_DIR.
std::string default_socket_path(const std::string& name = "colors");
// `given` when not empty; else $COLORS_SOCKET when set and not empty; else default_socket_path().
std::string resolve_socket_path(const std::string& given);

// The uids a client accepts as its server's: its own effective uid, root, and the numeric uids
// listed in $COLORS_TRUSTED_UIDS (comma-separated). Throws InvalidArgumentError on a malformed list.
std::vector<uid_t> trusted_server_uids();

// How long connect_to_server keeps retrying a busy server, and waits for a handshake's answer
// (at least 250 ms, at most 10 s per attempt): $COLORS_ATTACH_TIMEOUT_MS, else
// kDefaultAttachTimeoutMs.
inline constexpr std::int64_t kDefaultAttachTimeoutMs = 5000;
std::int64_t attach_timeout_ms();

struct ServerLink {
  int fd = -1;                 // connected socket, blocking, close-on-exec
  int segment_fd = -1;         // the segment, passed by the server (SCM_RIGHTS), close-on-exec
  std::string segment_name;    // logical name, for messages
  std::uintptr_t address = 0;  // fixed address the segment must be mapped at
  std::size_t size = 0;        // total bytes of the segment
  std::uint32_t client_id = 0; // unique per attachment, never 0
  std::uint32_t slot = 0;      // index into Metadata::clients
  std::string socket_path;     // the path actually used (after resolve_socket_path)
};

// Connects to the server at resolve_socket_path(socket_path), checks who it is (SO_PEERCRED:
// trusted_server_uids()) and performs the handshake, which passes the segment's descriptor.
// A server that answers "busy" or closes the connection before answering is retried with a
// growing pause until attach_timeout_ms() has passed.
// Throws:
//  * ServerGoneError: no server there (no socket, connection refused, silent during the
//    handshake, or closing every attempt until the timeout); the message names the path.
//  * RefusedError: the process behind the socket runs as an untrusted uid (the message names it);
//    or the server was still busy at the timeout; or it refused (credentials, full client table,
//    ...; the message carries the server's reason); or the socket is not accessible (EACCES).
//  * VersionMismatchError: the server speaks another protocol or layout version; the message
//    names both sides' versions.
//  * InvalidArgumentError: the path does not fit in a sockaddr_un.
ServerLink connect_to_server(const std::string& socket_path);

// The successor of a dead server answered a reattach with "not this heap" or "not your slot"
// (AttachStatus::kNotReattached): waiting longer will not help.
class HeapReplacedError : public ServerGoneError {
 public:
  using ServerGoneError::ServerGoneError;
};

// After the server of this attachment died: connects to its successor at `socket_path` (the
// path of the attachment) and asks for `slot` back (client id and heap id as recorded). Retries a
// missing socket, a refused connection, a busy server and a closed handshake until `timeout_ms`
// has passed, then throws ServerGoneError. HeapReplacedError: the server there runs another heap
// or does not recognise the slot. Other errors as connect_to_server.
ServerLink reattach_to_server(const std::string& socket_path, std::uint32_t slot, std::uint32_t client_id,
                              std::uint64_t heap_id, std::int64_t timeout_ms);

// Non-blocking check: false once the server closed the connection (shut down or died) or the fd
// is in error. Never consumes data.
bool server_link_alive(int fd);

// Round trip to the server's event loop (waits at most 5 s). False when the server is gone or
// does not answer.
bool ping_server(int fd);
// Sends kSync (`sync`) or kCheckpoint and waits for its kCheckpointDone (skipping late pongs);
// returns the checkpoint's or log record's sequence number. Throws Error (kCheckpoint) or
// DurabilityError (kSync) with the server's reason on failure, ServerGoneError when the
// connection ends first. Same REQUIRES as ping_server.
std::uint64_t request_durability(int fd, bool sync);

// Orderly detach: tells the server this is a detach rather than a death (best effort, only
// affects its log), then closes the fd. REQUIRES: the caller has already retired its TLABs and
// stopped using the segment. Accepts fd < 0 (no-op).
void close_link(int fd);

}  // namespace colors::detail
