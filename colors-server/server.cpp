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

// Connections waiting for their handshake, per peer process, per uid and in all. A peer over
// its bound is answered kBusy at once and closed, so a flood of idle connections from one process
// (or one user) cannot keep anybody else from attaching; the client retries a busy server within
// its attach timeout.
constexpr std::size_t kMaxPendingPerPid = 4;
constexpr std::size_t kMaxPendingPerUid = 32;
constexpr std::size_t kMaxPending = 256;
// Back-off for accept() when the process is out of fds (the listener would stay readable).
constexpr std::int64_t kAcceptPauseNs = 100'000'000;
// Bytes queued for one peer. Replies are small; only a peer that does not read its socket gets
// near this. An attached peer whose queue is half full is not read from (its requests wait in its
// own socket buffer) until it reads; a peer still in its handshake is dropped.
constexpr std::size_t kMaxOutput = 64 * 1024;

// Lines that peers can cause at will (log.hpp).
LogLimiter g_log_no_hello("sent no handshake in time");
LogLimiter g_log_busy("too many pending handshakes");
LogLimiter g_log_refused("refusing connection");
LogLimiter g_log_bad_request("malformed request");
LogLimiter g_log_attach("client attached");
LogLimiter g_log_gone("client detached or died");

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
  std::int64_t deadline_ns = 0;   // handshake only: dropped after it
  std::array<std::uint8_t, 16> buf{};  // a Hello or a Request being received
  std::size_t have = 0;
  Claim claim;                    // attached only
  bool detaching = false;         // got kDetach: the close that follows is an orderly detach
  // Output not yet taken by the socket (non-blocking writes only). `out_fd`, when >= 0, is the
  // segment's descriptor, passed with the first byte of `out` (not owned by the connection).
  std::string out;
  int out_fd = -1;
  bool close_when_sent = false;   // a refused handshake: close once its reply is out
  bool reading() const { return !close_when_sent && out.size() < kMaxOutput / 2; }
};
static_assert(detail::kHelloSize == 16 && detail::kRequestSize == 16, "Connection::buf holds one message");

class Server {
 public:
  explicit Server(const Options& o) : opt_(o) {}
  int run();

 private:
  bool start();
  detail::SegmentConfig segment_config() const;
  void loop();
  void stop();

  void accept_pending();
  void answer_busy(int fd, const PeerCred& peer, const std::string& why);
  void on_readable(Connection& c);
  void on_peer_closed(Connection& c);
  void queue(Connection& c, const std::uint8_t* bytes, std::size_t n, int pass_fd);
  void flush(Connection& c);
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
    if (segment_) detail::Segment::remove(segment_config());
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

detail::SegmentConfig Server::segment_config() const {
  detail::SegmentConfig cfg;
  cfg.name = opt_.name;
  cfg.dir = opt_.heap_dir;
  cfg.address = opt_.address;
  cfg.heap_size = opt_.heap_size;
  cfg.classes_size = opt_.classes_size;
  return cfg;
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
  // The heap dir holds the segment and the name's lock: it must be ours alone (segment.hpp).
  const std::string heap_dir = opt_.heap_dir.empty() ? detail::default_heap_dir() : opt_.heap_dir;
  if (std::string why = detail::ensure_private_dir(heap_dir); !why.empty()) {
    log_error("cannot use the heap directory: ", why);
    return false;
  }
  const detail::SegmentConfig cfg = segment_config();
  const std::string segment_path = detail::heap_file(cfg.dir, cfg.name);
  struct {
    InstanceLock& lock;
    std::string path;
    std::string what;
  } locks[] = {{socket_lock_, opt_.socket + ".lock", "socket " + opt_.socket},
               {name_lock_, heap_dir + "/" + opt_.name + ".lock", "segment name '" + opt_.name + "'"}};
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
  if (::access(segment_path.c_str(), F_OK) == 0)
    log_warn("found stale segment ", segment_path, " left by a server that is no longer running; replacing it");

  try {
    segment_ = detail::Segment::create(cfg);
  } catch (const std::exception& e) {
    log_error("cannot create the segment: ", e.what());
    return false;
  }
  meta_ = segment_->meta();
  meta_->gc_threshold_percent.store(opt_.gc_threshold, std::memory_order_relaxed);
  meta_->client_live_limit.store(opt_.client_live_limit, std::memory_order_relaxed);
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

  log_info("listening on ", opt_.socket, ", segment ", segment_path, " at ", hex(opt_.address), " (",
           segment_->size(), " bytes: heap ", opt_.heap_size, ", classes ", opt_.classes_size, "), gc threshold ",
           opt_.gc_threshold, "%, gc pacing ", opt_.gc_pacing, "% (from ", opt_.gc_min_trigger, " B), gc threads ",
           opt_.gc_threads,
           policy_.group ? ", group " + policy_.group_name + " allowed" : std::string());
  std::printf("colors-server ready: socket=%s segment=%s address=%s heap=%zu\n", opt_.socket.c_str(), segment_path.c_str(),
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
      // POLLRDHUP always: a peer that closes is noticed even while it is not read from.
      short events = POLLRDHUP;
      if (c.reading()) events |= POLLIN;
      if (!c.out.empty()) events |= POLLOUT;
      fds.push_back({c.fd, events, 0});
      if (c.phase == Connection::Phase::kHandshake && (wake_at < 0 || c.deadline_ns < wake_at)) wake_at = c.deadline_ns;
    }
    // Suppressed log lines are reported about once a second.
    std::int64_t flush_at = now + LogLimiter::kWindowNs;
    if (wake_at < 0 || flush_at < wake_at) wake_at = flush_at;
    int timeout_ms = static_cast<int>(std::max<std::int64_t>(0, (wake_at - now + 999'999) / 1'000'000));

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
    for (std::size_t i = 0; rc > 0 && i < polled; ++i) {
      short ev = fds[i + 2].revents;
      Connection& c = conns_[i];
      if (ev == 0 || c.fd < 0) continue;
      if (ev & POLLOUT) flush(c);
      if (c.fd < 0) continue;
      if (ev & POLLIN)
        on_readable(c);
      else if (ev & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL))
        on_peer_closed(c);  // not read from (its queue is full): it closed, it is gone
    }
    if (rc > 0 && fds[1].revents != 0) accept_pending();

    now = now_ns();
    for (Connection& c : conns_) {
      if (c.fd >= 0 && c.phase == Connection::Phase::kHandshake && now >= c.deadline_ns) {
        log_limited(g_log_no_hello, LogLevel::kWarn, "process ", c.peer.pid, " (uid ", c.peer.uid, ") ",
                    c.close_when_sent ? "did not read its handshake reply" : "sent no handshake", " within ",
                    detail::kHandshakeTimeoutMs, " ms; dropping its connection");
        close_conn(c);
      }
    }
    std::erase_if(conns_, [](const Connection& c) { return c.fd < 0; });
    flush_suppressed_logs(LogLevel::kWarn);
  }
}

void Server::answer_busy(int fd, const PeerCred& peer, const std::string& why) {
  log_limited(g_log_busy, LogLevel::kWarn, "answering 'busy' to process ", peer.pid, " (uid ", peer.uid, "): ", why);
  AttachReply r;
  r.status = AttachStatus::kBusy;
  r.protocol_version = kProtocolVersion;
  r.layout_version = kLayoutVersion;
  r.message = why;
  auto bytes = detail::encode_reply(r);
  // Best effort and never waiting: a fresh socket's buffer takes the whole reply, and a client
  // that misses it sees the connection close, which it retries too.
  (void)detail::send_some(fd, bytes.data(), bytes.size(), -1);
  ::close(fd);
}

void Server::accept_pending() {
  for (;;) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        log_limited(g_log_busy, LogLevel::kWarn, "cannot accept a connection: ", std::strerror(errno),
                    "; pausing accept for 100 ms");
        accept_paused_until_ = now_ns() + kAcceptPauseNs;
      }
      return;  // EAGAIN: nothing more to accept
    }
    Connection c;
    c.fd = fd;
    if (!peer_credentials(fd, c.peer)) {
      log_limited(g_log_refused, LogLevel::kWarn, "cannot read the credentials of a new connection: ",
                  std::strerror(errno), "; closing it");
      ::close(fd);
      continue;
    }
    std::size_t pending = 0, same_pid = 0, same_uid = 0;
    for (const Connection& o : conns_) {
      if (o.fd < 0 || o.phase != Connection::Phase::kHandshake) continue;
      ++pending;
      same_pid += o.peer.pid == c.peer.pid;
      same_uid += o.peer.uid == c.peer.uid;
    }
    if (same_pid >= kMaxPendingPerPid) {
      answer_busy(fd, c.peer, "process " + std::to_string(c.peer.pid) + " already has " + std::to_string(same_pid) +
                                  " connections waiting for their handshake");
      continue;
    }
    if (same_uid >= kMaxPendingPerUid) {
      answer_busy(fd, c.peer, "uid " + std::to_string(c.peer.uid) + " already has " + std::to_string(same_uid) +
                                  " connections waiting for their handshake");
      continue;
    }
    if (pending >= kMaxPending) {
      answer_busy(fd, c.peer, std::to_string(pending) + " connections are waiting for their handshake");
      continue;
    }
    c.refusal = check_peer(c.peer, policy_);
    if (!c.refusal.empty()) log_limited(g_log_refused, LogLevel::kWarn, "refusing connection: ", c.refusal);
    c.deadline_ns = now_ns() + std::int64_t{detail::kHandshakeTimeoutMs} * 1'000'000;
    log_debug("connection from process ", c.peer.pid, " (uid ", c.peer.uid, ", gid ", c.peer.gid, ")");
    conns_.push_back(std::move(c));
  }
}

void Server::queue(Connection& c, const std::uint8_t* bytes, std::size_t n, int pass_fd) {
  if (c.out.size() + n > kMaxOutput) {
    // Only a peer that does not read gets here (reading() stops taking its requests well
    // before). A handshake reply it will not read is dropped with the connection; an attached
    // client keeps its connection (closing it would reclaim its live TLABs) and loses the answer.
    if (c.phase == Connection::Phase::kHandshake) {
      close_conn(c);
    } else {
      log_limited(g_log_bad_request, LogLevel::kWarn, "client ", c.claim.client_id, " (pid ", c.peer.pid,
                  ") does not read its socket; dropping an answer");
    }
    return;
  }
  if (c.out.empty() && pass_fd >= 0) c.out_fd = pass_fd;
  c.out.append(reinterpret_cast<const char*>(bytes), n);
  flush(c);
}

void Server::flush(Connection& c) {
  while (c.fd >= 0 && !c.out.empty()) {
    ssize_t put = detail::send_some(c.fd, c.out.data(), c.out.size(), c.out_fd);
    if (put > 0) {
      c.out.erase(0, static_cast<std::size_t>(put));
      c.out_fd = -1;  // it went with the first byte
      continue;
    }
    if (put < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;  // POLLOUT will call again
    // EPIPE/ECONNRESET: the peer is gone; its EOF is seen by on_readable/on_peer_closed.
    c.out.clear();
    c.out_fd = -1;
    if (c.phase == Connection::Phase::kHandshake) close_conn(c);
    return;
  }
  if (c.fd >= 0 && c.out.empty() && c.close_when_sent) close_conn(c);
}

void Server::on_peer_closed(Connection& c) {
  if (c.phase == Connection::Phase::kAttached)
    client_gone(c, c.detaching ? "detached" : "died (connection closed without detaching)");
  else
    close_conn(c);
}

void Server::on_readable(Connection& c) {
  if (c.fd < 0) return;
  // Drain what is there. Invariant: at most one 16-byte message is buffered at a time, so a
  // Hello is processed before anything sent after it is read.
  while (c.fd >= 0 && c.reading()) {
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
    log_limited(g_log_refused, LogLevel::kWarn, "process ", c.peer.pid, " is not a colors client (bad magic 0x",
                std::hex, h.magic, std::dec, "); closing its connection");
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
    log_limited(g_log_refused, LogLevel::kWarn, "refusing connection: ", why);
    refuse(c, AttachStatus::kVersionMismatch, why);
    return;
  }
  if (opt_.max_clients_per_uid != 0) {
    std::size_t held = 0;
    for (const Connection& o : conns_) held += o.fd >= 0 && o.phase == Connection::Phase::kAttached && o.peer.uid == c.peer.uid;
    if (held >= opt_.max_clients_per_uid) {
      std::string why = "uid " + std::to_string(c.peer.uid) + " already holds " + std::to_string(held) +
                        " client slots, the limit per user (--max-clients-per-uid " +
                        std::to_string(opt_.max_clients_per_uid) + "); detach one of its clients first";
      log_limited(g_log_refused, LogLevel::kWarn, "refusing process ", c.peer.pid, ": ", why);
      refuse(c, AttachStatus::kFull, why);
      return;
    }
  }
  auto claim = claim_client_slot(meta_, c.peer.pid);
  if (!claim) {
    std::string why = "the client table is full (" + std::to_string(kMaxClients) +
                      " clients attached); detach a client or wait for one to exit";
    log_limited(g_log_refused, LogLevel::kWarn, "refusing process ", c.peer.pid, ": ", why);
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
  log_limited(g_log_attach, LogLevel::kInfo, "client ", c.claim.client_id, " (pid ", c.peer.pid, ", uid ", c.peer.uid, ") attached in slot ",
           c.claim.slot, "; ", active_clients(meta_), " attached");
}

void Server::on_request(Connection& c) {
  detail::Request q = detail::decode_request(c.buf.data());
  // Never close an attached client's connection for misbehaving: EOF means "dead, reclaim its
  // TLABs", which would corrupt a live client's allocations. Bad requests are only logged.
  if (q.magic != detail::kWireMagic) {
    log_limited(g_log_bad_request, LogLevel::kWarn, "client ", c.claim.client_id, " (pid ", c.peer.pid,
                ") sent a malformed request; ignoring it");
    return;
  }
  switch (q.type) {
    case detail::RequestType::kPing: {
      detail::Request pong;
      pong.type = detail::RequestType::kPong;
      pong.arg = q.arg;
      auto out = detail::encode_request(pong);
      queue(c, out.data(), out.size(), -1);
      return;
    }
    case detail::RequestType::kDetach:
      c.detaching = true;
      return;
    default:
      log_limited(g_log_bad_request, LogLevel::kWarn, "client ", c.claim.client_id, " (pid ", c.peer.pid,
                  ") sent unknown request type ", static_cast<std::uint32_t>(q.type), "; ignoring it");
  }
}

void Server::reply(Connection& c, AttachReply r) {
  r.protocol_version = kProtocolVersion;
  r.layout_version = kLayoutVersion;
  auto bytes = detail::encode_reply(r);
  // An accepted client gets the segment's descriptor with its reply (SCM_RIGHTS): it never opens
  // the segment by name.
  queue(c, bytes.data(), bytes.size(), r.status == AttachStatus::kOk ? segment_->fd() : -1);
}

void Server::refuse(Connection& c, AttachStatus status, const std::string& why) {
  AttachReply r;
  r.status = status;
  r.message = why;
  c.close_when_sent = true;
  reply(c, std::move(r));
  if (c.fd >= 0 && c.out.empty()) close_conn(c);
}

void Server::client_gone(Connection& c, const char* how) {
  Cleanup done = release_client_slot(meta_, c.claim, [this](std::uint32_t id, std::uint32_t slot) {
    std::size_t bytes = 0;
    gc_->reclaim_client(id, slot, &bytes);
    return bytes;
  });
  if (done.ok) {
    log_limited(g_log_gone, LogLevel::kInfo, "client ", c.claim.client_id, " (pid ", c.peer.pid, ") ", how, "; slot ", c.claim.slot, " freed, ",
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
  detail::Segment::remove(segment_config());
  // Locks last: until here a new server on the same name/socket must not start.
  socket_lock_.release();
  name_lock_.release();
  log_info("stopped: segment ", detail::heap_file(opt_.heap_dir, opt_.name), " and socket ", opt_.socket, " removed, ",
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
