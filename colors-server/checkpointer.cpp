#include "checkpointer.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <utility>

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
// A log longer than this and than twice the checkpoint's data is folded into a new checkpoint.
constexpr std::uint64_t kMinLogBytes = std::uint64_t{64} << 20;
}  // namespace

Checkpointer::Checkpointer(DataDir& dir, Config config, StopWorld stop_world, int wake_fd)
    : dir_(dir), cfg_(std::move(config)), stop_world_(std::move(stop_world)), wake_fd_(wake_fd) {
  void* p = ::mmap(nullptr, cfg_.segment_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error(std::string("cannot map the checkpoint buffer: ") + std::strerror(errno));
  image_ = static_cast<unsigned char*>(p);
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
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Checkpointer::request_checkpoint(std::uint64_t token) {
  {
    std::lock_guard<std::mutex> g(mu_);
    checkpoints_.push_back(token);
  }
  cv_.notify_all();
}

void Checkpointer::request_sync(std::uint64_t token) {
  {
    std::lock_guard<std::mutex> g(mu_);
    syncs_.push_back(token);
  }
  cv_.notify_all();
}

std::vector<Checkpointer::Outcome> Checkpointer::take_outcomes() {
  std::lock_guard<std::mutex> g(mu_);
  return std::exchange(outcomes_, {});
}

bool Checkpointer::log_too_long() const { return log_bytes_ > std::max(kMinLogBytes, 2 * base_bytes_); }

void Checkpointer::loop() {
  std::int64_t next_periodic = cfg_.interval_ns > 0 ? now_ns() + cfg_.interval_ns : -1;
  const bool async = cfg_.durability == detail::DurabilityLevel::kAsync;
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    if (stopping_) return;
    const std::int64_t now = now_ns();
    const bool periodic = next_periodic >= 0 && now >= next_periodic;
    // kAsync: a record whenever a transaction committed since the last capture, at most every
    // async_delay_ns (a commit is on disk within about twice that).
    const bool async_due = async && cfg_.clock() != last_clock_;
    if (checkpoints_.empty() && syncs_.empty() && !periodic && !async_due) {
      std::int64_t wait = async ? cfg_.async_delay_ns : -1;
      if (next_periodic >= 0 && (wait < 0 || next_periodic - now < wait)) wait = next_periodic - now;
      if (wait < 0)
        cv_.wait(lk);
      else
        cv_.wait_for(lk, std::chrono::nanoseconds(wait));
      continue;
    }
    std::vector<std::uint64_t> served = std::exchange(checkpoints_, {});
    const bool full = !served.empty() || periodic || !have_base_ || log_too_long();
    for (std::uint64_t t : std::exchange(syncs_, {})) served.push_back(t);
    lk.unlock();
    Outcome o = full ? run_checkpoint() : run_record();
    if (full && cfg_.interval_ns > 0) next_periodic = now_ns() + cfg_.interval_ns;
    lk.lock();
    for (std::uint64_t token : served) {
      Outcome each = o;
      each.token = token;
      outcomes_.push_back(each);
    }
    if (!served.empty()) {
      std::uint64_t one = 1;
      [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
    }
    if (async && !full) {
      // Paces the records: at most one per async_delay_ns.
      cv_.wait_for(lk, std::chrono::nanoseconds(cfg_.async_delay_ns), [this] { return stopping_ || !checkpoints_.empty(); });
    }
  }
}

Checkpointer::Outcome Checkpointer::run_checkpoint() {
  Outcome o;
  CheckpointInfo info;
  info.seq = dir_.next_seq();
  CaptureStats st;
  const std::int64_t t0 = now_ns();
  // Page faults are taken before the stop, not during it: the server maps the pages clients wrote
  // and the image gets its own (pages that gained data meanwhile fault inside the stop).
  for (const Extent& e : data_extents(cfg_.segment_fd, cfg_.segment_size)) {
    if (::madvise(image_ + e.offset, e.length, MADV_POPULATE_WRITE) != 0) break;  // before Linux 5.14
    (void)::madvise(const_cast<unsigned char*>(cfg_.segment) + e.offset, e.length, MADV_POPULATE_READ);
  }
  std::uint64_t clock = 0;
  std::string why = stop_world_(
      [&] {
        have_base_ = false;  // image_ changes now; true again only once the checkpoint is on disk
        info.extents = data_extents(cfg_.segment_fd, cfg_.segment_size);
        for (const Extent& e : info.extents) std::memcpy(image_ + e.offset, cfg_.segment + e.offset, e.length);
        clock = cfg_.clock();
      },
      st);
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
           info.extents.size(), " extent(s); ", st.processes, " client process(es) stopped for ", st.stop_ns / 1000,
           " us; captured in ", (t1 - t0) / 1000, " us, written and synced in ", (t2 - t1) / 1'000'000, " ms (",
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
  std::string why = stop_world_(
      [&] {
        have_base_ = false;  // as in run_checkpoint
        for (const Extent& e : data_extents(cfg_.segment_fd, cfg_.segment_size)) {
          for (std::uint64_t off = e.offset; off < e.offset + e.length; off += kDeltaPage) {
            if (std::memcmp(image_ + off, cfg_.segment + off, kDeltaPage) == 0) continue;
            std::memcpy(image_ + off, cfg_.segment + off, kDeltaPage);
            r.pages.push_back(off);
          }
        }
        r.tx_clock = cfg_.clock();
      },
      st);
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
  log_debug("log record ", r.seq, " after checkpoint ", base_seq_, ": ", r.pages.size(), " page(s); ", st.processes,
            " client process(es) stopped for ", st.stop_ns / 1000, " us; captured in ", (t1 - t0) / 1000,
            " us, appended and synced in ", (now_ns() - t1) / 1000, " us");
  return o;
}

}  // namespace colors::server
