// The server's Unix socket: its directory and permissions, the listening socket, and who may
// connect (SO_PEERCRED).
//
// Security model: by default only the server's own user can reach the socket (directory 0700,
// socket 0600) and the segment (0600). With --allow-group G the directory is 0750, socket and
// segment 0660, all of group G. File permissions only keep others from reaching the socket; the
// decision is made per connection from the kernel's peer credentials: the peer's uid must equal
// the server's effective uid, or its effective (primary) gid must be G. Root peers get no
// special treatment unless the server itself runs as root (same uid).
#pragma once
#include <sys/types.h>

#include <optional>
#include <string>

namespace colors::server {

struct AccessPolicy {
  uid_t owner_uid = 0;              // the server's effective uid
  std::optional<gid_t> group;       // --allow-group, resolved
  std::string group_name;           // as given, for messages
  mode_t dir_mode() const { return group ? 0750 : 0700; }
  mode_t file_mode() const { return group ? 0660 : 0600; }
};

// Group name or decimal number -> gid. nullopt (with `error` set) when unknown.
std::optional<gid_t> resolve_group(const std::string& name_or_number, std::string& error);

// Makes sure the directory of `socket_path` exists. Missing directories are created with
// policy.dir_mode() (and group). An existing directory is used as is, except that the default
// directory (`managed`) must be a real directory owned by the server's user: /tmp/colors-<uid>
// could otherwise be planted by another user.
bool ensure_socket_dir(const std::string& socket_path, const AccessPolicy& policy, bool managed, std::string& error);
// Forces the policy's mode and group on the (managed) socket directory.
// REQUIRES: the instance lock is held, so no live server's settings are overwritten.
bool enforce_socket_dir_mode(const std::string& socket_path, const AccessPolicy& policy, std::string& error);

// What was at the socket path before we bound it.
enum class LeftoverSocket { kNone, kRemovedStale, kNotASocket };

// Removes a stale socket file at `path`. REQUIRES: the instance lock is held, so no live server
// owns it. Refuses (kNotASocket) to delete anything that is not a socket.
LeftoverSocket remove_stale_socket(const std::string& path, std::string& error);

// Binds and listens (non-blocking, close-on-exec) with the policy's mode and group on the
// socket file. Returns the fd, or -1 with `error` set.
int listen_on(const std::string& path, const AccessPolicy& policy, std::string& error);

struct PeerCred {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};
bool peer_credentials(int fd, PeerCred& out);

// Empty when the peer may attach; otherwise the reason, phrased for both the log and the peer.
std::string check_peer(const PeerCred& peer, const AccessPolicy& policy);

}  // namespace colors::server
