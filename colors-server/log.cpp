#include "log.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <vector>

namespace colors::server {

namespace {
// Relaxed: the level is a filter, a stale read only logs or drops one extra line.
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
}  // namespace

std::optional<LogLevel> parse_log_level(std::string_view s) {
  if (s == "error") return LogLevel::kError;
  if (s == "warn" || s == "warning") return LogLevel::kWarn;
  if (s == "info") return LogLevel::kInfo;
  if (s == "debug") return LogLevel::kDebug;
  return std::nullopt;
}

const char* log_level_name(LogLevel l) {
  switch (l) {
    case LogLevel::kError: return "error";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kInfo: return "info";
    case LogLevel::kDebug: return "debug";
  }
  return "?";
}

void set_log_level(LogLevel l) { g_level.store(static_cast<int>(l), std::memory_order_relaxed); }

bool log_enabled(LogLevel l) { return static_cast<int>(l) <= g_level.load(std::memory_order_relaxed); }

void log_line(LogLevel l, std::string_view message) {
  if (!log_enabled(l)) return;
  auto now = std::chrono::system_clock::now();
  std::time_t secs = std::chrono::system_clock::to_time_t(now);
  auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char stamp[64];
  std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(millis));
  std::string line;
  line.reserve(message.size() + 64);
  line += stamp;
  line += " colors-server[";
  line += std::to_string(::getpid());
  line += "] ";
  line += log_level_name(l);
  line += ": ";
  line += message;
  line += '\n';
  // One write per line (see log.hpp); retry only what a short write left.
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // nowhere left to report a broken stderr
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

namespace {
std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
// Every limiter, for flush_suppressed_logs. Limiters are static, registered once, never removed.
std::mutex g_limiters_mu;
std::vector<LogLimiter*>& limiters() {
  static auto* v = new std::vector<LogLimiter*>;
  return *v;
}
}  // namespace

LogLimiter::LogLimiter(const char* kind) : kind_(kind) {
  std::lock_guard<std::mutex> g(g_limiters_mu);
  limiters().push_back(this);
}

bool LogLimiter::admit(std::uint64_t& suppressed) {
  std::lock_guard<std::mutex> g(mu_);
  std::int64_t now = steady_ns();
  if (now - window_start_ns_ >= kWindowNs) {
    window_start_ns_ = now;
    in_window_ = 0;
  }
  if (in_window_ >= kBurst) {
    ++suppressed_;
    return false;
  }
  ++in_window_;
  suppressed = suppressed_;
  suppressed_ = 0;
  return true;
}

void LogLimiter::flush(LogLevel level) {
  std::uint64_t n = 0;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (suppressed_ == 0 || steady_ns() - window_start_ns_ < kWindowNs) return;
    n = suppressed_;
    suppressed_ = 0;
  }
  log(level, n, " lines like '", kind_, "' suppressed in the last second (more than ", kBurst, " per second)");
}

void flush_suppressed_logs(LogLevel level) {
  std::lock_guard<std::mutex> g(g_limiters_mu);
  for (LogLimiter* l : limiters()) l->flush(level);
}

}  // namespace colors::server
