#include "server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "client_table.hpp"
#include "collector.hpp"
#include "format.hpp"
#include "verifier.hpp"
#include "colors/config.hpp"
#include "colors/errors.hpp"
#include "instance_lock.hpp"
#include "listener.hpp"
#include "log.hpp"
#include "protocol.hpp"
#include "segment.hpp"
#include "server_link.hpp"
#include "shutdown.hpp"

namespace colors::server {

namespace {

using detail::AttachReply;
using detail::AttachStatus;
using detail::Metadata;

// Pre-handshake connections at once; more are closed at accept (a flood of silent peers must not
// exhaust the server's fds).
constexpr std::size_t kMaxPending = 64;
// Back-off for accept() when the process is out of fds (the listener would stay readable).
constexpr std::int64_t kAcceptPauseNs = 100'000'000;
// Writes from the loop never wait longer than this (replies are tiny; a peer whose receive
// buffer is full is misbehaving).
constexpr int kWriteTimeoutMs = 100;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

using detail::hex;

// ---------------------------------------------------------------------------------------------
// SIGTERM/SIGINT -> self-pipe. The handler only write()s (async-signal-safe); the loop polls the
// read end. A pipe rather than signalfd: signalfd needs the signals blocked in every thread,
// which the collector's threads would have to remember.
int g_signal_pipe[2] = {-1, -1};

extern "C" void on_stop_signal(int signo) {
  int saved = errno;
  unsigned char b = static_cast<unsigned char>(signo);
  [[maybe_unused]] ssize_t n = ::write(g_signal_pipe[1], &b, 1);  // full pipe: a byte is already there
  errno = saved;
}

bool install_signal_handlers(std::string& error) {
  if (::pipe2(g_signal_pipe, O_NONBLOCK | O_CLOEXEC) != 0) {
    error = std::string("pipe2: ") + std::strerror(errno);
    return false;
  }
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // belt and braces: every send() already uses MSG_NOSIGNAL
  return true;
}

// ---------------------------------------------------------------------------------------------

struct Connection {
  enum class Phase { kHandshake, kAttached };
  int fd = -1;
  Phase phase = Phase::kHandshake;
  PeerCred peer;
  std::string refusal;            // non-empty: credentials refused, answered once Hello arrived
  std::int64_t deadline_ns = 0;   // handshake only
  std::array<std::uint8_t, 16> buf{};  // a Hello or a Request being received
  std::size_t have = 0;
  Claim claim;                    // attached only
  bool detaching = false;         // got kDetach: the close that follows is an orderly detach
};
static_assert(detail::kHelloSize == 16 && detail::kRequestSize == 16, "Connection::buf holds one message");

class Server {
 public:
  explicit Server(const Options& o) : opt_(o) {}
  int run();

 private:
  bool start();
  void loop();
  void stop();

  void accept_pending();
  void on_readable(Connection& c);
  void on_hello(Connection& c);
  void on_request(Connection& c);
  void reply(Connection& c, AttachReply r);
  void refuse(Connection& c, AttachStatus status, const std::string& why);
  void client_gone(Connection& c, const char* how);
  void close_conn(Connection& c);

  Options opt_;
  AccessPolicy policy_;
  InstanceLock socket_lock_, name_lock_;
  std::unique_ptr<detail::Segment> segment_;
  std::unique_ptr<gc::Collector> gc_;
  Metadata* meta_ = nullptr;
  int listen_fd_ = -1;
  std::int64_t accept_paused_until_ = 0;
  std::vector<Connection> conns_;
};

int Server::run() {
  if (!start()) {
    // Undo whatever part of the startup happened, but never another server's files: the
    // segment and socket are only ours once both locks are held.
    if (segment_) detail::Segment::remove(opt_.name);
    if (listen_fd_ >= 0) {
      ::close(listen_fd_);
      ::unlink(opt_.socket.c_str());
    }
    return 1;
  }
  loop();
  stop();
  return 0;
}

bool Server::start() {
  std::string error;
  if (!install_signal_handlers(error)) {
    log_error("cannot install signal handlers: ", error);
    return false;
  }
  policy_.owner_uid = ::geteuid();
  if (opt_.allow_group) {
    auto gid = resolve_group(*opt_.allow_group, error);
    if (!gid) {
      log_error(error);
      return false;
    }
    policy_.group = gid;
    policy_.group_name = *opt_.allow_group;
  }

  // The lock files live next to the socket, so its directory must exist before locking.
  bool managed_dir = opt_.socket == detail::default_socket_path(opt_.name);
  if (!ensure_socket_dir(opt_.socket, policy_, managed_dir, error)) {
    log_error(error);
    return false;
  }

  // Single instance, per socket and per segment name (two servers with different sockets but
  // the same name would otherwise destroy each other's segment).
  const std::string shm = detail::shm_name(opt_.name);
  struct {
    InstanceLock& lock;
    std::string path;
    std::string what;
  } locks[] = {{socket_lock_, opt_.socket + ".lock", "socket " + opt_.socket},
               {name_lock_, "/dev/shm/colors-lock." + opt_.name, "segment name '" + opt_.name + "'"}};
  for (auto& l : locks) {
    switch (l.lock.acquire(l.path)) {
      case InstanceLock::Result::kAcquired:
        break;
      case InstanceLock::Result::kHeld:
        log_error("another colors-server (pid ",
                  l.lock.holder_pid() != 0 ? std::to_string(l.lock.holder_pid()) : std::string("unknown"),
                  ") is already running on ", l.what, " (lock file ", l.path,
                  "); stop it first, or start this one with another --name and --socket");
        return false;
      case InstanceLock::Result::kError:
        log_error(l.lock.error());
        return false;
    }
  }

  // Both locks held: the directory's mode is ours to set (a live server's policy is not
  // overwritten by a refused second server), and anything left at our socket path or segment
  // name is a crashed server's.
  if (managed_dir && !enforce_socket_dir_mode(opt_.socket, policy_, error)) {
    log_error(error);
    return false;
  }
  switch (remove_stale_socket(opt_.socket, error)) {
    case LeftoverSocket::kNone:
      break;
    case LeftoverSocket::kRemovedStale:
      log_warn("removed stale socket ", opt_.socket, " left by a server that is no longer running");
      break;
    case LeftoverSocket::kNotASocket:
      log_error(error);
      return false;
  }
  if (::access(("/dev/shm/" + shm).c_str(), F_OK) == 0)
    log_warn("found stale segment /dev/shm/", shm, " left by a server that is no longer running; replacing it");

  detail::SegmentConfig cfg;
  cfg.name = opt_.name;
  cfg.address = opt_.address;
  cfg.heap_size = opt_.heap_size;
  cfg.classes_size = opt_.classes_size;
  cfg.mode = policy_.file_mode();
  try {
    segment_ = detail::Segment::create(cfg);
  } catch (const std::exception& e) {
    log_error("cannot create the segment: ", e.what());
    return false;
  }
  meta_ = segment_->meta();
  if (policy_.group && ::chown(("/dev/shm/" + shm).c_str(), static_cast<uid_t>(-1), *policy_.group) != 0) {
    log_error("cannot give segment /dev/shm/", shm, " to group ", policy_.group_name, ": ", std::strerror(errno));
    return false;
  }
  meta_->gc_threshold_percent.store(opt_.gc_threshold, std::memory_order_relaxed);
  meta_->server_pid.store(static_cast<std::int32_t>(::getpid()), std::memory_order_relaxed);

  gc::Options gopt;
  gopt.threads = opt_.gc_threads;
  gopt.threshold_percent = opt_.gc_threshold;
  gopt.pacing_percent = opt_.gc_pacing;
  gopt.min_trigger_bytes = opt_.gc_min_trigger;
  gopt.poison = opt_.gc_debug;
  const bool debug = opt_.gc_debug;
  detail::Metadata* m = meta_;
  gopt.on_cycle = [debug, m](const detail::GcCycleStats& st) {
    log_info("gc cycle ", st.cycle, ": ", st.total_ns / 1000, " us (walk ", st.clear_ns / 1000, ", roots+mark ",
             st.mark_ns / 1000, ", remark ", st.remark_ns / 1000, " in ", st.marking_passes - 1, " passes taking ", st.pending_objects,
             " pending, sweep ",
             st.sweep_ns / 1000, "), marked ", st.objects_marked, " objects / ", st.bytes_marked, " B, freed ",
             st.objects_freed, " objects / ", st.bytes_freed, " B, heap used ", st.heap_used_before, " -> ",
             st.heap_used_after, " B, largest free ", st.largest_free, " B, ", st.threads, " threads");
    if (debug) {
      // Not quiescent: clients may be running, so reference errors can be races; block and
      // freelist errors cannot. Logged, never fatal.
      detail::VerifyReport r = detail::verify_heap_locked(m, detail::VerifyMode::kConcurrent);
      if (!r.ok()) log_warn("gc debug: heap verifier after cycle ", st.cycle, ": ", r.summary());
    }
  };
  gc_ = std::make_unique<gc::Collector>(meta_, std::move(gopt));
  gc_->start();

  listen_fd_ = listen_on(opt_.socket, policy_, error);
  if (listen_fd_ < 0) {
    log_error(error);
    return false;
  }
  // Release: a client that sees kRunning sees the formatted segment and the fields above.
  meta_->server_state.store(static_cast<std::uint32_t>(detail::ServerState::kRunning), std::memory_order_release);

  log_info("listening on ", opt_.socket, ", segment /dev/shm/", shm, " at ", hex(opt_.address), " (",
           segment_->size(), " bytes: heap ", opt_.heap_size, ", classes ", opt_.classes_size, "), gc threshold ",
           opt_.gc_threshold, "%, gc pacing ", opt_.gc_pacing, "% (from ", opt_.gc_min_trigger, " B), gc threads ",
           opt_.gc_threads,
           policy_.group ? ", group " + policy_.group_name + " allowed" : std::string());
  std::printf("colors-server ready: socket=%s segment=%s address=%s heap=%zu\n", opt_.socket.c_str(), shm.c_str(),
              hex(opt_.address).c_str(), opt_.heap_size);
  std::fflush(stdout);
  return true;
}

void Server::loop() {
  std::vector<pollfd> fds;
  for (;;) {
    std::int64_t now = now_ns();
    bool listening = now >= accept_paused_until_;
    std::int64_t wake_at = listening ? -1 : accept_paused_until_;
    fds.clear();
    fds.push_back({g_signal_pipe[0], POLLIN, 0});
    fds.push_back({listening ? listen_fd_ : -1, POLLIN, 0});  // poll ignores negative fds
    for (const Connection& c : conns_) {
      fds.push_back({c.fd, POLLIN, 0});
      if (c.phase == Connection::Phase::kHandshake && (wake_at < 0 || c.deadline_ns < wake_at)) wake_at = c.deadline_ns;
    }
    int timeout_ms = -1;
    if (wake_at >= 0) timeout_ms = static_cast<int>(std::max<std::int64_t>(0, (wake_at - now + 999'999) / 1'000'000));

    int rc = ::poll(fds.data(), fds.size(), timeout_ms);
    if (rc < 0 && errno != EINTR) {
      log_error("poll failed: ", std::strerror(errno), "; shutting down");
      return;
    }
    if (rc > 0 && fds[0].revents != 0) {
      unsigned char sig = 0;
      [[maybe_unused]] ssize_t n = ::read(g_signal_pipe[0], &sig, 1);
      log_info("received ", sig == SIGINT ? "SIGINT" : "SIGTERM", ", shutting down");
      return;
    }
    // Connections first: accept_pending() appends to conns_, past the fds polled this round.
    std::size_t polled = fds.size() - 2;
    for (std::size_t i = 0; rc > 0 && i < polled; ++i)
      if (fds[i + 2].revents != 0) on_readable(conns_[i]);
    if (rc > 0 && fds[1].revents != 0) accept_pending();

    now = now_ns();
    for (Connection& c : conns_) {
      if (c.fd >= 0 && c.phase == Connection::Phase::kHandshake && now >= c.deadline_ns) {
        log_warn("process ", c.peer.pid, " (uid ", c.peer.uid, ") sent no handshake within ",
                 detail::kHandshakeTimeoutMs / 1000, " s; dropping its connection");
        close_conn(c);
      }
    }
    std::erase_if(conns_, [](const Connection& c) { return c.fd < 0; });
  }
}

void Server::accept_pending() {
  for (;;) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        log_warn("cannot accept a connection: ", std::strerror(errno), "; pausing accept for 100 ms");
        accept_paused_until_ = now_ns() + kAcceptPauseNs;
      }
      return;  // EAGAIN: nothing more to accept
    }
    Connection c;
    c.fd = fd;
    if (!peer_credentials(fd, c.peer)) {
      log_warn("cannot read the credentials of a new connection: ", std::strerror(errno), "; closing it");
      ::close(fd);
      continue;
    }
    std::size_t pending = 0;
    for (const Connection& o : conns_) pending += o.phase == Connection::Phase::kHandshake;
    if (pending >= kMaxPending) {
      log_warn("too many connections waiting for their handshake; closing the one from process ", c.peer.pid);
      ::close(fd);
      continue;
    }
    c.refusal = check_peer(c.peer, policy_);
    if (!c.refusal.empty()) log_warn("refusing connection: ", c.refusal);
    c.deadline_ns = now_ns() + std::int64_t{detail::kHandshakeTimeoutMs} * 1'000'000;
    log_debug("connection from process ", c.peer.pid, " (uid ", c.peer.uid, ", gid ", c.peer.gid, ")");
    conns_.push_back(std::move(c));
  }
}

void Server::on_readable(Connection& c) {
  if (c.fd < 0) return;
  // Drain what is there. Invariant: at most one 16-byte message is buffered at a time, so a
  // Hello is processed before anything sent after it is read.
  for (;;) {
    ssize_t n = ::recv(c.fd, c.buf.data() + c.have, c.buf.size() - c.have, MSG_DONTWAIT);
    if (n > 0) {
      c.have += static_cast<std::size_t>(n);
      if (c.have < c.buf.size()) continue;
      c.have = 0;
      if (c.phase == Connection::Phase::kHandshake) {
        on_hello(c);
        if (c.fd < 0) return;  // refused
      } else {
        on_request(c);
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    // EOF or error (ECONNRESET when the peer died with unread data): the peer is gone.
    if (c.phase == Connection::Phase::kAttached) {
      client_gone(c, c.detaching ? "detached" : "died (connection closed without detaching)");
    } else {
      log_debug("process ", c.peer.pid, " closed its connection before the handshake");
      close_conn(c);
    }
    return;
  }
}

void Server::on_hello(Connection& c) {
  detail::Hello h = detail::decode_hello(c.buf.data());
  if (h.magic != detail::kWireMagic) {
    log_warn("process ", c.peer.pid, " is not a colors client (bad magic 0x", std::hex, h.magic, std::dec,
             "); closing its connection");
    refuse(c, AttachStatus::kBadHello, "not a colors client hello (bad magic)");
    return;
  }
  if (!c.refusal.empty()) {
    refuse(c, AttachStatus::kCredentials, c.refusal);
    return;
  }
  if (h.protocol_version != kProtocolVersion || h.layout_version != kLayoutVersion) {
    std::string why = "version mismatch: the client (pid " + std::to_string(c.peer.pid) + ") speaks protocol version " +
                      std::to_string(h.protocol_version) + " / layout version " + std::to_string(h.layout_version) +
                      ", this server speaks protocol version " + std::to_string(kProtocolVersion) +
                      " / layout version " + std::to_string(kLayoutVersion) +
                      "; use a client library and colors-server from the same build";
    log_warn("refusing connection: ", why);
    refuse(c, AttachStatus::kVersionMismatch, why);
    return;
  }
  auto claim = claim_client_slot(meta_, c.peer.pid);
  if (!claim) {
    std::string why = "the client table is full (" + std::to_string(kMaxClients) +
                      " clients attached); detach a client or wait for one to exit";
    log_warn("refusing process ", c.peer.pid, ": ", why);
    refuse(c, AttachStatus::kFull, why);
    return;
  }
  if (h.pid != c.peer.pid) log_debug("client says pid ", h.pid, ", kernel says ", c.peer.pid, " (pid namespaces?)");
  c.claim = *claim;
  c.phase = Connection::Phase::kAttached;

  AttachReply r;
  r.status = AttachStatus::kOk;
  r.client_id = claim->client_id;
  r.slot = claim->slot;
  r.address = opt_.address;
  r.size = segment_->size();
  r.segment_name = opt_.name;
  reply(c, std::move(r));
  if (c.fd < 0) return;  // could not answer: reply() already cleaned up
  log_info("client ", c.claim.client_id, " (pid ", c.peer.pid, ", uid ", c.peer.uid, ") attached in slot ",
           c.claim.slot, "; ", active_clients(meta_), " attached");
}

void Server::on_request(Connection& c) {
  detail::Request q = detail::decode_request(c.buf.data());
  // Never close an attached client's connection for misbehaving: EOF means "dead, reclaim its
  // TLABs", which would corrupt a live client's allocations. Bad requests are only logged.
  if (q.magic != detail::kWireMagic) {
    log_warn("client ", c.claim.client_id, " (pid ", c.peer.pid, ") sent a malformed request; ignoring it");
    return;
  }
  switch (q.type) {
    case detail::RequestType::kPing: {
      detail::Request pong;
      pong.type = detail::RequestType::kPong;
      pong.arg = q.arg;
      auto out = detail::encode_request(pong);
      if (detail::write_full(c.fd, out.data(), out.size(), kWriteTimeoutMs) != detail::IoResult::kOk)
        log_debug("could not answer a ping of client ", c.claim.client_id, " (not reading its socket?)");
      return;
    }
    case detail::RequestType::kDetach:
      c.detaching = true;
      return;
    default:
      log_warn("client ", c.claim.client_id, " (pid ", c.peer.pid, ") sent unknown request type ",
               static_cast<std::uint32_t>(q.type), "; ignoring it");
  }
}

void Server::reply(Connection& c, AttachReply r) {
  r.protocol_version = kProtocolVersion;
  r.layout_version = kLayoutVersion;
  auto bytes = detail::encode_reply(r);
  if (detail::write_full(c.fd, bytes.data(), bytes.size(), kWriteTimeoutMs) == detail::IoResult::kOk) return;
  if (c.phase == Connection::Phase::kAttached)
    client_gone(c, "vanished during the handshake");
  else
    close_conn(c);
}

void Server::refuse(Connection& c, AttachStatus status, const std::string& why) {
  AttachReply r;
  r.status = status;
  r.message = why;
  reply(c, std::move(r));
  close_conn(c);
}

void Server::client_gone(Connection& c, const char* how) {
  Cleanup done = release_client_slot(meta_, c.claim, [this](std::uint32_t id, std::uint32_t slot) {
    std::size_t bytes = 0;
    gc_->reclaim_client(id, slot, &bytes);
    return bytes;
  });
  if (done.ok) {
    log_info("client ", c.claim.client_id, " (pid ", c.peer.pid, ") ", how, "; slot ", c.claim.slot, " freed, ",
             done.tlab_bytes, " TLAB bytes reclaimed; ", active_clients(meta_), " attached");
  } else {
    log_error("client ", c.claim.client_id, " (pid ", c.peer.pid, ") ", how, ", but cleaning up after it failed: ",
              done.error, "; slot ", c.claim.slot, " stays unused");
  }
  close_conn(c);
}

void Server::close_conn(Connection& c) {
  if (c.fd >= 0) ::close(c.fd);
  c.fd = -1;  // erased at the end of the loop iteration
}

void Server::stop() {
  // Order matters: clients learn the state from the segment, so it is set (release) before the
  // waiters are woken and before the connections close (see shutdown.hpp).
  meta_->server_state.store(static_cast<std::uint32_t>(detail::ServerState::kStopped), std::memory_order_release);
  if (gc_) gc_->stop();  // before the segment goes: its threads work on it
  detail::wake_all_waiters(meta_);
  std::size_t attached = 0;
  for (Connection& c : conns_) {
    attached += c.phase == Connection::Phase::kAttached;
    close_conn(c);
  }
  conns_.clear();
  ::close(listen_fd_);
  listen_fd_ = -1;
  ::unlink(opt_.socket.c_str());
  detail::Segment::remove(opt_.name);
  // Locks last: until here a new server on the same name/socket must not start.
  socket_lock_.release();
  name_lock_.release();
  log_info("stopped: segment /dev/shm/", detail::shm_name(opt_.name), " and socket ", opt_.socket, " removed, ",
           attached, " client connection(s) closed");
  segment_.reset();  // unmaps; clients keep their own mappings until they detach
}

}  // namespace

int run_server(const Options& options) {
  set_log_level(options.log_level);
  Server s(options);
  return s.run();
}

}  // namespace colors::server
