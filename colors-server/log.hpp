// colors-server's log: one line per event on stderr, with a UTC timestamp, the pid and the level.
//
//   2024-05-01T12:00:00.123Z colors-server[1234] info: client 3 (pid 977) attached in slot 0
//
// Each line is emitted with a single write(2), so lines from different threads never interleave.
#pragma once
#include <cstdint>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

namespace colors::server {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

std::optional<LogLevel> parse_log_level(std::string_view s);
const char* log_level_name(LogLevel l);

// Lines above this level are dropped. Default kInfo. Set once at startup, before any thread starts.
void set_log_level(LogLevel l);
bool log_enabled(LogLevel l);
void log_line(LogLevel l, std::string_view message);

template <typename... Args>
void log(LogLevel l, const Args&... args) {
  if (!log_enabled(l)) return;
  std::ostringstream s;
  (s << ... << args);
  log_line(l, s.str());
}

// Rate limit for one kind of line (one per call site that peers can trigger at will: a flood of
// connections must not fill the disk with log). At most kBurst lines pass per kWindowNs; the
// others are counted, and the count is reported by the next line of the kind that passes, or
// by flush_suppressed_logs() once the window is over.
// Thread-safe (a mutex per limiter); limiters must have static storage duration.
class LogLimiter {
 public:
  static constexpr std::uint64_t kBurst = 10;
  static constexpr std::int64_t kWindowNs = 1'000'000'000;

  explicit LogLimiter(const char* kind);
  // True when a line may be written now; then `suppressed` is how many were dropped before it.
  bool admit(std::uint64_t& suppressed);
  // Writes "N lines like '<kind>' suppressed" when the window passed with lines dropped.
  void flush(LogLevel level);

 private:
  const char* kind_;
  std::mutex mu_;
  std::int64_t window_start_ns_ = 0;  // GUARDED_BY(mu_)
  std::uint64_t in_window_ = 0;       // GUARDED_BY(mu_)
  std::uint64_t suppressed_ = 0;      // GUARDED_BY(mu_)
};

template <typename... Args>
void log_limited(LogLimiter& limiter, LogLevel l, const Args&... args) {
  if (!log_enabled(l)) return;
  std::uint64_t suppressed = 0;
  if (!limiter.admit(suppressed)) return;
  if (suppressed == 0) return log(l, args...);
  log(l, args..., " (", suppressed, " similar lines suppressed before this one)");
}

// Reports what every limiter suppressed in a window that is over. The event loop calls it.
void flush_suppressed_logs(LogLevel level);

template <typename... Args> void log_error(const Args&... a) { log(LogLevel::kError, a...); }
template <typename... Args> void log_warn(const Args&... a) { log(LogLevel::kWarn, a...); }
template <typename... Args> void log_info(const Args&... a) { log(LogLevel::kInfo, a...); }
template <typename... Args> void log_debug(const Args&... a) { log(LogLevel::kDebug, a...); }

}  // namespace colors::server
