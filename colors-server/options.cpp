#include "options.hpp"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <limits>
#include <thread>

#include "colors/config.hpp"
#include "segment.hpp"
#include "server_link.hpp"
#include "format.hpp"
#include "listener.hpp"

namespace colors::server {

using detail::hex;

namespace {

std::optional<std::uint64_t> parse_uint(std::string_view s, int base) {
  std::uint64_t v = 0;
  if (s.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// Shm object names may not contain '/', and the name also appears in file names and logs.
bool valid_name(std::string_view s) {
  if (s.empty() || s.size() > 200) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  return s != "." && s != "..";
}

}  // namespace

Options::Options()
    : heap_size(kDefaultHeapSize),
      classes_size(kDefaultClassesSize),
      address(kDefaultAddress),
      gc_threads(default_gc_threads(std::thread::hardware_concurrency())) {}

// A quarter of the cores (rounded), at least one, as Go's background collector and the JVM's
// concurrent GC threads: a cycle runs beside clients that keep their cores busy (a collector on
// every core would take each client's core for the length of a cycle), and its passes are bound
// by memory more than by cores. Measured on 2 vCPUs (rpc-bench's Python -> Java 1024-tree calls,
// 1 vs 2 threads, five interleaved pairs): cycles of 10-16 ms with 1 thread, 12 ms with 2; calls
// 0.93-1.06x as long with 2 threads, i.e. within the noise here.
std::uint32_t default_gc_threads(unsigned cores) { return std::max(1u, (cores + 2) / 4); }

std::optional<std::size_t> parse_size(std::string_view s) {
  std::size_t digits = 0;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
  auto number = parse_uint(s.substr(0, digits), 10);
  if (!number) return std::nullopt;
  std::string suffix;
  for (char c : s.substr(digits)) suffix += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  unsigned shift = 0;
  if (!suffix.empty()) {
    switch (suffix[0]) {
      case 'K': shift = 10; break;
      case 'M': shift = 20; break;
      case 'G': shift = 30; break;
      case 'B': shift = 0; break;
      default: return std::nullopt;
    }
    std::string_view rest = std::string_view(suffix).substr(suffix[0] == 'B' ? 0 : 1);
    if (!(rest.empty() || rest == "B" || (shift != 0 && rest == "IB"))) return std::nullopt;
  }
  if (*number > (std::numeric_limits<std::size_t>::max() >> shift)) return std::nullopt;
  return static_cast<std::size_t>(*number << shift);
}

std::string usage_text() {
  Options d;
  std::string text =
      "Usage: colors-server [flags]\n"
      "\n"
      "Creates the colors shared heap (a shared-memory segment mapped at a fixed address), accepts\n"
      "clients on a Unix socket, reclaims what dead clients leave behind, and removes the segment\n"
      "on SIGTERM/SIGINT (unless --keep-heap). A heap left by a server that died is adopted: checked, then\n"
      "served again with its objects and attached clients. Prints 'colors-server ready: ...' on stdout once clients may connect.\n"
      "\n"
      "Flags (\"--flag value\" or \"--flag=value\"):\n"
      "  --name NAME          segment name; the segment is the file HEAP_DIR/NAME.heap (default: colors)\n"
      "  --heap-dir DIR       directory of the segment and its lock, created 0700; it must belong to the\n"
      "                       server's user (default: /dev/shm/colors-EUID; now: " +
      detail::default_heap_dir() +
      ")\n"
      "  --socket PATH        Unix socket clients connect to (default: $XDG_RUNTIME_DIR/colors/NAME.sock,\n"
      "                       or /tmp/colors-UID/NAME.sock without XDG_RUNTIME_DIR; now: " +
      detail::default_socket_path(d.name) +
      ")\n"
      "  --heap-size SIZE     objects space, K/M/G suffixes accepted (default: 256M)\n"
      "  --classes-size SIZE  classes space for classes, repositories and channels (default: 64M)\n"
      "  --address HEX        fixed address of the segment in every process (default: " +
      hex(d.address) +
      ")\n"
      "  --gc-threshold PCT   start a collection when this percent of the heap is in use (default: 70)\n"
      "  --gc-pacing PCT      also start one when the bytes allocated since the last reach PCT percent of\n"
      "                       the live data it estimated (as Go's GOGC); 0 turns pacing off (default: 400)\n"
      "  --gc-min-trigger SIZE\n"
      "                       no paced collection before SIZE bytes were allocated (default: 16M)\n"
      "  --gc-threads N       collector threads (default: a quarter of the cores, at least 1; here " +
      std::to_string(d.gc_threads) +
      ")\n"
      "  --gc-debug           debug mode: fill freed memory with 0xdeadbeef and run the heap verifier\n"
      "                       after every collection, logging what it finds (default: off)\n"
      "  --keep-heap          on SIGTERM/SIGINT keep the heap file for a successor server, which adopts\n"
      "                       it, and let attached clients wait for that successor (default: off: the\n"
      "                       heap is removed and clients get a server-gone error)\n"
      "  --fresh-heap         discard a heap a server that is gone left under this name and start with an\n"
      "                       empty one (default: off: adopt it, after checking it)\n"
      "  --data-dir DIR       keep checkpoints of the heap in DIR (created 0700): one every\n"
      "                       --checkpoint-interval, one when a client asks, one at a clean stop; a start\n"
      "                       that finds no heap (after a reboot) restores the newest valid one\n"
      "                       (default: none: the heap lives in memory only)\n"
      "  --checkpoint-interval SECONDS\n"
      "                       seconds between periodic checkpoints with --data-dir; 0: only on demand\n"
      "                       and at shutdown (default: 300)\n"
      "  --durability LEVEL   with --data-dir, what a transaction's commit promises (default: none):\n"
      "                       full: it returns once a log record covering it is on disk (group commit);\n"
      "                       async: a log record covers it within about twice --async-delay;\n"
      "                       none: only checkpoints\n"
      "  --async-delay MS     --durability async: milliseconds between log records (default: 20)\n"
      "  --log-level LEVEL    error, warn, info or debug (default: info)\n"
      "  --allow-group GROUP  also accept clients whose primary group is GROUP (name or number); the\n"
      "                       socket directory becomes 0750 and the socket 0660, owned by GROUP\n"
      "                       (default: none: only the server's own user, dir 0700, socket 0600)\n"
      "  --max-clients-per-uid N\n"
      "                       client slots one user may hold at once (default: 0, no limit but the\n"
      "                       table's " + std::to_string(kMaxClients) + ")\n"
      "  --client-live-limit SIZE\n"
      "                       live objects one client may have allocated, as the last collection counted\n"
      "                       them plus what it allocated since; past it its allocations fail with an\n"
      "                       out-of-memory error naming the largest holders (default: 0, no limit)\n"
      "  --stopped-holder-timeout MS\n"
      "                       kill (SIGKILL) a client process that stays stopped (SIGSTOP, Ctrl-Z) this\n"
      "                       long while it holds a lock every client needs (the heap, classes or\n"
      "                       collector lock), so the others go on; 0: never (default: 5000)\n"
      "  --held-lock-timeout MS\n"
      "                       kill (SIGKILL) a client process one of whose threads holds the heap or the\n"
      "                       classes lock this long without letting it go, running or not (a deadlock,\n"
      "                       a hang), so the others go on; 0: never (default: 30000)\n"
      "  --help               print this text and exit\n"
      "\n"
      "Clients find the socket through the same default, or the COLORS_SOCKET environment variable.\n";
  return text;
}

ParseResult parse_options(int argc, char** argv) {
  ParseResult r;
  Options o;
  auto fail = [&r](std::string msg) {
    r.error = std::move(msg);
    return r;
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      o.help = true;
      continue;
    }
    if (arg == "--gc-debug") {
      o.gc_debug = true;
      continue;
    }
    if (arg == "--keep-heap") {
      o.keep_heap = true;
      continue;
    }
    if (arg == "--fresh-heap") {
      o.fresh_heap = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) return fail("unexpected argument '" + arg + "'");
    std::string flag = arg, value;
    bool has_value = false;
    if (auto eq = arg.find('='); eq != std::string::npos) {
      flag = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    auto need_value = [&]() -> bool {
      if (has_value) return true;
      if (i + 1 >= argc) return false;
      value = argv[++i];
      return true;
    };
    static const char* const kKnown[] = {"--name",       "--socket",      "--heap-size", "--classes-size",
                                         "--address",    "--gc-threshold", "--gc-threads", "--log-level",
                                         "--allow-group", "--gc-pacing",   "--gc-min-trigger",
                                         "--heap-dir",    "--max-clients-per-uid", "--client-live-limit",
                                         "--data-dir",    "--checkpoint-interval", "--durability",
                                         "--async-delay", "--stopped-holder-timeout", "--held-lock-timeout"};
    bool known = false;
    for (const char* k : kKnown) known = known || flag == k;
    if (!known) return fail("unknown flag '" + flag + "' (see --help)");
    if (!need_value()) return fail("flag " + flag + " needs a value");

    if (flag == "--name") {
      if (!valid_name(value))
        return fail("--name '" + value + "': use 1-200 characters among letters, digits, '-', '_' and '.'");
      o.name = value;
    } else if (flag == "--socket") {
      if (value.empty()) return fail("--socket needs a non-empty path");
      o.socket = value;
    } else if (flag == "--heap-size" || flag == "--classes-size") {
      auto v = parse_size(value);
      if (!v || *v == 0) return fail(flag + " '" + value + "': expected a size like 8M, 256M or 1G");
      // The segment must fit the fixed address range below the 128 TiB of user space; a larger
      // size also wrapped the segment's total size and left a half-formatted heap behind.
      if (*v > (std::size_t{1} << 45)) return fail(flag + " '" + value + "': at most 32768G");
      (flag == "--heap-size" ? o.heap_size : o.classes_size) = *v;
    } else if (flag == "--address") {
      std::string_view h = value;
      if (h.rfind("0x", 0) == 0 || h.rfind("0X", 0) == 0) h.remove_prefix(2);
      auto v = parse_uint(h, 16);
      if (!v || *v == 0 || *v % (1 << 16) != 0)
        return fail("--address '" + value + "': expected a non-zero, 64 KiB aligned hex address like 0x600000000000");
      o.address = static_cast<std::uintptr_t>(*v);
    } else if (flag == "--gc-threshold") {
      auto v = parse_uint(value, 10);
      if (!v || *v < 1 || *v > 100) return fail("--gc-threshold '" + value + "': expected a percentage 1-100");
      o.gc_threshold = static_cast<std::uint32_t>(*v);
    } else if (flag == "--gc-pacing") {
      auto v = parse_uint(value, 10);
      if (!v || *v > 10000) return fail("--gc-pacing '" + value + "': expected a percentage 0-10000 (0: off)");
      o.gc_pacing = static_cast<std::uint32_t>(*v);
    } else if (flag == "--gc-min-trigger") {
      auto v = parse_size(value);
      if (!v || *v == 0) return fail("--gc-min-trigger '" + value + "': expected a size like 4M, 16M or 1G");
      o.gc_min_trigger = *v;
    } else if (flag == "--gc-threads") {
      auto v = parse_uint(value, 10);
      if (!v || *v < 1 || *v > 1024) return fail("--gc-threads '" + value + "': expected a number 1-1024");
      o.gc_threads = static_cast<std::uint32_t>(*v);
    } else if (flag == "--log-level") {
      auto l = parse_log_level(value);
      if (!l) return fail("--log-level '" + value + "': expected error, warn, info or debug");
      o.log_level = *l;
    } else if (flag == "--heap-dir") {
      if (value.empty() || value[0] != '/') return fail("--heap-dir '" + value + "': expected an absolute directory path");
      o.heap_dir = value;
    } else if (flag == "--max-clients-per-uid") {
      auto v = parse_uint(value, 10);
      if (!v || *v > kMaxClients)
        return fail("--max-clients-per-uid '" + value + "': expected a number 0-" + std::to_string(kMaxClients) +
                    " (0: no limit)");
      o.max_clients_per_uid = static_cast<std::uint32_t>(*v);
    } else if (flag == "--client-live-limit") {
      auto v = parse_size(value);
      if (!v) return fail("--client-live-limit '" + value + "': expected a size like 64M or 1G (0: no limit)");
      o.client_live_limit = *v;
    } else if (flag == "--stopped-holder-timeout" || flag == "--held-lock-timeout") {
      auto v = parse_uint(value, 10);
      if (!v || *v > 3'600'000)
        return fail(flag + " '" + value + "': expected milliseconds, at most 3600000 (0: never)");
      (flag == "--held-lock-timeout" ? o.held_lock_timeout_ms : o.stopped_holder_timeout_ms) =
          static_cast<std::uint32_t>(*v);
    } else if (flag == "--data-dir") {
      if (value.empty() || value[0] != '/') return fail("--data-dir '" + value + "': expected an absolute directory path");
      o.data_dir = value;
    } else if (flag == "--checkpoint-interval") {
      auto v = parse_uint(value, 10);
      if (!v || *v > 365ull * 24 * 3600)
        return fail("--checkpoint-interval '" + value + "': expected a number of seconds (0: only on demand and at shutdown)");
      o.checkpoint_interval_s = static_cast<std::uint32_t>(*v);
    } else if (flag == "--durability") {
      if (value == "none")
        o.durability = detail::DurabilityLevel::kNone;
      else if (value == "async")
        o.durability = detail::DurabilityLevel::kAsync;
      else if (value == "full")
        o.durability = detail::DurabilityLevel::kFull;
      else
        return fail("--durability '" + value + "': expected full, async or none");
    } else if (flag == "--async-delay") {
      auto v = parse_uint(value, 10);
      if (!v || *v < 1 || *v > 60'000) return fail("--async-delay '" + value + "': expected milliseconds 1-60000");
      o.async_delay_ms = static_cast<std::uint32_t>(*v);
    } else if (flag == "--allow-group") {
      if (value.empty()) return fail("--allow-group needs a group name or number");
      std::string error;
      if (!resolve_group(value, error)) return fail(error);  // a bad flag (exit 2), not a failed start
      o.allow_group = value;
    }
  }
  if (o.durability != detail::DurabilityLevel::kNone && o.data_dir.empty())
    return fail("--durability needs --data-dir (where the log is kept)");
  if (o.socket.empty()) o.socket = detail::default_socket_path(o.name);
  r.options = std::move(o);
  return r;
}

}  // namespace colors::server
