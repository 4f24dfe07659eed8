#include "checkpointer.hpp"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "futex.hpp"
#include "log.hpp"

namespace colors::server {

namespace {
std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
std::uint64_t wall_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}
LogLimiter g_log_tracking("write tracking started or stopped vouching for the captures");

// A log longer than this and than twice the checkpoint's data is folded into a new checkpoint.
constexpr std::uint64_t kMinLogBytes = std::uint64_t{64} << 20;
// A checkpoint's passes while the clients run: at most this many after the first full copy, and
// none once a pass found at most kStopPages written pages (about 0.1 ms to copy in the stop).
constexpr int kPrecopyPasses = 4;
constexpr std::size_t kStopPages = 256;
// Scans after the first that a capture tries before it stops the clients: a client between two
// transactions, or finishing one, writes in short bursts, and a later window is often quiet.
constexpr int kUnfrozenAttempts = 3;
// gather_commits: how long a record waits at most for the commits it expects. About half a
// record's fdatasync here: a commit that arrives within it shares the record instead of paying a
// whole record after it.
constexpr std::int64_t kGatherNs = 100'000;

// Copies segment bytes that other threads (the collector) and processes may be writing meanwhile:
// word by word with relaxed atomic loads, so that the race is a defined one. A page copied while
// written is listed by the next scan and copied again (written_pages.hpp). REQUIRES: `n` a multiple
// of 8, both pointers 8-byte aligned (offsets are page-aligned).
void copy_while_written(unsigned char* dst, const unsigned char* src, std::size_t n) {
  auto* d = reinterpret_cast<std::uint64_t*>(dst);
  const auto* w = reinterpret_cast<const std::uint64_t*>(src);
  for (std::size_t i = 0; i < n / 8; ++i) d[i] = __atomic_load_n(w + i, __ATOMIC_RELAXED);
}

// Page faults are taken before the copies, not during them (or during a stop): the server maps
// the pages clients wrote and the image gets its own.
void populate(unsigned char* image, const unsigned char* segment, const std::vector<Extent>& extents) {
  for (const Extent& e : extents) {
    if (::madvise(image + e.offset, e.length, MADV_POPULATE_WRITE) != 0) break;  // before Linux 5.14
    (void)::madvise(const_cast<unsigned char*>(segment) + e.offset, e.length, MADV_POPULATE_READ);
  }
}
}  // namespace

// How a capture went, for its log line.
std::string capture_summary(const CaptureStats& st, std::size_t stop_pages) {
  if (!st.frozen) return "0 client process(es) stopped for 0 us (none: nothing was written while copying)";
  return std::to_string(st.processes) + " client process(es) stopped for " + std::to_string(st.stop_ns / 1000) + " us (" +
         (stop_pages == SIZE_MAX ? std::string("every page holding data copied or compared")
                                 : std::to_string(stop_pages) + " written page(s) copied") +
         ")";
}

// tmpfs's SEEK_DATA walks the file's pages (15-20 us for a few MB), and a capture asks up to three
// times: the answer is kept while the file's allocated blocks stay the same. A tmpfs file only
// gains pages (nothing punches holes in the segment), so the same count means the same pages; the
// count is read before the walk, so a page added during it changes the count for the next call.
std::vector<Extent> Checkpointer::current_extents() {
  struct stat st {};
  if (::fstat(cfg_.segment_fd, &st) != 0) return data_extents(cfg_.segment_fd, cfg_.segment_size);
  if (st.st_blocks != extents_blocks_) {
    extents_ = data_extents(cfg_.segment_fd, cfg_.segment_size);
    extents_blocks_ = st.st_blocks;
  }
  return extents_;
}

bool Checkpointer::scan(const std::vector<Extent>& extents, std::vector<std::uint64_t>& pages) {
  pages.clear();
  untracked_ = cfg_.scan_written ? cfg_.scan_written(extents, pages) : "write tracking is off";
  if (untracked_.empty()) return true;
  tracking_valid_ = false;
  return false;
}

// After a capture, not in its stop: a line when the pages start or stop being tracked, rate
// limited (clients that come and go can make one per capture).
void Checkpointer::log_tracking_change() {
  if (untracked_ == untracked_logged_) return;
  if (untracked_.empty())
    log_limited(g_log_tracking, LogLevel::kInfo, "captures copy the pages the kernel saw written (write tracking)");
  else
    log_limited(g_log_tracking, LogLevel::kInfo, "captures compare or copy every page holding data: ", untracked_);
  untracked_logged_ = untracked_;
}

// A checkpoint's copies while the clients run: every page holding data, then the pages written
// meanwhile until few are left. True when `image_` then differs from the segment only in pages
// the stop's scan will list; false (nothing to rely on) without tracking.
bool Checkpointer::precopy() {
  if (!cfg_.scan_written) return false;
  std::vector<Extent> extents = current_extents();
  populate(image_, cfg_.segment, extents);
  std::vector<std::uint64_t> pages;
  // From this scan on, every write is listed by a later one; so a page copied after it is either
  // as it is now or listed again.
  if (!scan(extents, pages)) return false;
  for (const Extent& e : extents) copy_while_written(image_ + e.offset, cfg_.segment + e.offset, e.length);
  // A listed page in a hole of `extents` gained its data after they were read: copied too, or no
  // later scan would list it again (this one protected it).
  for (std::uint64_t off : pages) copy_while_written(image_ + off, cfg_.segment + off, kDeltaPage);
  tracking_valid_ = true;
  for (int pass = 0; pass < kPrecopyPasses; ++pass) {
    // A page that gained data since `extents` was written through a new, unprotected page-table
    // entry: this scan lists it.
    extents = current_extents();
    if (!scan(extents, pages)) return false;
    for (std::uint64_t off : pages) copy_while_written(image_ + off, cfg_.segment + off, kDeltaPage);
    if (pages.size() <= kStopPages) break;
  }
  return true;
}

bool Checkpointer::capture_unfrozen(const std::function<void(std::uint64_t)>& take, std::vector<std::uint64_t>& pending,
                                    std::vector<Extent>& extents, std::uint64_t& clock) {
  if (!tracking_valid_ || no_unfrozen_) return false;
  if (!scan(current_extents(), pending)) return false;
  for (int attempt = 0; attempt < kUnfrozenAttempts; ++attempt) {
    for (std::uint64_t off : pending) take(off);
    clock = cfg_.clock();
    extents = current_extents();
    // Nothing listed: no process wrote between the end of its previous scan and the start of
    // this one, a window that holds every copy above, the clock's read and the extents' (a page
    // that gains data after that read is written after it). With image_ differing from the
    // segment only in the pages the previous scan listed, image_ is the segment of one instant.
    if (!scan(extents, pending)) return false;
    if (pending.empty()) return true;
  }
  return false;
}

void Checkpointer::capture_frozen(const std::function<void(std::uint64_t)>& take, const std::vector<std::uint64_t>& pending,
                                  bool every_page_compared, std::vector<Extent>& extents, std::uint64_t& clock,
                                  std::size_t& copied) {
  extents = current_extents();
  const bool trusted = tracking_valid_;
  std::vector<std::uint64_t> written;
  const bool tracked = scan(extents, written);
  if (trusted && tracked) {
    for (std::uint64_t off : pending) take(off);
    for (std::uint64_t off : written) take(off);
    copied = pending.size() + written.size();
  } else if (every_page_compared) {
    for (const Extent& e : extents)
      for (std::uint64_t off = e.offset; off < e.offset + e.length; off += kDeltaPage) take(off);
    copied = SIZE_MAX;
  } else {
    // Everyone stopped, the collector between cycles: nothing writes, a plain copy is exact.
    for (const Extent& e : extents) std::memcpy(image_ + e.offset, cfg_.segment + e.offset, e.length);
    copied = SIZE_MAX;
  }
  tracking_valid_ = tracked;
  clock = cfg_.clock();
}

Checkpointer::Checkpointer(DataDir& dir, Config config, StopWorld stop_world, int wake_fd)
    : dir_(dir), cfg_(std::move(config)), stop_world_(std::move(stop_world)), wake_fd_(wake_fd), channel_(cfg_.meta) {
  void* p = ::mmap(nullptr, cfg_.segment_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error(std::string("cannot map the checkpoint buffer: ") + std::strerror(errno));
  image_ = static_cast<unsigned char*>(p);
  if (const char* v = std::getenv("COLORS_CHECKPOINT_FAULT_HOLD_MS"); v != nullptr && *v != 0) no_unfrozen_ = true;
  if (const char* v = std::getenv("COLORS_DATA_DIR_FAULT_FULL"); v != nullptr && *v != 0) {
    fault_.full_while_exists = v;
    fault_.full_after = 65536;  // a torn file, not an empty one
  }
}

Checkpointer::~Checkpointer() {
  stop();
  if (log_fd_ >= 0) ::close(log_fd_);
  if (image_ != nullptr) ::munmap(image_, cfg_.segment_size);
}

void Checkpointer::start() { thread_ = std::thread([this] { loop(); }); }

void Checkpointer::stop() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stopping_ = true;
  }
  detail::ChannelServer::ring(cfg_.meta);
  if (thread_.joinable()) thread_.join();
}

void Checkpointer::request_checkpoint(std::uint64_t token) {
  {
    std::lock_guard<std::mutex> g(mu_);
    checkpoints_.push_back(token);
  }
  detail::ChannelServer::ring(cfg_.meta);
}

void Checkpointer::request_sync(std::uint64_t token) {
  {
    std::lock_guard<std::mutex> g(mu_);
    syncs_.push_back(token);
  }
  detail::ChannelServer::ring(cfg_.meta);
}

std::vector<Checkpointer::Outcome> Checkpointer::take_outcomes() {
  std::lock_guard<std::mutex> g(mu_);
  return std::exchange(outcomes_, {});
}

bool Checkpointer::log_too_long() const { return log_bytes_ > std::max(kMinLogBytes, 2 * base_bytes_); }

void Checkpointer::loop() {
  std::int64_t next_periodic = cfg_.interval_ns > 0 ? now_ns() + cfg_.interval_ns : -1;
  const bool async = cfg_.durability == detail::DurabilityLevel::kAsync;
  const bool tickets = cfg_.durability == detail::DurabilityLevel::kFull;
  // kAsync: no record before this (one per async_delay_ns at most).
  std::int64_t async_not_before = 0;
  for (;;) {
    // Read before the conditions it announces: a request made after this read rings the bell
    // again, so the wait below returns at once instead of sleeping through it.
    const std::uint32_t bell = channel_.bell()->load(std::memory_order_acquire);
    std::unique_lock<std::mutex> lk(mu_);
    if (stopping_) return;
    const std::int64_t now = now_ns();
    const bool periodic = next_periodic >= 0 && now >= next_periodic;
    // kAsync: a record whenever a transaction committed since the last capture, at most every
    // async_delay_ns (a commit is on disk within about twice that).
    const bool async_due = async && now >= async_not_before && cfg_.clock() != last_clock_;
    const bool ticketed = tickets && channel_.waiting();
    if (checkpoints_.empty() && syncs_.empty() && !periodic && !async_due && !ticketed) {
      lk.unlock();
      // kAsync: commits ring nothing, so the clock is looked at every async_delay_ns.
      std::int64_t wait = !async ? -1 : async_not_before > now ? async_not_before - now : cfg_.async_delay_ns;
      if (next_periodic >= 0 && (wait < 0 || next_periodic - now < wait)) wait = next_periodic - now;
      (void)detail::futex_wait(channel_.bell(), bell, wait);
      continue;
    }
    std::vector<std::uint64_t> served = std::exchange(checkpoints_, {});
    const bool full = !served.empty() || periodic || !have_base_ || log_too_long();
    for (std::uint64_t t : std::exchange(syncs_, {})) served.push_back(t);
    lk.unlock();
    if (tickets && !full && channel_.waiting()) gather_commits();
    // Before the capture begins (durable_commit.hpp): every ticket up to it is served by it.
    const std::uint64_t taken = tickets ? channel_.take() : 0;
    Outcome o = full ? run_checkpoint() : run_record();
    if (full && cfg_.interval_ns > 0) next_periodic = now_ns() + cfg_.interval_ns;
    if (tickets) {
      // Read before serve(): a waiter it wakes may commit again at once, and must not count twice.
      const std::uint64_t committers = channel_.pending();
      channel_.serve(taken, o.error.empty());
      committers_[records_ % kCommittersWindow] = committers;
      ++records_;
    }
    if (async && !full) async_not_before = now_ns() + cfg_.async_delay_ns;
    if (served.empty()) continue;
    lk.lock();
    for (std::uint64_t token : served) {
      Outcome each = o;
      each.token = token;
      outcomes_.push_back(each);
    }
    lk.unlock();
    std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
  }
}

// Group commit's wait. How many processes commit durably at once shows at the end of each
// record, before its waiters are woken: the tickets it served plus those that arrived while it
// was captured and synced (committers that just missed it). While that count, the largest over
// the last kCommittersWindow records, exceeds the tickets waiting, the next record waits for the
// others (up to kGatherNs): their commits then share its fdatasync instead of each paying a
// record of its own, and the capture runs while they wait instead of while they write. One
// process committing in turn never waits; a committer that stops costs the next
// kCommittersWindow records at most kGatherNs each.
void Checkpointer::gather_commits() {
  std::uint64_t expected = 1;
  for (std::uint64_t c : committers_) expected = std::max(expected, c);
  const std::int64_t deadline = now_ns() + kGatherNs;
  for (;;) {
    const std::uint32_t bell = channel_.bell()->load(std::memory_order_acquire);
    const std::int64_t left = deadline - now_ns();
    if (channel_.pending() >= expected || left <= 0) return;
    (void)detail::futex_wait(channel_.bell(), bell, left);  // a ticket rings the bell
  }
}

Checkpointer::Outcome Checkpointer::run_checkpoint() {
  Outcome o;
  CheckpointInfo info;
  info.seq = dir_.next_seq();
  CaptureStats st;
  const std::int64_t t0 = now_ns();
  have_base_ = false;  // image_ changes now; true again only once the checkpoint is on disk
  const bool precopied = precopy();
  if (!precopied) populate(image_, cfg_.segment, current_extents());
  std::uint64_t clock = 0;
  std::size_t stop_pages = 0;
  std::vector<std::uint64_t> pending;
  const auto copy_running = [&](std::uint64_t off) { copy_while_written(image_ + off, cfg_.segment + off, kDeltaPage); };
  const auto copy_stopped = [&](std::uint64_t off) { std::memcpy(image_ + off, cfg_.segment + off, kDeltaPage); };
  std::string why = stop_world_([&] { return capture_unfrozen(copy_running, pending, info.extents, clock); },
                                [&] { capture_frozen(copy_stopped, pending, false, info.extents, clock, stop_pages); }, st);
  log_tracking_change();
  if (!why.empty()) {
    o.error = "could not stop the clients: " + why;
    log_error("checkpoint ", info.seq, " failed: ", o.error);
    return o;
  }
  info.layout_version = cfg_.layout_version;
  info.heap_id = cfg_.heap_id;
  info.base = reinterpret_cast<std::uintptr_t>(cfg_.segment);
  info.segment_size = cfg_.segment_size;
  info.created_ns = wall_ns();
  for (const Extent& e : info.extents) info.data_bytes += e.length;
  const std::int64_t t1 = now_ns();
  std::string error;
  int fd = dir_.create_temp(info.seq, error);
  if (fd >= 0) {
    error = write_checkpoint(fd, info, image_, fault_);
    o.error_number = error.empty() ? 0 : errno;
    if (::close(fd) != 0 && error.empty()) error = std::string("close: ") + std::strerror(errno);
  } else {
    o.error_number = errno;
  }
  if (error.empty()) error = dir_.commit(info.seq);
  if (!error.empty()) {
    dir_.remove_temp(info.seq);
    o.error = "could not write " + dir_.temp_path(info.seq) + ": " + error;
    log_error("checkpoint ", info.seq, " failed: ", o.error, "; the heap in memory is intact, the previous checkpoint stays the newest");
    return o;
  }
  // The new base: later records go to its own log.
  if (log_fd_ >= 0) ::close(log_fd_);
  log_fd_ = -1;
  have_base_ = true;
  base_seq_ = info.seq;
  base_bytes_ = info.data_bytes;
  log_seq_ = 0;
  log_bytes_ = 0;
  log_allocated_ = 0;
  last_clock_ = clock;
  dir_.prune(2);
  const std::int64_t t2 = now_ns();
  o.seq = info.seq;
  const double secs = static_cast<double>(t2 - t1) / 1e9;
  log_info("checkpoint ", info.seq, " written to ", dir_.checkpoint_path(info.seq), ": ", info.data_bytes, " B of data in ",
           info.extents.size(), " extent(s); ", capture_summary(st, stop_pages), "; captured in ", (t1 - t0) / 1000, " us, written and synced in ", (t2 - t1) / 1'000'000, " ms (",
           static_cast<long long>(secs > 0 ? static_cast<double>(info.data_bytes) / secs / 1e6 : 0), " MB/s)");
  return o;
}

Checkpointer::Outcome Checkpointer::run_record() {
  Outcome o;
  DeltaRecord r;
  r.base_seq = base_seq_;
  r.seq = log_seq_ + 1;
  CaptureStats st;
  const std::int64_t t0 = now_ns();
  have_base_ = false;  // as in run_checkpoint
  std::vector<std::uint64_t> pending;
  std::vector<Extent> extents;
  std::size_t stop_pages = 0;
  // A page is recorded when it differs from the last capture's copy. While clients run, the page
  // is read once (copy_while_written) and compared as read; stopped, in place.
  const auto take_running = [&](std::uint64_t off) {
    alignas(8) unsigned char page[kDeltaPage];
    copy_while_written(page, cfg_.segment + off, kDeltaPage);
    if (std::memcmp(image_ + off, page, kDeltaPage) == 0) return;
    std::memcpy(image_ + off, page, kDeltaPage);
    r.pages.push_back(off);
  };
  const auto take_stopped = [&](std::uint64_t off) {
    if (std::memcmp(image_ + off, cfg_.segment + off, kDeltaPage) == 0) return;
    std::memcpy(image_ + off, cfg_.segment + off, kDeltaPage);
    r.pages.push_back(off);
  };
  std::string why = stop_world_([&] { return capture_unfrozen(take_running, pending, extents, r.tx_clock); },
                                [&] { capture_frozen(take_stopped, pending, true, extents, r.tx_clock, stop_pages); }, st);
  // A page copied before the stop and written again is taken twice.
  std::sort(r.pages.begin(), r.pages.end());
  r.pages.erase(std::unique(r.pages.begin(), r.pages.end()), r.pages.end());
  log_tracking_change();
  if (!why.empty()) {
    o.error = "could not stop the clients: " + why;
    log_error("log record ", r.seq, " after checkpoint ", base_seq_, " failed: ", o.error);
    return o;
  }
  r.created_ns = wall_ns();
  last_clock_ = r.tx_clock;
  const std::int64_t t1 = now_ns();
  if (r.pages.empty()) {
    // Nothing changed since the last capture: what that one wrote covers the requests.
    have_base_ = true;
    o.seq = log_seq_ == 0 ? base_seq_ : log_seq_;
    return o;
  }
  std::string error;
  if (log_fd_ < 0) log_fd_ = dir_.open_log(base_seq_, error);
  if (log_fd_ >= 0) {
    error = grow_log(log_fd_, log_bytes_ + delta_size(r), log_allocated_, fault_);
    if (error.empty()) error = append_delta(log_fd_, r, image_, fault_, log_bytes_);
    o.error_number = error.empty() ? 0 : errno;
  } else {
    o.error_number = errno;
  }
  if (!error.empty()) {
    o.error = "could not append to " + dir_.log_path(base_seq_) + ": " + error;
    const std::int64_t now = now_ns();
    if (now - failure_logged_ns_ >= 1'000'000'000) {
      log_error("log record ", r.seq, " after checkpoint ", base_seq_, " failed: ", o.error,
                "; the heap in memory is intact, the commits it covered are not durable (the next capture is a full "
                "checkpoint)",
                failures_unlogged_ == 0 ? std::string()
                                        : "; " + std::to_string(failures_unlogged_) + " more failed since the last such line");
      failure_logged_ns_ = now;
      failures_unlogged_ = 0;
    } else {
      ++failures_unlogged_;
    }
    return o;
  }
  have_base_ = true;
  log_seq_ = r.seq;
  o.seq = r.seq;
  log_debug("log record ", r.seq, " after checkpoint ", base_seq_, ": ", r.pages.size(), " page(s); ",
            capture_summary(st, stop_pages), "; captured in ", (t1 - t0) / 1000,
            " us, appended and synced in ", (now_ns() - t1) / 1000, " us");
  return o;
}

}  // namespace colors::server
