// colors-server's log: one line per event on stderr, with a UTC timestamp, the pid and the level.
//
//   2024-05-01T12:00:00.123Z colors-server[1234] info: client 3 (pid 977) attached in slot 0
//
// Each line is emitted with a single write(2), so lines from different threads never interleave.
#pragma once
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

template <typename... Args> void log_error(const Args&... a) { log(LogLevel::kError, a...); }
template <typename... Args> void log_warn(const Args&... a) { log(LogLevel::kWarn, a...); }
template <typename... Args> void log_info(const Args&... a) { log(LogLevel::kInfo, a...); }
template <typename... Args> void log_debug(const Args&... a) { log(LogLevel::kDebug, a...); }

}  // namespace colors::server
