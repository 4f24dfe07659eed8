#include "server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "checkpointer.hpp"
#include "delta_log.hpp"
#include "client_table.hpp"
#include "collector.hpp"
#include "data_dir.hpp"
#include "freezer.hpp"
#include "lock_holder_watch.hpp"
#include "written_pages.hpp"
#include "pending_bits.hpp"
#include "restored_segment.hpp"
#include "recovery.hpp"
#include "adoption.hpp"
#include "collector_barrier.hpp"
#include "format.hpp"
#include "futex.hpp"
#include "verifier.hpp"
#include "colors/config.hpp"
#include "colors/errors.hpp"
#include "instance_lock.hpp"
#include "listener.hpp"
#include "log.hpp"
#include "protocol.hpp"
#include "segment.hpp"
#include "segment_check.hpp"
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
// Messages read from one connection per turn of the event loop (on_readable).
constexpr int kMessagesPerTurn = 64;
// Connections accepted per turn of the event loop (accept_pending). A peer that connects and
// closes in a loop refills the listen backlog as fast as the server drains it: an accept loop
// that ran until EAGAIN would not return to poll() while the flood lasts, and the hello of a
// client it had accepted would wait unread.
constexpr int kAcceptsPerTurn = 64;

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
  std::array<std::uint8_t, detail::kHelloFullSize> buf{};  // a Hello or a Request being received
  std::size_t have = 0;
  // Bytes of the message being received: the hello's frozen part first (so a client of another
  // version is answered without waiting for more), then the rest of the hello, then requests.
  std::size_t need = detail::kHelloSize;
  Claim claim;                    // attached only
  bool detaching = false;         // got kDetach: the close that follows is an orderly detach
  // Output not yet taken by the socket (non-blocking writes only). `out_fd`, when >= 0, is the
  // segment's descriptor, passed with the first byte of `out` (not owned by the connection).
  std::string out;
  int out_fd = -1;
  bool close_when_sent = false;   // a refused handshake: close once its reply is out
  bool reading() const { return !close_when_sent && out.size() < kMaxOutput / 2; }
};
static_assert(detail::kHelloSize == 16 && detail::kRequestSize == 16 && detail::kHelloFullSize <= 64,
              "Connection::buf holds one message");

class Server {
 public:
  explicit Server(const Options& o) : opt_(o) {}
  int run();

 private:
  bool start();
  bool open_segment();
  bool restore_segment();
  bool adopt_segment();
  std::string stop_world(const std::function<bool()>& unfrozen, const std::function<void()>& step, CaptureStats& stats);
  void answer_checkpoints();
  bool recover_adopted();
  void reject_heap(const std::string& why);
  bool fall_back_to_older_checkpoint();
  void check_kept_clients();
  detail::SegmentConfig segment_config() const;
  void loop();
  // Returns the exit code: 0, or kExitShutdownCheckpointFailed (the heap then kept).
  int stop();
  void track_client(std::uint32_t slot, pid_t pid);
  // REQUIRES: heap_mu_ held. Every change of client_pids_ goes through these two.
  void track_client_locked(std::uint32_t slot, pid_t pid);
  void untrack_client(std::uint32_t slot);

  void accept_pending();
  void answer_busy(int fd, const PeerCred& peer, const std::string& why);
  void on_readable(Connection& c);
  void on_peer_closed(Connection& c);
  void queue(Connection& c, const std::uint8_t* bytes, std::size_t n, int pass_fd);
  void flush(Connection& c);
  bool on_hello_prefix(Connection& c);
  void on_hello(Connection& c);
  void on_reattach(Connection& c, const detail::Hello& h);
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
  // Exit code of a failed start: 1, or kExitHeapRefused when an adopted heap failed its checks.
  int exit_code_ = 1;
  // The segment was formatted by this server (a failed start removes it; an adopted heap stays).
  bool formatted_ = false;
  bool adopted_ = false;
  // Clients of an adopted heap whose processes live on: their slots wait for their reattach
  // (adoption.hpp). Checked every kKeptCheckNs; a slot whose process is gone is reclaimed.
  std::vector<KeptClient> kept_;
  std::int64_t next_kept_check_ = 0;
  std::uint64_t heap_dev_ = 0, heap_ino_ = 0;
  std::int64_t check_ns_ = 0;  // adoption's read-only checks, for the log

  // Durability (--data-dir): the directory, the checkpoint thread and what it stops.
  DataDir data_dir_;
  Freezer freezer_;
  std::unique_ptr<WrittenPages> written_pages_;  // with --data-dir: what the captures copy
  std::unique_ptr<Checkpointer> checkpointer_;
  int checkpoint_wake_fd_ = -1;  // eventfd: outcomes wait in checkpointer_
  bool restored_ = false;        // the heap was restored from a checkpoint at this start
  std::uint64_t restored_seq_ = 0;  // which
  // Checkpoints from this number up are not restored again at this start: one of them was
  // restored whole (every checksum good) and its heap then failed adoption's checks.
  std::uint64_t restore_below_ = UINT64_MAX;
  std::string refused_restores_;  // those, with why, for the restore's log line
  std::string last_refusal_;      // reject_heap's last reason
  // Serialises the event loop's writes to the segment (a client's attach, reattach and cleanup)
  // with a checkpoint's capture, and guards the pids a capture stops. Lock order: the collector's
  // cycle lock (run_quiesced), then heap_mu_, then the collector's walk lock (reclaim_client).
  std::mutex heap_mu_;
  std::map<std::uint32_t, pid_t> client_pids_;  // GUARDED_BY(heap_mu_): slot -> process, every live client

  // --stopped-holder-timeout and --held-lock-timeout (lock_holder_watch.hpp); empty when both are
  // 0. Made once by the event loop, under heap_mu_; its sightings change only under heap_mu_ (the
  // loop's checks, a checkpoint's thaw restarting its clocks); its timeouts never change.
  std::optional<LockHolderWatch> holder_watch_;
  std::int64_t next_holder_check_ = 0;
  void check_lock_holders();
};

constexpr std::int64_t kKeptCheckNs = 1'000'000'000;
// How long a checkpoint waits for every client thread to stop before it gives up (and retries at
// its next occasion); a thread in an uninterruptible sleep stops when it leaves it.
constexpr std::int64_t kFreezeTimeoutNs = 500'000'000;

int Server::run() {
  if (!start()) {
    // Undo whatever part of the startup happened, but never another server's files: the
    // segment and socket are only ours once both locks are held.
    // An adopted (or refused) heap is never removed: it holds its clients' data.
    if (segment_ && formatted_) detail::Segment::remove(segment_config());
    if (listen_fd_ >= 0) {
      ::close(listen_fd_);
      ::unlink(opt_.socket.c_str());
    }
    return exit_code_;
  }
  loop();
  return stop();
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
  if (!opt_.data_dir.empty()) {
    // Forked before any thread exists (the guardian is a copy of this process).
    if (std::string why = freezer_.start_guardian(); !why.empty()) {
      log_error("cannot start the checkpoint guardian process: ", why);
      return false;
    }
  }
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
  if (!opt_.data_dir.empty()) {
    if (std::string why = data_dir_.open(opt_.data_dir); !why.empty()) {
      log_error("cannot use the data directory: ", why);
      return false;
    }
  }
  // A heap restored from a checkpoint that fails adoption's checks or its recovery is set aside,
  // and the next older checkpoint restored in its place (fall_back_to_older_checkpoint).
  for (;;) {
    if (!open_segment()) return false;
    meta_->gc_poison.store(opt_.gc_debug ? 1 : 0, std::memory_order_relaxed);
    meta_->gc_threshold_percent.store(opt_.gc_threshold, std::memory_order_relaxed);
    meta_->client_live_limit.store(opt_.client_live_limit, std::memory_order_relaxed);
    meta_->server_pid.store(static_cast<std::int32_t>(::getpid()), std::memory_order_relaxed);
    // This server's level, also over what an adopted heap's previous server had set (--durability
    // needs --data-dir, so none without one).
    meta_->durability.store(static_cast<std::uint32_t>(opt_.durability), std::memory_order_relaxed);
    // Clients of this heap may take roots without a fence only while its collector issues the barrier
    // (libshared/src/collector_barrier.hpp). An adopted heap's clients may already rely on it.
    if (detail::collector_barrier_available()) {
      meta_->collector_barrier.store(1, std::memory_order_release);
    } else if (adopted_ && meta_->collector_barrier.load(std::memory_order_acquire) == 1) {
      log_error("cannot adopt this heap: its clients take roots relying on the collector's membarrier, which this "
                "kernel does not offer (membarrier MEMBARRIER_CMD_GLOBAL_EXPEDITED); run the successor where the first "
                "server ran, or stop the clients and start with --fresh-heap");
      exit_code_ = kExitHeapRefused;
      return false;
    } else {
      meta_->collector_barrier.store(0, std::memory_order_release);
      log_info("membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) is not available: clients take roots with a fence");
    }

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
    if (!adopted_ || recover_adopted()) break;
    if (!fall_back_to_older_checkpoint()) return false;
  }
  gc_->start();
  if (adopted_) {
    // A client may have asked for a cycle while no server ran (a full heap): its request predates
    // the collector's start, so ask again, once, on its behalf.
    meta_->gc_request_seq.fetch_add(1, std::memory_order_seq_cst);
    detail::futex_wake_all(&meta_->gc_request_seq);
  }

  if (!opt_.data_dir.empty()) {
    checkpoint_wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (checkpoint_wake_fd_ < 0) {
      log_error("cannot create an eventfd: ", std::strerror(errno));
      return false;
    }
    Checkpointer::Config cc;
    cc.segment = reinterpret_cast<const unsigned char*>(meta_);
    cc.meta = meta_;
    cc.segment_fd = segment_->fd();
    cc.segment_size = segment_->size();
    cc.layout_version = meta_->layout_version;
    cc.heap_id = meta_->heap_id;
    cc.interval_ns = std::int64_t{opt_.checkpoint_interval_s} * 1'000'000'000;
    cc.durability = opt_.durability;
    cc.async_delay_ns = std::int64_t{opt_.async_delay_ms} * 1'000'000;
    cc.clock = [m = meta_] { return m->tx_clock.load(std::memory_order_acquire); };
    if (segment_->writes_tracked()) {
      written_pages_ = std::make_unique<WrittenPages>(meta_, segment_->size(), true);
      {
        std::lock_guard<std::mutex> g(heap_mu_);
        for (const auto& [slot, pid] : client_pids_) written_pages_->add(slot, pid);
      }
      cc.scan_written = [w = written_pages_.get()](const std::vector<Extent>& extents, std::vector<std::uint64_t>& pages) {
        return w->scan(extents, pages);
      };
    } else {
      log_info("captures compare or copy every page holding data: ", segment_->why_untracked());
    }
    try {
      checkpointer_ = std::make_unique<Checkpointer>(
          data_dir_, std::move(cc),
          [this](const std::function<bool()>& unfrozen, const std::function<void()>& step, CaptureStats& st) {
            return stop_world(unfrozen, step, st);
          },
          checkpoint_wake_fd_);
    } catch (const std::exception& e) {
      log_error(e.what());
      return false;
    }
    checkpointer_->start();
  }

  listen_fd_ = listen_on(opt_.socket, policy_, error);
  if (listen_fd_ < 0) {
    log_error(error);
    return false;
  }
  // Release: a client that sees kRunning sees the formatted segment and the fields above.
  meta_->server_state.store(static_cast<std::uint32_t>(detail::ServerState::kRunning), std::memory_order_release);

  const detail::SegmentConfig used = segment_config();  // an adopted heap's own geometry
  log_info("listening on ", opt_.socket, ", segment ", detail::heap_file(used.dir, used.name), " at ", hex(opt_.address), " (",
           segment_->size(), " bytes: heap ", opt_.heap_size, ", classes ", opt_.classes_size, "), gc threshold ",
           opt_.gc_threshold, "%, gc pacing ", opt_.gc_pacing, "% (from ", opt_.gc_min_trigger, " B), gc threads ",
           opt_.gc_threads,
           policy_.group ? ", group " + policy_.group_name + " allowed" : std::string());
  std::printf("colors-server ready: socket=%s segment=%s address=%s heap=%zu\n", opt_.socket.c_str(), segment_path.c_str(),
              hex(opt_.address).c_str(), opt_.heap_size);
  std::fflush(stdout);
  return true;
}

// Adopts the heap a server that is gone left under our name (unless --fresh-heap), else formats
// a new one. Both instance locks are held: nothing else uses the file.
// "" when the heap directory's filesystem can hold the rest of a heap file of `need` bytes, of
// which `have` are allocated; else why not. The file is sparse: a page a process first writes
// after the filesystem filled up is a SIGBUS in that process (every client, and the server, which
// then crashed again adopting the heap at each restart). Others may still fill the filesystem
// later; this refuses a start whose heap could never fit.
std::string room_for_heap(const std::string& dir, std::uint64_t need, std::uint64_t have) {
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0) return {};  // the create or the adoption reports the directory
  const std::uint64_t avail = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
  const std::uint64_t more = need > have ? need - have : 0;
  if (more <= avail) return {};
  return "the filesystem of " + dir + " has " + std::to_string(avail) + " bytes free, and the heap needs up to " +
         std::to_string(more) + " more: when it filled up, every process writing a new page of the heap would crash" +
         " (SIGBUS). Free space there, or use a smaller --heap-size or another --heap-dir";
}

bool Server::open_segment() {
  const detail::SegmentConfig cfg = segment_config();
  const std::string path = detail::heap_file(cfg.dir, cfg.name);
  const std::string dir = cfg.dir.empty() ? detail::default_heap_dir() : cfg.dir;
  if (::access(path.c_str(), F_OK) == 0) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
      if (std::string why = room_for_heap(dir, static_cast<std::uint64_t>(st.st_size),
                                          static_cast<std::uint64_t>(st.st_blocks) * 512);
          !why.empty() && !opt_.fresh_heap) {
        log_error("cannot adopt the heap ", path, " (left as it is): ", why);
        return false;
      }
    }
    if (!opt_.fresh_heap) return adopt_segment();
    log_warn("--fresh-heap: discarding the heap ", path, " left by a server that is no longer running");
  } else if (!opt_.data_dir.empty() && !opt_.fresh_heap && !data_dir_.checkpoints().empty()) {
    while (restore_segment()) {
      if (adopt_segment()) return true;
      if (!fall_back_to_older_checkpoint()) return false;
    }
    return false;
  }
  if (std::string why = room_for_heap(dir,
                                      detail::metadata_size() + cfg.classes_size + cfg.heap_size +
                                          detail::pending_bits_bytes(cfg.heap_size),
                                      0);
      !why.empty()) {
    log_error("cannot create the segment: ", why);
    return false;
  }
  try {
    segment_ = detail::Segment::create(cfg);
  } catch (const std::exception& e) {
    log_error("cannot create the segment: ", e.what());
    return false;
  }
  formatted_ = true;
  meta_ = segment_->meta();
  return true;
}

// No heap in memory but checkpoints in the data directory (a reboot, or a stop without
// --keep-heap): the newest checkpoint whose every checksum matches becomes the heap file, which is
// then adopted like the heap of a server that died (its clients are all gone). A damaged
// checkpoint is skipped and named in the log; none valid, or one of another layout version,
// refuses the start and keeps the files.
bool Server::restore_segment() {
  const detail::SegmentConfig cfg = segment_config();
  const std::string path = detail::heap_file(cfg.dir.empty() ? detail::default_heap_dir() : cfg.dir, cfg.name);
  // The restore is built under a temporary name and renamed to the heap's once whole (checkpoint
  // and log): a server killed in the middle leaves no heap, so the next start restores again
  // rather than adopting a heap that lacks the log's records. A leftover of such a kill is ours
  // (the name's lock is held) and goes.
  const std::string building = path + ".restoring";
  ::unlink(building.c_str());
  std::string skipped;
  for (std::uint64_t seq : data_dir_.checkpoints()) {
    if (seq >= restore_below_) continue;
    const std::string ckpt = data_dir_.checkpoint_path(seq);
    const auto t0 = now_ns();
    int fd = ::open(building.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      log_error("cannot create the segment file ", building, " to restore into: ", std::strerror(errno));
      return false;
    }
    CheckpointInfo info;
    std::string why = restore_checkpoint(ckpt, fd, info);
    ::close(fd);
    if (why.empty() && info.layout_version != kLayoutVersion) {
      ::unlink(building.c_str());
      exit_code_ = kExitHeapRefused;
      log_error("refusing to restore ", ckpt, ": it holds a heap of layout version ", info.layout_version,
                ", this server uses layout version ", kLayoutVersion,
                " (no migration exists: restore it with a server of its version, or start with --fresh-heap)");
      return false;
    }
    if (!why.empty()) {
      ::unlink(building.c_str());
      log_warn("skipping checkpoint ", ckpt, ": ", why);
      skipped += (skipped.empty() ? "" : ", ") + ckpt + " (" + why + ")";
      continue;
    }
    const auto t1 = now_ns();
    // Test hook: a pause between the checkpoint's copy and the log's replay, announced in the
    // log, in which a test kills the server in the middle of a restore.
    if (const char* pause = std::getenv("COLORS_RESTORE_PAUSE_MS"); pause != nullptr && *pause != 0) {
      log_info("pausing ", pause, " ms between the copy of checkpoint ", seq, " and its log's replay (COLORS_RESTORE_PAUSE_MS)");
      std::this_thread::sleep_for(std::chrono::milliseconds(std::atol(pause)));
    }
    ReplayResult replay;
    int seg = ::open(building.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    std::string io = seg < 0 ? std::string("cannot reopen ") + building + ": " + std::strerror(errno)
                              : replay_log(data_dir_.log_path(seq), seq, seg, info.segment_size, replay);
    if (seg >= 0) ::close(seg);
    if (io.empty() && ::rename(building.c_str(), path.c_str()) != 0)
      io = "cannot rename " + building + " to " + path + ": " + std::strerror(errno);
    if (!io.empty()) {
      ::unlink(building.c_str());
      log_error("cannot restore ", ckpt, ": ", io);
      return false;
    }
    log_info("restored checkpoint ", seq, " (", info.data_bytes, " B of data, heap id ", hex(info.heap_id), ") into ", path,
             " in ", (t1 - t0) / 1'000'000, " ms, then ", replay.records, " log record(s) (", replay.pages, " pages, ",
             replay.bytes, " B) in ", (now_ns() - t1) / 1'000'000, " ms",
             replay.stopped.empty() ? std::string() : "; the log's end was ignored: " + replay.stopped,
             skipped.empty() ? std::string() : "; skipped newer damaged " + skipped,
             refused_restores_.empty() ? std::string() : "; refused newer " + refused_restores_);
    restored_ = true;
    restored_seq_ = seq;
    return true;
  }
  if (!refused_restores_.empty()) skipped += (skipped.empty() ? "" : ", ") + refused_restores_;
  log_error("no valid checkpoint in ", opt_.data_dir, " (skipped ", skipped,
            "); the files are kept. Move them away or start with --fresh-heap to begin with an empty heap");
  return false;
}

// A restored heap that failed adoption's checks or its recovery (reject_heap set it aside, and
// with it the exit code): the checkpoint is left in the data directory, untouched, and the next
// older one, with its log, is restored in its place. False when there is none older (the start
// fails, the exit code says the heap was refused).
bool Server::fall_back_to_older_checkpoint() {
  if (!restored_) return false;
  restored_ = false;
  refused_restores_ += (refused_restores_.empty() ? "" : ", ") + data_dir_.checkpoint_path(restored_seq_) +
                       " (restored, but its heap failed the checks: " + last_refusal_ + ")";
  restore_below_ = restored_seq_;
  bool older = false;
  for (std::uint64_t seq : data_dir_.checkpoints()) older = older || seq < restore_below_;
  if (!older) {
    log_error("no older checkpoint in ", opt_.data_dir, " to fall back to; the files are kept");
    return false;
  }
  log_warn("checkpoint ", restored_seq_, " was restored but its heap failed the checks; restoring the next older one");
  exit_code_ = 1;
  return true;
}

// The first half of adopting: every check that reads only (header before mapping, metadata,
// tiling). Nothing is written to the heap before they pass.
bool Server::adopt_segment() {
  const detail::SegmentConfig cfg = segment_config();
  const std::string path = detail::heap_file(cfg.dir, cfg.name);
  std::string refusal;
  const auto t0 = now_ns();
  try {
    segment_ = detail::Segment::adopt(cfg, refusal);
  } catch (const std::exception& e) {
    log_error("cannot adopt the heap ", path, " left by a server that is no longer running: ", e.what(),
              " (the heap is left as it is)");
    return false;
  }
  if (!segment_) {
    reject_heap(refusal);
    return false;
  }
  meta_ = segment_->meta();
  if (std::string why = detail::check_segment_metadata(meta_); !why.empty()) {
    reject_heap(why);
    return false;
  }
  if (restored_) {
    // The locks its clients held at the checkpoint: handed on as their deaths would have been.
    std::size_t held = detail::mark_restored_lock_holders_dead(meta_);
    if (held != 0) log_info("the restored heap had ", held, " lock(s) held at the checkpoint; their holders count as dead");
  }
  if (std::string why = detail::check_heap_tiling(meta_); !why.empty()) {
    reject_heap(why);
    return false;
  }
  // The heap's own geometry wins: every pointer in it is absolute.
  const std::size_t heap = meta_->objects_end - meta_->objects_begin;
  const std::size_t classes = meta_->classes_end - meta_->classes_begin;
  if (heap != opt_.heap_size || classes != opt_.classes_size || meta_->base != opt_.address)
    log_warn("the adopted heap keeps its own geometry (address ", hex(meta_->base), ", heap ", heap, ", classes ",
             classes, "), not the flags' (address ", hex(opt_.address), ", heap ", opt_.heap_size, ", classes ",
             opt_.classes_size, ")");
  opt_.heap_size = heap;
  opt_.classes_size = classes;
  opt_.address = meta_->base;
  segment_->file_id(heap_dev_, heap_ino_);
  check_ns_ = now_ns() - t0;
  adopted_ = true;
  return true;
}

// The second half of adopting, once the collector exists and before it starts: the interrupted
// cycle, the dead clients, then the full verifier.
bool Server::recover_adopted() {
  const auto t0 = now_ns();
  const std::string path = segment_->path();
  std::string cycle = gc::recover_interrupted_cycle(meta_, opt_.gc_threads);
  std::size_t reclaimed = 0, tlab_bytes = 0;
  for (std::uint32_t i = 0; i < kMaxClients; ++i) {
    detail::ClientSlot& s = meta_->clients[i];
    const auto state = static_cast<detail::ClientState>(s.state.load(std::memory_order_acquire));
    if (state == detail::ClientState::kFree) continue;
    Claim claim{s.client_id.load(std::memory_order_relaxed), i};
    const pid_t pid = s.pid.load(std::memory_order_relaxed);
    if (state == detail::ClientState::kActive && process_maps_heap(pid, heap_dev_, heap_ino_)) {
      kept_.push_back({claim, pid});
      track_client(i, pid);
      continue;
    }
    // Died meanwhile, or its cleanup was cut short by the server's death (kReclaiming): both
    // steps of the cleanup are idempotent.
    Cleanup done = release_client_slot(meta_, claim, [this](std::uint32_t id, std::uint32_t slot) {
      std::size_t bytes = 0;
      gc_->reclaim_client(id, slot, &bytes);
      return bytes;
    });
    if (!done.ok) {
      reject_heap("cleaning up after dead client " + std::to_string(claim.client_id) + " failed: " + done.error);
      return false;
    }
    ++reclaimed;
    tlab_bytes += done.tlab_bytes;
    log_info("client ", claim.client_id, " (pid ", pid, ") of the previous server is gone; slot ", i, " freed, ",
             done.tlab_bytes, " TLAB bytes reclaimed");
  }
  const auto t1 = now_ns();
  // Kept clients may be running: the verifier leaves out what they can change under it.
  const detail::VerifyMode mode = kept_.empty() ? detail::VerifyMode::kQuiescent : detail::VerifyMode::kConcurrent;
  detail::VerifyReport r = detail::verify_heap(meta_, mode);
  if (!r.ok()) {
    reject_heap("the heap verifier found " + r.summary());
    return false;
  }
  const auto t2 = now_ns();
  log_info("adopted the heap ", path, " (heap id ", hex(meta_->heap_id), ", ", r.objects, " objects, ", r.object_bytes,
           " B): ", cycle, "; ", reclaimed, " dead client(s) reclaimed (", tlab_bytes, " TLAB bytes), ", kept_.size(),
           " live client(s) keep their slots until they reattach; verified (",
           mode == detail::VerifyMode::kQuiescent ? "quiescent" : "concurrent", ") in ", (t2 - t0 + check_ns_) / 1'000'000,
           " ms (checks ", check_ns_ / 1'000'000, " ms, recovery ", (t1 - t0) / 1'000'000, " ms, verifier ",
           (t2 - t1) / 1'000'000, " ms)");
  next_kept_check_ = now_ns() + kKeptCheckNs;
  return true;
}

// A heap that failed a check: unmapped, renamed aside for inspection, never deleted.
void Server::reject_heap(const std::string& why) {
  last_refusal_ = why;
  const detail::SegmentConfig cfg = segment_config();
  const std::string path = detail::heap_file(cfg.dir, cfg.name);
  if (gc_) gc_.reset();
  segment_.reset();
  meta_ = nullptr;
  detail::set_current_meta(nullptr);
  adopted_ = false;
  exit_code_ = kExitHeapRefused;
  std::string error;
  const std::string aside = detail::Segment::set_aside(cfg, error);
  if (aside.empty()) {
    log_error("refusing the heap ", path, " left by a server that is no longer running: ", why,
              ". It could not be set aside (", error, "); it is left in place");
    return;
  }
  if (restored_) {
    log_error("refusing the heap ", path, " restored from checkpoint ", restored_seq_, ": ", why, ". Kept it as ",
              aside, " for inspection");
    return;
  }
  log_error("refusing the heap ", path, " left by a server that is no longer running: ", why, ". Kept it as ", aside,
            " for inspection; start colors-server again to begin with a fresh heap");
}

// Kept slots whose process exited (or detached) before reattaching are reclaimed like a dead
// client's.
void Server::check_kept_clients() {
  std::erase_if(kept_, [this](const KeptClient& k) {
    if (process_maps_heap(k.pid, heap_dev_, heap_ino_)) return false;
    std::lock_guard<std::mutex> g(heap_mu_);
    untrack_client(k.claim.slot);
    Cleanup done = release_client_slot(meta_, k.claim, [this](std::uint32_t id, std::uint32_t slot) {
      std::size_t bytes = 0;
      gc_->reclaim_client(id, slot, &bytes);
      return bytes;
    });
    if (done.ok)
      log_info("client ", k.claim.client_id, " (pid ", k.pid, ") of the previous server ended without reattaching; slot ",
               k.claim.slot, " freed, ", done.tlab_bytes, " TLAB bytes reclaimed");
    else
      log_error("client ", k.claim.client_id, " (pid ", k.pid, ") ended, but cleaning up after it failed: ", done.error,
                "; slot ", k.claim.slot, " stays unused");
    return true;
  });
}

void Server::check_lock_holders() {
  std::vector<LockHolderWatch::Kill> kills;
  {
    std::lock_guard<std::mutex> g(heap_mu_);  // no checkpoint freeze runs meanwhile (the watch's invariants)
    std::vector<pid_t> pids;
    for (const auto& [slot, pid] : client_pids_) pids.push_back(pid);
    for (const KeptClient& k : kept_) pids.push_back(k.pid);
    kills = holder_watch_->check(meta_, pids, now_ns());
  }
  for (const LockHolderWatch::Kill& k : kills) {
    if (k.rule == LockHolderWatch::Rule::kStopped)
      log_error("process ", k.pid, " was stopped for ", k.for_ns / 1'000'000, " ms while its thread ", k.tid,
                " held the heap's ", k.lock, ", which every client needs; killing it (SIGKILL) so the others go on "
                "(--stopped-holder-timeout)");
    else
      log_error("process ", k.pid, ": its thread ", k.tid, " has held the heap's ", k.lock, " for ", k.for_ns / 1'000'000,
                " ms without letting it go, and every client needs it; killing it (SIGKILL) so the others go on "
                "(--held-lock-timeout)");
    ::kill(k.pid, SIGKILL);
  }
}

void Server::loop() {
  std::vector<pollfd> fds;
  if (opt_.stopped_holder_timeout_ms > 0 || opt_.held_lock_timeout_ms > 0) {
    std::lock_guard<std::mutex> g(heap_mu_);  // a checkpoint's thaw restarts its clocks under it
    holder_watch_.emplace(static_cast<std::int64_t>(opt_.stopped_holder_timeout_ms) * 1'000'000,
                          static_cast<std::int64_t>(opt_.held_lock_timeout_ms) * 1'000'000);
  }
  for (;;) {
    std::int64_t now = now_ns();
    bool listening = now >= accept_paused_until_;
    std::int64_t wake_at = listening ? -1 : accept_paused_until_;
    fds.clear();
    fds.push_back({g_signal_pipe[0], POLLIN, 0});
    fds.push_back({listening ? listen_fd_ : -1, POLLIN, 0});  // poll ignores negative fds
    fds.push_back({checkpoint_wake_fd_, POLLIN, 0});
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
    if (holder_watch_ && next_holder_check_ < wake_at) wake_at = std::max(now, next_holder_check_);
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
    std::size_t polled = fds.size() - 3;
    for (std::size_t i = 0; rc > 0 && i < polled; ++i) {
      short ev = fds[i + 3].revents;
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
    if (rc > 0 && fds[2].revents != 0) answer_checkpoints();

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
    if (holder_watch_ && now >= next_holder_check_) {
      check_lock_holders();
      next_holder_check_ = now + holder_watch_->interval_ns();
    }
    if (!kept_.empty() && now >= next_kept_check_) {
      check_kept_clients();
      next_kept_check_ = now + kKeptCheckNs;
    }
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
  for (int budget = kAcceptsPerTurn; budget > 0; --budget) {
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
  // Drain what is there, up to kMessagesPerTurn messages: a peer that keeps its socket full of
  // requests that get no answer (no output fills up to stop reading() it) would otherwise keep the
  // loop here, and every other connection, attaches included, would wait for it (seconds, with a
  // few such peers). poll() is level-triggered: what is left is read in the loop's next turn,
  // after the others. Invariant: at most one 16-byte message is buffered at a time, so a Hello is
  // processed before anything sent after it is read.
  int budget = kMessagesPerTurn;
  while (c.fd >= 0 && c.reading() && budget > 0) {
    ssize_t n = ::recv(c.fd, c.buf.data() + c.have, c.need - c.have, MSG_DONTWAIT);
    if (n > 0) {
      c.have += static_cast<std::size_t>(n);
      if (c.have < c.need) continue;
      if (c.phase == Connection::Phase::kHandshake && c.need == detail::kHelloSize) {
        if (on_hello_prefix(c)) c.need = detail::kHelloFullSize;  // refused: reading() is false now
        if (c.fd < 0) return;
        continue;
      }
      c.have = 0;
      --budget;
      if (c.phase == Connection::Phase::kHandshake) {
        c.need = detail::kRequestSize;
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

// The frozen 16 bytes of a hello: answered at once when they are not ours. True: read the rest.
bool Server::on_hello_prefix(Connection& c) {
  detail::Hello h = detail::decode_hello(c.buf.data());
  if (h.magic != detail::kWireMagic) {
    log_limited(g_log_refused, LogLevel::kWarn, "process ", c.peer.pid, " is not a colors client (bad magic 0x",
                std::hex, h.magic, std::dec, "); closing its connection");
    refuse(c, AttachStatus::kBadHello, "not a colors client hello (bad magic)");
    return false;
  }
  if (!c.refusal.empty()) {
    refuse(c, AttachStatus::kCredentials, c.refusal);
    return false;
  }
  if (h.protocol_version != kProtocolVersion || h.layout_version != kLayoutVersion) {
    std::string why = "version mismatch: the client (pid " + std::to_string(c.peer.pid) + ") speaks protocol version " +
                      std::to_string(h.protocol_version) + " / layout version " + std::to_string(h.layout_version) +
                      ", this server speaks protocol version " + std::to_string(kProtocolVersion) +
                      " / layout version " + std::to_string(kLayoutVersion) +
                      "; use a client library and colors-server from the same build";
    log_limited(g_log_refused, LogLevel::kWarn, "refusing connection: ", why);
    refuse(c, AttachStatus::kVersionMismatch, why);
    return false;
  }
  return true;
}

void Server::on_hello(Connection& c) {
  detail::Hello h = detail::decode_hello(c.buf.data());
  detail::decode_hello_extension(c.buf.data() + detail::kHelloSize, h);
  if (h.mode == detail::HelloMode::kReattach) {
    on_reattach(c, h);
    return;
  }
  if (h.mode != detail::HelloMode::kAttach) {
    log_limited(g_log_refused, LogLevel::kWarn, "process ", c.peer.pid, " sent an unknown hello mode ",
                static_cast<std::uint32_t>(h.mode), "; closing its connection");
    refuse(c, AttachStatus::kBadHello, "unknown hello mode");
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
  std::optional<Claim> claim;
  {
    std::lock_guard<std::mutex> g(heap_mu_);
    claim = claim_client_slot(meta_, c.peer.pid, c.peer.uid);
    if (claim) track_client_locked(claim->slot, c.peer.pid);
  }
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

// A client of a server that died asks for its slot back (adoption.hpp). Granted only to the
// process the slot records (pid and uid from SO_PEERCRED), for this very heap, while no other
// connection holds the slot.
void Server::on_reattach(Connection& c, const detail::Hello& h) {
  std::string why;
  const detail::ClientSlot* s = h.slot < kMaxClients ? &meta_->clients[h.slot] : nullptr;
  if (h.heap_id != meta_->heap_id) {
    why = "this server serves heap " + hex(meta_->heap_id) + ", not the client's heap " + hex(h.heap_id) +
          " (that heap was discarded with --fresh-heap or set aside after failing its checks)";
  } else if (s == nullptr) {
    why = "there is no client slot " + std::to_string(h.slot);
  } else if (s->state.load(std::memory_order_acquire) != static_cast<std::uint32_t>(detail::ClientState::kActive) ||
             s->client_id.load(std::memory_order_relaxed) != h.client_id) {
    why = "slot " + std::to_string(h.slot) + " no longer belongs to client " + std::to_string(h.client_id) +
          " (its process was taken for dead and the slot reclaimed)";
  } else if (s->pid.load(std::memory_order_relaxed) != c.peer.pid ||
             s->uid.load(std::memory_order_relaxed) != static_cast<std::uint32_t>(c.peer.uid)) {
    why = "slot " + std::to_string(h.slot) + " belongs to pid " + std::to_string(s->pid.load(std::memory_order_relaxed)) +
          " / uid " + std::to_string(s->uid.load(std::memory_order_relaxed)) + ", not to pid " +
          std::to_string(c.peer.pid) + " / uid " + std::to_string(c.peer.uid);
  } else {
    for (const Connection& o : conns_)
      if (&o != &c && o.fd >= 0 && o.phase == Connection::Phase::kAttached && o.claim.slot == h.slot)
        why = "slot " + std::to_string(h.slot) + " is attached on another connection";
  }
  if (!why.empty()) {
    log_limited(g_log_refused, LogLevel::kWarn, "refusing the reattach of process ", c.peer.pid, ": ", why);
    refuse(c, AttachStatus::kNotReattached, why);
    return;
  }
  std::erase_if(kept_, [&](const KeptClient& k) { return k.claim.slot == h.slot; });
  track_client(h.slot, c.peer.pid);
  c.claim = Claim{h.client_id, h.slot};
  c.phase = Connection::Phase::kAttached;
  AttachReply r;
  r.status = AttachStatus::kOk;
  r.client_id = h.client_id;
  r.slot = h.slot;
  r.address = opt_.address;
  r.size = segment_->size();
  r.segment_name = opt_.name;
  reply(c, std::move(r));
  if (c.fd < 0) return;
  log_limited(g_log_attach, LogLevel::kInfo, "client ", h.client_id, " (pid ", c.peer.pid, ", uid ", c.peer.uid,
              ") reattached in slot ", h.slot, " after its server's death; ", active_clients(meta_), " attached");
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
    case detail::RequestType::kSync:
      if (checkpointer_ && opt_.durability != detail::DurabilityLevel::kNone) {
        checkpointer_->request_sync(c.claim.client_id);
        return;
      }
      [[fallthrough]];  // answered as a checkpoint request: kNoDataDir, or a checkpoint (durability none)
    case detail::RequestType::kCheckpoint:
      if (checkpointer_) {
        checkpointer_->request_checkpoint(c.claim.client_id);
      } else {
        detail::Request done;
        done.type = detail::RequestType::kCheckpointDone;
        done.arg = detail::kCheckpointFailed |
                   std::uint64_t{static_cast<std::uint32_t>(detail::CheckpointFailure::kNoDataDir)} << 32;
        auto out = detail::encode_request(done);
        queue(c, out.data(), out.size(), -1);
      }
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
  std::unique_lock<std::mutex> g(heap_mu_);
  untrack_client(c.claim.slot);
  Cleanup done = release_client_slot(meta_, c.claim, [this](std::uint32_t id, std::uint32_t slot) {
    std::size_t bytes = 0;
    gc_->reclaim_client(id, slot, &bytes);
    return bytes;
  });
  g.unlock();
  if (done.ok) {
    log_limited(g_log_gone, LogLevel::kInfo, "client ", c.claim.client_id, " (pid ", c.peer.pid, ") ", how, "; slot ", c.claim.slot, " freed, ",
             done.tlab_bytes, " TLAB bytes reclaimed; ", active_clients(meta_), " attached");
  } else {
    log_error("client ", c.claim.client_id, " (pid ", c.peer.pid, ") ", how, ", but cleaning up after it failed: ",
              done.error, "; slot ", c.claim.slot, " stays unused");
  }
  close_conn(c);
}

void Server::track_client(std::uint32_t slot, pid_t pid) {
  std::lock_guard<std::mutex> g(heap_mu_);
  track_client_locked(slot, pid);
}

void Server::track_client_locked(std::uint32_t slot, pid_t pid) {
  client_pids_[slot] = pid;
  if (written_pages_) written_pages_->add(slot, pid);
}

void Server::untrack_client(std::uint32_t slot) {
  client_pids_.erase(slot);
  if (written_pages_) written_pages_->remove(slot);
}

// The envelope of a checkpoint or log record: no collector cycle, no attach or cleanup by the
// event loop. Within it `unfrozen` tries to capture while the clients run (checkpointer.hpp);
// when it cannot, every client process is stopped (freezer.hpp) and meanwhile `step` copies.
std::string Server::stop_world(const std::function<bool()>& unfrozen, const std::function<void()>& step,
                               CaptureStats& st) {
  std::string error;
  gc_->run_quiesced([&] {
    std::lock_guard<std::mutex> g(heap_mu_);
    if (unfrozen()) return;
    st.frozen = true;
    std::vector<pid_t> pids;
    for (const auto& [slot, pid] : client_pids_) pids.push_back(pid);
    const auto t0 = now_ns();
    error = freezer_.freeze(pids, kFreezeTimeoutNs);
    if (!error.empty()) return;
    // Test hook: a server that dies while its clients are stopped (freezer.hpp's guardian).
    if (const char* hold = std::getenv("COLORS_CHECKPOINT_FAULT_HOLD_MS"); hold != nullptr && *hold != 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(std::strtoll(hold, nullptr, 10)));
    step();
    freezer_.thaw();
    if (holder_watch_) holder_watch_->restart_held_clocks();  // the freeze was ours (lock_holder_watch.hpp)
    st.stop_ns = now_ns() - t0;
    st.processes = pids.size();
  });
  return error;
}

// Answers the clients whose checkpoint requests were served.
void Server::answer_checkpoints() {
  std::uint64_t n = 0;
  [[maybe_unused]] ssize_t got = ::read(checkpoint_wake_fd_, &n, sizeof n);
  if (!checkpointer_) return;
  for (const Checkpointer::Outcome& o : checkpointer_->take_outcomes()) {
    for (Connection& c : conns_) {
      if (c.fd < 0 || c.phase != Connection::Phase::kAttached || c.claim.client_id != o.token) continue;
      detail::Request done;
      done.type = detail::RequestType::kCheckpointDone;
      done.arg = o.error.empty() ? o.seq
                                 : detail::kCheckpointFailed |
                                       std::uint64_t{static_cast<std::uint32_t>(detail::CheckpointFailure::kFailed)} << 32 |
                                       static_cast<std::uint32_t>(o.error_number);
      auto out = detail::encode_request(done);
      queue(c, out.data(), out.size(), -1);
    }
  }
}

void Server::close_conn(Connection& c) {
  if (c.fd >= 0) ::close(c.fd);
  c.fd = -1;  // erased at the end of the loop iteration
}

int Server::stop() {
  // Whether the heap stays for a successor: --keep-heap, or a shutdown checkpoint that failed (the
  // heap is then newer than anything on disk, and removing it would lose what the checkpoint
  // missed: the successor adopts it instead, as after --keep-heap).
  bool keep = opt_.keep_heap;
  int code = 0;
  if (checkpointer_) {
    // The last checkpoint, of the heap as its clients leave it (they are stopped for the copy).
    checkpointer_->stop();
    Checkpointer::Outcome o = checkpointer_->run_checkpoint();
    if (!o.error.empty()) {
      log_error("the shutdown checkpoint failed (", o.error, "); the newest checkpoint on disk is older, so the heap ",
                detail::heap_file(opt_.heap_dir, opt_.name), " is kept for the next server on this name to adopt");
      keep = true;
      code = kExitShutdownCheckpointFailed;
    }
    checkpointer_.reset();
  }
  // Order matters: clients learn the state from the segment, so it is set (release) before the
  // waiters are woken and before the connections close (see shutdown.hpp). A kept heap's state
  // tells them to wait for a successor, as after a crash, and their slots stay theirs.
  const auto state = keep ? detail::ServerState::kAwaitingSuccessor : detail::ServerState::kStopped;
  meta_->server_state.store(static_cast<std::uint32_t>(state), std::memory_order_release);
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
  if (!keep) detail::Segment::remove(segment_config());
  // Locks last: until here a new server on the same name/socket must not start.
  socket_lock_.release();
  name_lock_.release();
  if (keep)
    log_info("stopped with the heap kept: segment ", detail::heap_file(opt_.heap_dir, opt_.name),
             " kept for a successor, socket ", opt_.socket, " removed, ", attached,
             " client connection(s) closed (their slots wait for the successor)");
  else
    log_info("stopped: segment ", detail::heap_file(opt_.heap_dir, opt_.name), " and socket ", opt_.socket, " removed, ",
             attached, " client connection(s) closed");
  segment_.reset();  // unmaps; clients keep their own mappings until they detach
  return code;
}

}  // namespace

int run_server(const Options& options) {
  set_log_level(options.log_level);
  Server s(options);
  return s.run();
}

}  // namespace colors::server
