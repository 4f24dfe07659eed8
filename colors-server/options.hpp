// Command-line flags of colors-server, parsed into one struct.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "layout.hpp"
#include "log.hpp"

namespace colors::server {

struct Options {
  std::string name = "colors";         // segment name; the file is <heap_dir>/<name>.heap
  std::string heap_dir;                // empty: detail::default_heap_dir()
  std::string socket;                  // empty until resolved: default_socket_path(name)
  std::size_t heap_size = 0;           // objects space (bytes)
  std::size_t classes_size = 0;        // classes space (bytes)
  std::uintptr_t address = 0;          // fixed segment address
  std::uint32_t gc_threshold = 70;     // percent of the objects space in use that starts a cycle
  std::uint32_t gc_pacing = 400;       // cycle after allocating this percent of the live estimate; 0 = off
  std::size_t gc_min_trigger = std::size_t{16} << 20;  // ... and at least this many bytes
  std::uint32_t gc_threads = 0;        // collector threads
  bool gc_debug = false;               // poison freed memory (and verify the heap after each cycle)
  LogLevel log_level = LogLevel::kInfo;
  std::optional<std::string> allow_group;  // group name or number allowed besides the owner
  std::uint32_t max_clients_per_uid = 0;   // client slots one uid may hold; 0: no limit but the table
  std::size_t client_live_limit = 0;       // live bytes one client may have allocated; 0: no limit
  std::uint32_t stopped_holder_timeout_ms = 5000;  // kill a client stopped holding a heap-wide lock; 0: never
  std::uint32_t held_lock_timeout_ms = 30000;      // kill a client holding the heap or classes lock this long; 0: never
  bool keep_heap = false;              // SIGTERM/SIGINT leave the heap for a successor
  bool fresh_heap = false;             // discard a heap left under the name instead of adopting it
  std::string data_dir;                // checkpoints (colors-server/data_dir.hpp); empty: none
  std::uint32_t checkpoint_interval_s = 300;  // periodic checkpoints with data_dir; 0: none
  detail::DurabilityLevel durability = detail::DurabilityLevel::kNone;  // the log (delta_log.hpp)
  std::uint32_t async_delay_ms = 20;   // --durability async: bound on a commit's time to disk
  bool help = false;

  Options();  // fills the defaults that depend on config.hpp and the machine
};

struct ParseResult {
  std::optional<Options> options;  // set on success
  std::string error;               // set on failure, one line, names the flag
};

// Accepts "--flag value" and "--flag=value". The socket path is resolved here (its default
// depends on --name), so options->socket is never empty on success.
ParseResult parse_options(int argc, char** argv);

// The default of --gc-threads on a machine with `cores` cores: a quarter, rounded, at least 1.
std::uint32_t default_gc_threads(unsigned cores);

// Every flag with its meaning and default.
std::string usage_text();

// "256M" -> 268435456. Accepts a decimal number with an optional K, M or G suffix (powers of
// 1024, case-insensitive, optionally followed by "B" or "iB"). nullopt on malformed or overflow.
std::optional<std::size_t> parse_size(std::string_view s);

}  // namespace colors::server
