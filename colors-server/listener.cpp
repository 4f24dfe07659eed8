#include "listener.hpp"

#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <vector>

namespace colors::server {

namespace {
std::string errstr() { return std::strerror(errno); }

std::string parent_dir(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// mkdir -p with `mode` on every directory it creates.
bool make_dirs(const std::string& dir, mode_t mode, std::string& error) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return true;
    error = dir + " exists and is not a directory";
    return false;
  }
  std::string parent = parent_dir(dir);
  if (parent != dir && !make_dirs(parent, mode, error)) return false;
  if (::mkdir(dir.c_str(), mode) != 0 && errno != EEXIST) {
    error = "cannot create directory " + dir + ": " + errstr();
    return false;
  }
  return true;
}

bool apply_mode(const std::string& path, const AccessPolicy& policy, mode_t mode, std::string& error) {
  // chown before chmod: between the two the file is still at most as open as before.
  if (policy.group && ::chown(path.c_str(), static_cast<uid_t>(-1), *policy.group) != 0) {
    error = "cannot give " + path + " to group " + policy.group_name + ": " + errstr() +
            " (the server's user must be a member of that group)";
    return false;
  }
  if (::chmod(path.c_str(), mode) != 0) {
    error = "cannot chmod " + path + ": " + errstr();
    return false;
  }
  return true;
}
}  // namespace

std::optional<gid_t> resolve_group(const std::string& name, std::string& error) {
  std::vector<char> buf(16384);
  group gr{};
  group* found = nullptr;
  if (::getgrnam_r(name.c_str(), &gr, buf.data(), buf.size(), &found) == 0 && found != nullptr) return found->gr_gid;
  unsigned long v = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), v);
  if (ec == std::errc() && end == name.data() + name.size()) return static_cast<gid_t>(v);
  error = "unknown group '" + name + "' for --allow-group";
  return std::nullopt;
}

bool ensure_socket_dir(const std::string& socket_path, const AccessPolicy& policy, bool managed, std::string& error) {
  std::string dir = parent_dir(socket_path);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    // umask could only make the new directories stricter; apply_mode sets the exact mode.
    if (!make_dirs(dir, policy.dir_mode(), error)) return false;
    return apply_mode(dir, policy, policy.dir_mode(), error);
  }
  if (!S_ISDIR(st.st_mode)) {
    error = "socket directory " + dir + " is not a directory";
    return false;
  }
  if (!managed) return true;  // the user chose this directory explicitly
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != policy.owner_uid) {
    error = "socket directory " + dir + " is not a directory owned by uid " + std::to_string(policy.owner_uid) +
            "; remove it or choose another --socket";
    return false;
  }
  return true;
}

bool enforce_socket_dir_mode(const std::string& socket_path, const AccessPolicy& policy, std::string& error) {
  return apply_mode(parent_dir(socket_path), policy, policy.dir_mode(), error);
}

LeftoverSocket remove_stale_socket(const std::string& path, std::string& error) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return LeftoverSocket::kNone;
  if (!S_ISSOCK(st.st_mode)) {
    error = path + " exists and is not a socket; remove it or choose another --socket";
    return LeftoverSocket::kNotASocket;
  }
  ::unlink(path.c_str());
  return LeftoverSocket::kRemovedStale;
}

int listen_on(const std::string& path, const AccessPolicy& policy, std::string& error) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    error = "socket path " + path + " is too long (max " + std::to_string(sizeof addr.sun_path - 1) + " bytes)";
    return -1;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = "socket(): " + errstr();
    return -1;
  }
  // The socket file is born 0600 at most (umask), so no one else can connect before apply_mode.
  mode_t old = ::umask(0177);
  int rc = ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  int bind_errno = errno;
  ::umask(old);
  if (rc != 0) {
    error = "cannot bind " + path + ": " + std::strerror(bind_errno);
    ::close(fd);
    return -1;
  }
  if (!apply_mode(path, policy, policy.file_mode(), error) || ::listen(fd, 128) != 0) {
    if (error.empty()) error = "listen(" + path + "): " + errstr();
    ::close(fd);
    ::unlink(path.c_str());
    return -1;
  }
  return fd;
}

bool peer_credentials(int fd, PeerCred& out) {
  ucred c{};
  socklen_t len = sizeof c;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c, &len) != 0) return false;
  out.pid = c.pid;
  out.uid = c.uid;
  out.gid = c.gid;
  return true;
}

std::string check_peer(const PeerCred& peer, const AccessPolicy& policy) {
  if (peer.uid == policy.owner_uid) return {};
  if (policy.group && peer.gid == *policy.group) return {};
  std::string who = "process " + std::to_string(peer.pid) + " (uid " + std::to_string(peer.uid) + ", gid " +
                    std::to_string(peer.gid) + ")";
  std::string allowed = "only uid " + std::to_string(policy.owner_uid);
  if (policy.group)
    allowed += " or primary group " + policy.group_name + " (gid " + std::to_string(*policy.group) + ")";
  std::string advice = policy.group ? "; run the client with that group as its primary group (e.g. sg " +
                                          policy.group_name + " -c ...) or as the server's user"
                                    : "; run the client as the server's user, or start the server with --allow-group";
  return who + " is not allowed to attach: this server accepts " + allowed + advice;
}

}  // namespace colors::server
