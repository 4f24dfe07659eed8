#include "server_link.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "colors/config.hpp"
#include "colors/errors.hpp"
#include "protocol.hpp"

namespace colors::detail {

namespace {

// The longest wait for the server's answer to one hello (it answers from its event loop, which
// never does long work), and the shortest: an attempt waits for the attach deadline within these
// bounds, so a hung server fails an attach in about COLORS_ATTACH_TIMEOUT_MS, and a budget of 0
// (one attempt) still lets a loaded machine's server answer.
constexpr std::int64_t kReplyTimeoutMs = 10000;
constexpr std::int64_t kMinReplyWaitMs = 250;
constexpr int kPingTimeoutMs = 5000;

std::string versions(std::uint32_t protocol, std::uint32_t layout) {
  return "protocol version " + std::to_string(protocol) + " / layout version " + std::to_string(layout);
}

[[noreturn]] void throw_gone(const std::string& path, const std::string& what) {
  throw ServerGoneError("no colors server at " + path + ": " + what +
                        ". Start colors-server (or point COLORS_SOCKET at the socket of a running one).");
}

}  // namespace

std::string default_socket_path(const std::string& name) {
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  if (xdg != nullptr && xdg[0] != '\0') return std::string(xdg) + "/colors/" + name + ".sock";
  return "/tmp/colors-" + std::to_string(::getuid()) + "/" + name + ".sock";
}

std::string resolve_socket_path(const std::string& given) {
  if (!given.empty()) return given;
  const char* env = std::getenv("COLORS_SOCKET");
  if (env != nullptr && env[0] != '\0') return env;
  return default_socket_path();
}

std::vector<uid_t> trusted_server_uids() {
  std::vector<uid_t> uids{::geteuid(), 0};
  const char* env = std::getenv("COLORS_TRUSTED_UIDS");
  if (env == nullptr) return uids;
  std::string list(env);
  std::size_t at = 0;
  while (at <= list.size()) {
    std::size_t comma = list.find(',', at);
    if (comma == std::string::npos) comma = list.size();
    std::string item = list.substr(at, comma - at);
    at = comma + 1;
    if (item.empty()) continue;
    char* end = nullptr;
    errno = 0;
    unsigned long v = std::strtoul(item.c_str(), &end, 10);
    if (errno != 0 || end == item.c_str() || *end != '\0' || v > 0xffffffffUL)
      throw InvalidArgumentError("COLORS_TRUSTED_UIDS must be a comma-separated list of numeric uids; '" + item +
                                 "' is not one");
    uids.push_back(static_cast<uid_t>(v));
  }
  return uids;
}

std::int64_t attach_timeout_ms() {
  const char* env = std::getenv("COLORS_ATTACH_TIMEOUT_MS");
  if (env == nullptr || env[0] == '\0') return kDefaultAttachTimeoutMs;
  char* end = nullptr;
  long long v = std::strtoll(env, &end, 10);
  if (end == env || *end != '\0' || v < 0)
    throw InvalidArgumentError(std::string("COLORS_ATTACH_TIMEOUT_MS must be a number of milliseconds >= 0, not '") +
                               env + "'");
  return v;
}

namespace {

using Clock = std::chrono::steady_clock;

// One connection attempt. Returns the link, or nullopt when the server answered "busy" or closed
// the connection before answering (the caller retries); `why` then says which. Throws for every
// final outcome.
// With `hello.mode == kReattach`, a missing socket or a refused connection is retried too (the
// successor may not have started yet).
std::optional<ServerLink> try_attach(const std::string& path, const sockaddr_un& addr, const Hello& hello,
                                     std::int64_t reply_wait_ms, std::string& why) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw Error(ErrorCode::kGeneric, std::string("socket() failed: ") + std::strerror(errno));
  int segment_fd = -1;
  // Closes both descriptors on every return and throw below that does not hand them over.
  struct FdGuard {
    int& fd;
    int& segment_fd;
    ~FdGuard() {
      if (fd >= 0) ::close(fd);
      if (segment_fd >= 0) ::close(segment_fd);
    }
  } guard{fd, segment_fd};

  int rc;
  do rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    int e = errno;
    if (e == EACCES || e == EPERM)
      throw RefusedError("permission denied connecting to " + path +
                         ": the server belongs to another user; ask its owner to start it with --allow-group "
                         "for one of your groups, or run your own colors-server");
    if (hello.mode == HelloMode::kReattach && (e == ENOENT || e == ECONNREFUSED)) {
      why = std::string("no server listens (") + std::strerror(e) + ")";
      return std::nullopt;
    }
    throw_gone(path, std::strerror(e));
  }

  // Who is behind the socket, before anything is sent or received: a socket planted by another
  // user (e.g. in a /tmp directory they created first) must not receive this client's data.
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
    throw RefusedError("cannot read the credentials of the process behind " + path + ": " + std::strerror(errno));
  std::vector<uid_t> trusted = trusted_server_uids();
  if (std::find(trusted.begin(), trusted.end(), cred.uid) == trusted.end())
    throw RefusedError("the process behind " + path + " (pid " + std::to_string(cred.pid) + ") runs as uid " +
                       std::to_string(cred.uid) + ", which this client does not trust: a colors server must run as " +
                       "this client's user (uid " + std::to_string(::geteuid()) + "), as root, or as a uid listed in " +
                       "COLORS_TRUSTED_UIDS. Refusing to attach.");

  auto hb = encode_hello(hello);
  // A failed write (EPIPE) is not final: a refusing server may already have answered and closed,
  // and its reason is still waiting in our receive queue.
  IoResult wrote = write_full(fd, hb.data(), hb.size(), static_cast<int>(reply_wait_ms));

  AttachReply reply;
  IoResult got = read_reply(fd, reply, static_cast<int>(reply_wait_ms), &segment_fd);
  if (got == IoResult::kEof) {
    why = "the server closed the connection during the handshake";
    return std::nullopt;
  }
  if (got != IoResult::kOk) {
    std::string what = got == IoResult::kTimeout ? "the server did not answer the handshake within " +
                                                       std::to_string(reply_wait_ms) + " ms"
                                                 : std::string("the handshake failed (") + io_result_name(got) + ")";
    if (wrote != IoResult::kOk) what += std::string("; sending the hello failed too (") + io_result_name(wrote) + ")";
    throw_gone(path, what);
  }
  if (reply.magic != kWireMagic) throw_gone(path, "the process behind the socket is not a colors server (bad magic)");

  switch (reply.status) {
    case AttachStatus::kOk:
      break;
    case AttachStatus::kBusy:
      why = "busy: " + reply.message;
      return std::nullopt;
    case AttachStatus::kVersionMismatch:
      throw VersionMismatchError("colors version mismatch with the server at " + path + ": this client speaks " +
                                 versions(kProtocolVersion, kLayoutVersion) + ", the server speaks " +
                                 versions(reply.protocol_version, reply.layout_version) +
                                 ". Use a client library and colors-server from the same build. Server said: " +
                                 reply.message);
    case AttachStatus::kNotReattached:
      throw HeapReplacedError("the colors server at " + path + " cannot take this client back: " + reply.message +
                              ". Its objects are lost to it; attach again to use the server's heap.");
    case AttachStatus::kShuttingDown:
      throw ServerGoneError("the colors server at " + path + " is shutting down: " + reply.message +
                            ". Start colors-server again.");
    default:
      throw RefusedError("the colors server at " + path + " refused the connection (" +
                         attach_status_name(reply.status) + "): " + reply.message);
  }
  // A server of the same protocol version never sends these; check anyway before mapping.
  if (reply.protocol_version != kProtocolVersion || reply.layout_version != kLayoutVersion)
    throw VersionMismatchError("colors version mismatch with the server at " + path + ": this client speaks " +
                               versions(kProtocolVersion, kLayoutVersion) + ", the server speaks " +
                               versions(reply.protocol_version, reply.layout_version));
  if (reply.client_id == 0 || reply.slot >= kMaxClients || reply.address == 0 || reply.size == 0 ||
      reply.segment_name.empty())
    throw_gone(path, "the server sent a malformed handshake reply");
  if (segment_fd < 0) throw_gone(path, "the server's handshake reply carried no segment descriptor");

  ServerLink link;
  link.socket_path = path;
  link.segment_name = reply.segment_name;
  link.address = static_cast<std::uintptr_t>(reply.address);
  link.size = static_cast<std::size_t>(reply.size);
  link.client_id = reply.client_id;
  link.slot = reply.slot;
  link.fd = fd;
  link.segment_fd = segment_fd;
  fd = -1;  // ownership moves to the link
  segment_fd = -1;
  return link;
}

}  // namespace

namespace {

ServerLink connect_with(const std::string& socket_path, const Hello& hello, std::int64_t timeout_ms) {
  const std::string path = resolve_socket_path(socket_path);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path)
    throw InvalidArgumentError("socket path " + path + " is too long (max " + std::to_string(sizeof addr.sun_path - 1) +
                               " bytes); use a shorter --socket / COLORS_SOCKET");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);

  // A busy server (its pending-handshake slots for this peer are taken, e.g. by a flood of idle
  // connections) answers kBusy at once; retrying with a growing pause until the attach timeout
  // lets a real client in as soon as the server drops the idle ones.
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::int64_t pause_ms = 5;
  std::string why;
  int attempts = 0;
  for (;;) {
    ++attempts;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    const std::int64_t wait_ms = std::clamp<std::int64_t>(left, kMinReplyWaitMs, kReplyTimeoutMs);
    if (auto link = try_attach(path, addr, hello, wait_ms, why)) return std::move(*link);
    left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min<std::int64_t>(pause_ms, left)));
    pause_ms = std::min<std::int64_t>(pause_ms * 2, 100);
  }
  std::string tried = " (" + std::to_string(attempts) + " attempts in " + std::to_string(timeout_ms) +
                      " ms, COLORS_ATTACH_TIMEOUT_MS)";
  if (why.rfind("busy: ", 0) == 0) throw RefusedError("the colors server at " + path + " is running but " + why + tried);
  if (hello.mode == HelloMode::kReattach)
    throw ServerGoneError("the colors server at " + path + " died and no successor took this client back: " + why +
                          tried + ". Restart colors-server (it adopts the heap) and attach again.");
  throw ServerGoneError("the colors server at " + path + " did not complete the handshake: " + why + tried +
                        ". If it keeps happening, check the server's log.");
}

Hello base_hello() {
  Hello hello;
  hello.protocol_version = kProtocolVersion;
  hello.layout_version = kLayoutVersion;
  hello.pid = static_cast<std::int32_t>(::getpid());
  return hello;
}

}  // namespace

ServerLink connect_to_server(const std::string& socket_path) {
  return connect_with(socket_path, base_hello(), attach_timeout_ms());
}

ServerLink reattach_to_server(const std::string& socket_path, std::uint32_t slot, std::uint32_t client_id,
                              std::uint64_t heap_id, std::int64_t timeout_ms) {
  Hello hello = base_hello();
  hello.mode = HelloMode::kReattach;
  hello.slot = slot;
  hello.client_id = client_id;
  hello.heap_id = heap_id;
  ServerLink link = connect_with(socket_path, hello, timeout_ms);
  if (link.slot != slot || link.client_id != client_id) {
    ::close(link.segment_fd);
    ::close(link.fd);
    throw HeapReplacedError("the colors server at " + link.socket_path + " answered a reattach with slot " +
                            std::to_string(link.slot) + " / client " + std::to_string(link.client_id) +
                            " instead of slot " + std::to_string(slot) + " / client " + std::to_string(client_id));
  }
  return link;
}

bool server_link_alive(int fd) {
  if (fd < 0) return false;
  pollfd p{fd, POLLIN, 0};
  int rc;
  do rc = ::poll(&p, 1, 0);
  while (rc < 0 && errno == EINTR);
  if (rc < 0) return false;
  if (rc == 0) return true;  // nothing to read, no hang-up: the server holds its end
  if (p.revents & (POLLERR | POLLNVAL)) return false;
  char c;
  ssize_t n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return true;  // unread data (e.g. a late pong): the server was alive to send it
  if (n == 0) return false;
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

bool ping_server(int fd) {
  if (fd < 0) return false;
  static std::atomic<std::uint64_t> next_seq{1};
  Request ping;
  ping.type = RequestType::kPing;
  ping.arg = next_seq.fetch_add(1, std::memory_order_relaxed);
  auto out = encode_request(ping);
  if (write_full(fd, out.data(), out.size(), kPingTimeoutMs) != IoResult::kOk) return false;
  // Skip answers to earlier pings that timed out on our side.
  for (;;) {
    std::uint8_t in[kRequestSize];
    if (read_full(fd, in, sizeof in, kPingTimeoutMs) != IoResult::kOk) return false;
    Request pong = decode_request(in);
    if (pong.magic != kWireMagic) return false;
    if (pong.type == RequestType::kPong && pong.arg == ping.arg) return true;
  }
}

std::uint64_t request_durability(int fd, bool sync) {
  Request q;
  q.type = sync ? RequestType::kSync : RequestType::kCheckpoint;
  auto out = encode_request(q);
  if (write_full(fd, out.data(), out.size(), kPingTimeoutMs) != IoResult::kOk)
    throw ServerGoneError("the colors server does not answer (it died or shut down)");
  for (;;) {
    std::uint8_t in[kRequestSize];
    // No deadline but the server's life: writing a large heap to a slow disk takes what it takes.
    if (read_full(fd, in, sizeof in, -1) != IoResult::kOk)
      throw ServerGoneError(sync ? "the colors server closed the connection before the commit was on disk"
                                 : "the colors server closed the connection before the checkpoint was written");
    Request a = decode_request(in);
    if (a.magic != kWireMagic) throw ServerGoneError("the colors server sent a malformed answer");
    if (a.type != RequestType::kCheckpointDone) continue;
    if ((a.arg & kCheckpointFailed) == 0) return a.arg;
    const auto reason = static_cast<CheckpointFailure>((a.arg >> 32) & 0x7fffffffu);
    const int err = static_cast<int>(a.arg & 0xffffffffu);
    const std::string cause = err != 0 ? std::string(": ") + std::strerror(err) : std::string();
    switch (reason) {
      case CheckpointFailure::kNoDataDir:
        throw Error(ErrorCode::kGeneric, "the colors server keeps no checkpoints: start it with --data-dir DIR");
      case CheckpointFailure::kShuttingDown:
        throw ServerGoneError("the colors server is shutting down (it writes a last checkpoint itself)");
      default:
        if (sync)
          throw DurabilityError("the transaction committed, but the server could not put it on disk" + cause +
                                "; it is not durable until a later checkpoint or durable commit succeeds (the "
                                "server's log says more)");
        throw Error(ErrorCode::kGeneric, "the checkpoint failed" + cause +
                                             "; the heap in memory is intact and the previous checkpoint stays the "
                                             "newest (the server's log says more)");
    }
  }
}

void close_link(int fd) {
  if (fd < 0) return;
  Request detach;
  detach.type = RequestType::kDetach;
  auto out = encode_request(detach);
  (void)write_full(fd, out.data(), out.size(), 0);  // best effort, never blocks
  ::close(fd);
}

}  // namespace colors::detail
