#include "checkpointer.hpp"

#include <sys/mman.h>
#include <unistd.h>

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
}  // namespace

Checkpointer::Checkpointer(DataDir& dir, std::size_t segment_size, std::int64_t interval_ns, Capture capture, int wake_fd)
    : dir_(dir), size_(segment_size), interval_ns_(interval_ns), capture_(std::move(capture)), wake_fd_(wake_fd) {
  void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error(std::string("cannot map the checkpoint buffer: ") + std::strerror(errno));
  image_ = static_cast<unsigned char*>(p);
  if (const char* v = std::getenv("COLORS_CHECKPOINT_FAULT_ENOSPC_AFTER"); v != nullptr && *v != 0)
    fault_.enospc_after = std::strtoull(v, nullptr, 10);
}

Checkpointer::~Checkpointer() {
  stop();
  if (image_ != nullptr) ::munmap(image_, size_);
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

void Checkpointer::request(std::uint64_t token) {
  {
    std::lock_guard<std::mutex> g(mu_);
    pending_.push_back(token);
  }
  cv_.notify_all();
}

std::vector<Checkpointer::Outcome> Checkpointer::take_outcomes() {
  std::lock_guard<std::mutex> g(mu_);
  return std::exchange(outcomes_, {});
}

void Checkpointer::loop() {
  std::int64_t next = interval_ns_ > 0 ? now_ns() + interval_ns_ : -1;
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    if (stopping_) return;
    const bool due = next >= 0 && now_ns() >= next;
    if (pending_.empty() && !due) {
      if (next < 0)
        cv_.wait(lk);
      else
        cv_.wait_for(lk, std::chrono::nanoseconds(next - now_ns()));
      continue;
    }
    std::vector<std::uint64_t> serving = std::exchange(pending_, {});
    lk.unlock();
    Outcome o = run_once();
    if (interval_ns_ > 0) next = now_ns() + interval_ns_;
    lk.lock();
    for (std::uint64_t token : serving) {
      Outcome each = o;
      each.token = token;
      outcomes_.push_back(each);
    }
    if (!serving.empty()) {
      std::uint64_t one = 1;
      [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
    }
  }
}

Checkpointer::Outcome Checkpointer::run_once() {
  Outcome o;
  CheckpointInfo info;
  info.seq = dir_.next_seq();
  CaptureStats st;
  const std::int64_t t0 = now_ns();
  if (std::string why = capture_(image_, info, st); !why.empty()) {
    o.error = "could not capture the heap: " + why;
    log_error("checkpoint ", info.seq, " failed: ", o.error);
    return o;
  }
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

}  // namespace colors::server
