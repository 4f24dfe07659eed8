// Integration tests of colors-server and the client side of the attach protocol: each test case
// starts its own server process (unique name, socket and address) and talks to it through
// server_link / protocol, like a client library does.
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>

#include "colors/config.hpp"
#include "colors/errors.hpp"
#include "futex.hpp"
#include "layout.hpp"
#include "options.hpp"
#include "protocol.hpp"
#include "segment.hpp"
#include "server_link.hpp"
#include "server_process.hpp"
#include "server_test_util.hpp"

using namespace colors;
using namespace colors::detail;
using colors::test::eventually;
using colors::test::LeftoverCleaner;
using colors::test::path_exists;
using colors::test::ServerConfig;
using colors::test::ServerProcess;
using colors::test::TempDir;
using namespace colors::test;


TEST_CASE("socket path resolution", "[server_link]") {
  ::unsetenv("COLORS_SOCKET");
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  std::string saved_xdg = xdg ? xdg : "";
  ::setenv("XDG_RUNTIME_DIR", "/run/user/4242", 1);
  CHECK(default_socket_path("x") == "/run/user/4242/colors/x.sock");
  CHECK(default_socket_path() == "/run/user/4242/colors/colors.sock");
  ::unsetenv("XDG_RUNTIME_DIR");
  CHECK(default_socket_path("x") == "/tmp/colors-" + std::to_string(::getuid()) + "/x.sock");
  CHECK(resolve_socket_path("/a/b.sock") == "/a/b.sock");
  CHECK(resolve_socket_path("") == default_socket_path());
  ::setenv("COLORS_SOCKET", "/env/c.sock", 1);
  CHECK(resolve_socket_path("") == "/env/c.sock");
  CHECK(resolve_socket_path("/a/b.sock") == "/a/b.sock");
  ::unsetenv("COLORS_SOCKET");
  if (!saved_xdg.empty()) ::setenv("XDG_RUNTIME_DIR", saved_xdg.c_str(), 1);
}

TEST_CASE("wire format round trips", "[protocol]") {
  Hello h{kWireMagic, 3, 4, 12345};
  h.mode = HelloMode::kReattach;
  h.slot = 17;
  h.client_id = 99;
  h.heap_id = 0x0123456789abcdefULL;
  Hello h2 = decode_hello(encode_hello(h).data());
  CHECK(h2.magic == kWireMagic);
  CHECK(h2.protocol_version == 3);
  CHECK(h2.layout_version == 4);
  CHECK(h2.pid == 12345);
  CHECK(h2.mode == HelloMode::kAttach);  // the frozen part alone
  decode_hello_extension(encode_hello(h).data() + kHelloSize, h2);
  CHECK(h2.mode == HelloMode::kReattach);
  CHECK(h2.slot == 17);
  CHECK(h2.client_id == 99);
  CHECK(h2.heap_id == 0x0123456789abcdefULL);
  auto b = encode_hello(h);
  CHECK(b[0] == 0x43);  // little-endian "CLRS"
  CHECK(b[4] == 3);

  AttachReply r;
  r.status = AttachStatus::kFull;
  r.protocol_version = 1;
  r.layout_version = 2;
  r.client_id = 7;
  r.slot = 9;
  r.address = 0x610000000000ULL;
  r.size = 1ULL << 33;
  r.segment_name = "abc";
  r.message = "why not";
  auto rb = encode_reply(r);
  REQUIRE(rb.size() == kReplyFixedSize + 3 + 7);
  AttachReply r2;
  std::uint32_t nl = 0, ml = 0;
  REQUIRE(decode_reply_fixed(rb.data(), r2, nl, ml));
  CHECK(r2.status == AttachStatus::kFull);
  CHECK(r2.client_id == 7);
  CHECK(r2.slot == 9);
  CHECK(r2.address == 0x610000000000ULL);
  CHECK(r2.size == (1ULL << 33));
  CHECK(nl == 3);
  CHECK(ml == 7);

  Request q{kWireMagic, RequestType::kPing, 0x1122334455667788ULL};
  Request q2 = decode_request(encode_request(q).data());
  CHECK(q2.type == RequestType::kPing);
  CHECK(q2.arg == 0x1122334455667788ULL);
}

TEST_CASE("size and flag parsing", "[options]") {
  using server::parse_size;
  CHECK(parse_size("8M") == std::size_t{8} << 20);
  CHECK(parse_size("256m") == std::size_t{256} << 20);
  CHECK(parse_size("4K") == std::size_t{4} << 10);
  CHECK(parse_size("1G") == std::size_t{1} << 30);
  CHECK(parse_size("2GiB") == std::size_t{2} << 30);
  CHECK(parse_size("3MB") == std::size_t{3} << 20);
  CHECK(parse_size("4096") == 4096);
  CHECK(!parse_size(""));
  CHECK(!parse_size("M"));
  CHECK(!parse_size("12X"));
  CHECK(!parse_size("-1M"));
  CHECK(!parse_size("99999999999999999999G"));

  std::vector<std::string> a = {"colors-server", "--name=abc", "--heap-size", "16M", "--address", "0x610000000000",
                                "--gc-threshold", "55", "--gc-threads", "3", "--log-level", "debug",
                                "--gc-pacing=250", "--gc-min-trigger", "4M"};
  std::vector<char*> argv;
  for (auto& s : a) argv.push_back(s.data());
  auto r = server::parse_options(static_cast<int>(argv.size()), argv.data());
  REQUIRE(r.options);
  CHECK(r.options->name == "abc");
  CHECK(r.options->heap_size == std::size_t{16} << 20);
  CHECK(r.options->classes_size == kDefaultClassesSize);
  CHECK(r.options->address == 0x610000000000ULL);
  CHECK(r.options->gc_threshold == 55);
  CHECK(r.options->gc_threads == 3);
  CHECK(server::default_gc_threads(0) == 1);  // hardware_concurrency() may not know
  CHECK(server::default_gc_threads(2) == 1);
  CHECK(server::default_gc_threads(8) == 2);
  CHECK(server::default_gc_threads(64) == 16);
  CHECK(r.options->gc_pacing == 250);
  CHECK(r.options->gc_min_trigger == std::size_t{4} << 20);
  CHECK(r.options->log_level == server::LogLevel::kDebug);
  CHECK(r.options->socket == default_socket_path("abc"));

  auto parse = [](std::vector<std::string> args) {
    args.insert(args.begin(), "colors-server");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    return server::parse_options(static_cast<int>(argv.size()), argv.data());
  };
  auto rb = parse({"--gc-threshold", "101"});
  CHECK(!rb.options);
  CHECK(rb.error.find("--gc-threshold") != std::string::npos);

  // A size beyond the address range wrapped the segment's total: a start that failed late and left
  // a half-formatted heap, which the next start refused as damaged.
  for (auto [flag, value] : {std::pair{"--gc-pacing", "-5"}, {"--gc-pacing", "many"}, {"--gc-min-trigger", "0"},
                             {"--gc-min-trigger", "12X"}, {"--classes-size", "18446744073709551600"},
                             {"--heap-size", "32769G"}, {"--classes-size", "40000G"}}) {
    auto rp = parse({flag, value});
    CHECK(!rp.options);
    CHECK(rp.error.find(flag) != std::string::npos);
  }
  // An unknown group is a bad flag (exit 2), found while parsing, not a start that fails (exit 1).
  auto rg = parse({"--allow-group", "no-such-group-colors-test"});
  CHECK(!rg.options);
  CHECK(rg.error.find("--allow-group") != std::string::npos);

  auto ro = parse({"--gc-pacing", "0"});
  REQUIRE(ro.options);
  CHECK(ro.options->gc_pacing == 0);
  CHECK(ro.options->held_lock_timeout_ms == 30000);  // the default

  auto rh = parse({"--held-lock-timeout", "250"});
  REQUIRE(rh.options);
  CHECK(rh.options->held_lock_timeout_ms == 250);
  for (const char* bad : {"-1", "soon", "3600001"}) {
    auto rp = parse({"--held-lock-timeout", bad});
    CHECK(!rp.options);
    CHECK(rp.error.find("--held-lock-timeout") != std::string::npos);
  }
}

TEST_CASE("colors-server --help lists every flag with its default", "[server]") {
  TempDir dir;
  ServerConfig cfg = ServerConfig::fresh(dir.path());
  ServerProcess p(cfg, {"--help"}, dir.path() + "/err.log");
  std::string out = p.read_stdout_to_eof();
  CHECK(p.wait_exit() == 0);
  for (const char* flag : {"--name", "--socket", "--heap-size", "--classes-size", "--address", "--gc-threshold",
                           "--gc-threads", "--log-level", "--allow-group", "--gc-pacing", "--gc-min-trigger",
                           "--stopped-holder-timeout", "--held-lock-timeout", "--help"})
    CHECK(out.find(flag) != std::string::npos);
  CHECK(out.find("default: 256M") != std::string::npos);
  CHECK(out.find("default: 64M") != std::string::npos);
  char addr[32];
  std::snprintf(addr, sizeof addr, "0x%lx", static_cast<unsigned long>(colors::kDefaultAddress));
  CHECK(out.find(addr) != std::string::npos);
  CHECK(out.find("default: 70") != std::string::npos);
}

TEST_CASE("handshake attaches a client to a slot of the segment", "[server]") {
  Running r({"--gc-threshold", "55"});
  CHECK(r.server->ready_line().find("socket=" + r.cfg.socket) != std::string::npos);
  CHECK(r.server->ready_line().find("segment=" + r.cfg.shm_path()) != std::string::npos);
  CHECK(r.server->ready_line().find("address=" + r.cfg.address_hex()) != std::string::npos);
  CHECK(r.server->ready_line().find("heap=8388608") != std::string::npos);

  // Default permissions: socket 0600, segment 0600.
  struct stat st {};
  REQUIRE(::stat(r.cfg.socket.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  REQUIRE(::stat(r.cfg.shm_path().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);

  ServerLink a = connect_to_server(r.cfg.socket);
  CHECK(a.client_id != 0);
  CHECK(a.segment_name == r.cfg.name);
  CHECK(a.address == r.cfg.address);
  CHECK(a.size > (std::size_t{12} << 20));
  CHECK(a.socket_path == r.cfg.socket);
  CHECK(server_link_alive(a.fd));
  CHECK(ping_server(a.fd));
  CHECK(ping_server(a.fd));

  // COLORS_SOCKET is used when no path is given.
  ::setenv("COLORS_SOCKET", r.cfg.socket.c_str(), 1);
  ServerLink b = connect_to_server("");
  ::unsetenv("COLORS_SOCKET");
  CHECK(b.client_id != 0);
  CHECK(b.client_id != a.client_id);
  CHECK(b.slot != a.slot);
  CHECK(r.server->wait_for_log("client " + std::to_string(b.client_id) + " (pid " + std::to_string(::getpid())));

  // The server's view, through a mapping of the segment in this process.
  auto seg = Segment::open_fd(std::exchange(a.segment_fd, -1), a.address, a.size);
  Metadata* m = seg->meta();
  CHECK(m->server_state.load(std::memory_order_acquire) == static_cast<std::uint32_t>(ServerState::kRunning));
  CHECK(m->server_pid.load() == r.server->pid());
  CHECK(m->gc_threshold_percent.load() == 55);
  ClientSlot& sa = m->clients[a.slot];
  CHECK(sa.state.load(std::memory_order_acquire) == static_cast<std::uint32_t>(ClientState::kActive));
  CHECK(sa.client_id.load() == a.client_id);
  CHECK(sa.pid.load() == ::getpid());

  // An orderly detach frees the slot.
  close_link(b.fd);
  CHECK(r.server->wait_for_log("client " + std::to_string(b.client_id) + " (pid " + std::to_string(::getpid()) +
                               ") detached"));
  CHECK(eventually(
      [&] { return m->clients[b.slot].state.load(std::memory_order_acquire) == static_cast<std::uint32_t>(ClientState::kFree); },
      5000));
  CHECK(m->clients[b.slot].client_id.load() == 0);
  close_link(a.fd);
}

TEST_CASE("no server: a clear ServerGoneError naming the path", "[server_link]") {
  TempDir dir;
  std::string missing = dir.path() + "/nobody.sock";
  try {
    connect_to_server(missing);
    FAIL("connect_to_server succeeded without a server");
  } catch (const ServerGoneError& e) {
    std::string msg = e.what();
    CHECK(msg.find(missing) != std::string::npos);
    CHECK(msg.find("colors-server") != std::string::npos);
  }
  // A socket file with no listener behind it (a crashed server's): ECONNREFUSED.
  {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, missing.c_str(), sizeof a.sun_path - 1);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    ::close(fd);
  }
  CHECK_THROWS_AS(connect_to_server(missing), ServerGoneError);
}

TEST_CASE("a second server on the same name or socket is refused", "[server]") {
  Running r;
  {
    ServerProcess second(r.cfg, r.cfg.args(), r.dir.path() + "/second.log");
    REQUIRE(second.wait_exit() == 1);
    std::string log = second.log();
    INFO(log);
    CHECK(log.find("already running") != std::string::npos);
    CHECK(log.find(r.cfg.socket) != std::string::npos);
    CHECK(log.find("pid " + std::to_string(r.server->pid())) != std::string::npos);
  }
  {
    // Same segment name, other socket: refused too (it would destroy the live segment).
    ServerConfig other = r.cfg;
    other.socket = r.dir.path() + "/other.sock";
    ServerProcess third(other, other.args(), r.dir.path() + "/third.log");
    REQUIRE(third.wait_exit() == 1);
    std::string log = third.log();
    INFO(log);
    CHECK(log.find("segment name '" + r.cfg.name + "'") != std::string::npos);
    CHECK(log.find("pid " + std::to_string(r.server->pid())) != std::string::npos);
    CHECK(!path_exists(other.socket));
  }
  // The first one still serves, and its files are untouched.
  ServerLink l = connect_to_server(r.cfg.socket);
  CHECK(ping_server(l.fd));
  CHECK(path_exists(r.cfg.shm_path()));
  close_link(l.fd);
}

// A crashed server's socket is replaced; its heap is adopted (test_server_survival.cpp has what
// adoption keeps), or discarded with --fresh-heap.
TEST_CASE("leftovers of a crashed server: the socket is replaced, the heap adopted", "[server]") {
  TempDir dir;
  ServerConfig cfg = ServerConfig::fresh(dir.path());
  LeftoverCleaner cleaner{cfg};
  {
    ServerProcess crashed(cfg, cfg.args(), dir.path() + "/first.log");
    REQUIRE(crashed.wait_ready());
    crashed.signal(SIGKILL);
    REQUIRE(crashed.wait_exit() == 128 + SIGKILL);
  }
  REQUIRE(path_exists(cfg.socket));
  REQUIRE(path_exists(cfg.shm_path()));
  CHECK_THROWS_AS(connect_to_server(cfg.socket), ServerGoneError);

  ServerProcess next(cfg, cfg.args(), dir.path() + "/second.log");
  INFO(next.log());
  REQUIRE(next.wait_ready());
  CHECK(next.log().find("stale socket " + cfg.socket) != std::string::npos);
  CHECK(next.log().find("adopted the heap " + cfg.shm_path()) != std::string::npos);
  ServerLink l = connect_to_server(cfg.socket);
  CHECK(l.client_id != 0);
  CHECK(ping_server(l.fd));
  close_link(l.fd);
  ::close(l.segment_fd);
  next.signal(SIGKILL);
  REQUIRE(next.wait_exit() == 128 + SIGKILL);

  // --fresh-heap: the heap is replaced, and says so.
  ServerProcess fresh(cfg, cfg.args({"--fresh-heap"}), dir.path() + "/third.log");
  INFO(fresh.log());
  REQUIRE(fresh.wait_ready());
  CHECK(fresh.log().find("--fresh-heap: discarding the heap " + cfg.shm_path()) != std::string::npos);
  CHECK(fresh.log().find("adopted") == std::string::npos);
}

TEST_CASE("a client of another protocol or layout version is refused naming both versions", "[server]") {
  Running r;
  const std::string ours = "protocol version " + std::to_string(kProtocolVersion) + " / layout version " +
                           std::to_string(kLayoutVersion);
  {
    AttachReply rep = raw_handshake(r.cfg.socket, Hello{kWireMagic, kProtocolVersion + 41, kLayoutVersion, 1});
    CHECK(rep.status == AttachStatus::kVersionMismatch);
    CHECK(rep.protocol_version == kProtocolVersion);
    CHECK(rep.layout_version == kLayoutVersion);
    CHECK(rep.client_id == 0);
    INFO(rep.message);
    CHECK(rep.message.find("protocol version " + std::to_string(kProtocolVersion + 41)) != std::string::npos);
    CHECK(rep.message.find(ours) != std::string::npos);
  }
  {
    AttachReply rep = raw_handshake(r.cfg.socket, Hello{kWireMagic, kProtocolVersion, kLayoutVersion + 7, 1});
    CHECK(rep.status == AttachStatus::kVersionMismatch);
    INFO(rep.message);
    CHECK(rep.message.find("layout version " + std::to_string(kLayoutVersion + 7)) != std::string::npos);
    CHECK(rep.message.find(ours) != std::string::npos);
  }
  {
    AttachReply rep = raw_handshake(r.cfg.socket, Hello{0xdeadbeef, kProtocolVersion, kLayoutVersion, 1});
    CHECK(rep.status == AttachStatus::kBadHello);
  }
  CHECK(r.server->wait_for_log("version mismatch"));
  // The server is still fine afterwards.
  ServerLink l = connect_to_server(r.cfg.socket);
  CHECK(ping_server(l.fd));
  close_link(l.fd);
}

TEST_CASE("the client reports a server of another version with both versions", "[server_link]") {
  // A fake server of protocol 9 / layout 8 that answers every hello with a mismatch.
  TempDir dir;
  std::string path = dir.path() + "/fake.sock";
  int lfd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  REQUIRE(::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(lfd, 4) == 0);
  std::thread fake([lfd] {
    int c = ::accept(lfd, nullptr, nullptr);
    std::uint8_t in[kHelloSize];
    if (read_full(c, in, sizeof in, 5000) == IoResult::kOk) {
      AttachReply r;
      r.status = AttachStatus::kVersionMismatch;
      r.protocol_version = 9;
      r.layout_version = 8;
      r.message = "fake server says no";
      auto out = encode_reply(r);
      write_full(c, out.data(), out.size(), 5000);
    }
    ::close(c);
  });
  try {
    connect_to_server(path);
    FAIL("attached to a server of another version");
  } catch (const VersionMismatchError& e) {
    std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("protocol version 9 / layout version 8") != std::string::npos);
    CHECK(msg.find("protocol version " + std::to_string(kProtocolVersion) + " / layout version " +
                   std::to_string(kLayoutVersion)) != std::string::npos);
    CHECK(msg.find("fake server says no") != std::string::npos);
  }
  fake.join();
  ::close(lfd);
}

TEST_CASE("a silent peer neither blocks the server nor stays connected", "[server]") {
  Running r;
  int silent = raw_connect(r.cfg.socket);
  auto t0 = std::chrono::steady_clock::now();
  ServerLink l = connect_to_server(r.cfg.socket);  // served while the silent peer waits
  CHECK(colors::test::ms_since(t0) < 2000);
  CHECK(ping_server(l.fd));
  // Dropped after the handshake timeout (kHandshakeTimeoutMs).
  char c;
  CHECK(read_full(silent, &c, 1, 15000) == IoResult::kEof);
  CHECK(colors::test::ms_since(t0) >= kHandshakeTimeoutMs - 500);
  CHECK(r.server->wait_for_log("sent no handshake"));
  ::close(silent);
  CHECK(ping_server(l.fd));
  close_link(l.fd);
}

TEST_CASE("a full client table refuses with a reason", "[server]") {
  Running r;
  std::vector<ServerLink> links;
  for (std::size_t i = 0; i < kMaxClients; ++i) links.push_back(connect_to_server(r.cfg.socket));
  try {
    connect_to_server(r.cfg.socket);
    FAIL("attached beyond the client table");
  } catch (const RefusedError& e) {
    CHECK(std::string(e.what()).find("full") != std::string::npos);
  }
  std::uint32_t freed_slot = links[17].slot;
  close_link(links[17].fd);
  CHECK(r.server->wait_for_log("detached"));
  ServerLink again;
  CHECK(eventually(
      [&] {
        try {
          again = connect_to_server(r.cfg.socket);
          return true;
        } catch (const RefusedError&) {
          return false;
        }
      },
      5000));
  CHECK(again.slot == freed_slot);
  close_link(again.fd);
  for (std::size_t i = 0; i < links.size(); ++i)
    if (i != 17) close_link(links[i].fd);
}

TEST_CASE("peers are checked with SO_PEERCRED against the owner and --allow-group", "[server][root]") {
  if (::geteuid() != 0) {
    WARN("not root: cannot run clients as other users; skipping the credentials test");
    SUCCEED();
    return;
  }
  std::string group_name;
  auto gid = pick_test_group(group_name);
  REQUIRE(gid);
  const gid_t G = *gid;
  constexpr uid_t kNobody = 65534;
  constexpr gid_t kNogroup = 65534;

  // The socket lives in a subdirectory the server creates (0750, group G); the temp dir above it
  // must be traversable by the unprivileged children.
  TempDir dir;
  REQUIRE(::chmod(dir.path().c_str(), 0711) == 0);
  ServerConfig cfg = ServerConfig::fresh(dir.path(), "sockets");
  LeftoverCleaner cleaner{cfg};
  ServerProcess server(cfg, cfg.args({"--allow-group", group_name}), dir.path() + "/server.log");
  INFO("server log:\n" << server.log());
  REQUIRE(server.wait_ready());

  struct stat st {};
  REQUIRE(::stat(cfg.dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0750);
  CHECK(st.st_gid == G);
  REQUIRE(::stat(cfg.socket.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0660);
  CHECK(st.st_gid == G);
  // The segment stays private to the server's user: group members get its descriptor at attach.
  REQUIRE(::stat(cfg.shm_path().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);

  SECTION("G only as a supplementary group: reaches the socket, refused by SO_PEERCRED") {
    ChildResult c = run_in_child([&](std::string& out) {
      gid_t groups[] = {G};
      if (::setgroups(1, groups) != 0 || ::setgid(kNogroup) != 0 || ::setuid(kNobody) != 0) {
        out = "cannot drop privileges";
        return 3;
      }
      return try_attach(cfg.socket, out);
    });
    INFO(c.output);
    REQUIRE(c.exit_code == kRefused);
    CHECK(c.output.find("not allowed to attach") != std::string::npos);
    CHECK(c.output.find("uid 65534") != std::string::npos);
    CHECK(c.output.find(group_name) != std::string::npos);
    CHECK(server.wait_for_log("refusing connection: process"));
    CHECK(server.log().find("uid 65534, gid 65534") != std::string::npos);
  }
  SECTION("G as the primary group: accepted") {
    ChildResult c = run_in_child([&](std::string& out) {
      if (::setgroups(0, nullptr) != 0 || ::setgid(G) != 0 || ::setuid(kNobody) != 0) {
        out = "cannot drop privileges";
        return 3;
      }
      return try_attach(cfg.socket, out);
    });
    INFO(c.output);
    CHECK(c.exit_code == kAttached);
  }
  SECTION("neither the owner nor in G: the socket's permissions already keep it out") {
    ChildResult c = run_in_child([&](std::string& out) {
      if (::setgroups(0, nullptr) != 0 || ::setgid(kNogroup) != 0 || ::setuid(kNobody) != 0) {
        out = "cannot drop privileges";
        return 3;
      }
      return try_attach(cfg.socket, out);
    });
    INFO(c.output);
    CHECK(c.exit_code == kRefused);
    CHECK(c.output.find("permission denied") != std::string::npos);
  }
}

TEST_CASE("a root peer is refused by a server of another user", "[server][root]") {
  if (::geteuid() != 0) {
    WARN("not root: skipping");
    SUCCEED();
    return;
  }
  // The server runs as nobody (forked child drops privileges before exec); this process (root)
  // connects: root gets no special treatment.
  TempDir dir;
  REQUIRE(::chmod(dir.path().c_str(), 0777) == 0);
  ServerConfig cfg = ServerConfig::fresh(dir.path());
  LeftoverCleaner cleaner{cfg};
  std::string log_path = dir.path() + "/server.log";
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    int err = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    int out = ::open("/dev/null", O_WRONLY);
    ::dup2(err, 2);
    ::dup2(out, 1);
    std::vector<std::string> args = {COLORS_SERVER_BIN};
    for (auto& a : cfg.args()) args.push_back(a);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  // Its log says "listening" once the socket accepts connections.
  bool ready = eventually([&] { return colors::test::read_file(log_path).find("listening on") != std::string::npos; },
                          10000);
  if (ready) {
    // root can connect to the 0600 socket of another user (CAP_DAC_OVERRIDE); SO_PEERCRED refuses.
    try {
      connect_to_server(cfg.socket);
      FAIL("root attached to nobody's server");
    } catch (const RefusedError& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find("uid 0") != std::string::npos);
    }
  }
  ::kill(pid, SIGTERM);
  int st = 0;
  ::waitpid(pid, &st, 0);
  INFO(colors::test::read_file(log_path));
  REQUIRE(ready);
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
}

TEST_CASE("a client killed with SIGKILL is noticed and its slot freed", "[server]") {
  Running r;
  int p[2];
  REQUIRE(::pipe(p) == 0);
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(p[0]);
    try {
      ServerLink l = connect_to_server(r.cfg.socket);
      std::uint32_t msg[2] = {l.client_id, l.slot};
      [[maybe_unused]] ssize_t n = ::write(p[1], msg, sizeof msg);
      for (;;) ::pause();
    } catch (...) {
      ::_exit(1);
    }
  }
  ::close(p[1]);
  std::uint32_t msg[2] = {0, 0};
  REQUIRE(::read(p[0], msg, sizeof msg) == static_cast<ssize_t>(sizeof msg));  // a pipe: one atomic write
  ::close(p[0]);
  const std::uint32_t dead_id = msg[0], dead_slot = msg[1];
  REQUIRE(dead_id != 0);

  ::kill(child, SIGKILL);
  int st = 0;
  ::waitpid(child, &st, 0);
  CHECK(r.server->wait_for_log("client " + std::to_string(dead_id) + " (pid " + std::to_string(child) + ") died"));
  CHECK(r.server->log().find("slot " + std::to_string(dead_slot) + " freed") != std::string::npos);

  // The slot is free again, and ids are never reused.
  ServerLink next = connect_to_server(r.cfg.socket);
  CHECK(next.slot == dead_slot);
  CHECK(next.client_id != dead_id);
  CHECK(next.client_id != 0);
  auto seg = Segment::open_fd(std::exchange(next.segment_fd, -1), next.address, next.size);
  ClientSlot& s = seg->meta()->clients[next.slot];
  CHECK(s.client_id.load() == next.client_id);
  CHECK(s.pid.load() == ::getpid());
  close_link(next.fd);
}

TEST_CASE("SIGTERM stops the server cleanly and clients notice", "[server]") {
  Running r;
  ServerLink l = connect_to_server(r.cfg.socket);
  REQUIRE(ping_server(l.fd));

  // A waiter on a monitor's condition in this process, as a client thread would sleep.
  auto seg = Segment::open_fd(std::exchange(l.segment_fd, -1), l.address, l.size);
  Metadata* m = seg->meta();
  std::atomic<std::uint32_t>& word = m->monitors[7].cv_seq;
  const std::uint32_t before = word.load(std::memory_order_acquire);
  std::atomic<bool> woke{false};
  std::thread waiter([&] {
    // Bounded, so a broken wake-up fails the test instead of hanging it.
    auto t0 = std::chrono::steady_clock::now();
    while (word.load(std::memory_order_acquire) == before && colors::test::ms_since(t0) < 20000)
      futex_wait(&word, before, 1'000'000'000LL);
    woke.store(word.load(std::memory_order_acquire) != before, std::memory_order_release);
  });

  r.server->signal(SIGTERM);
  CHECK(r.server->wait_exit() == 0);
  waiter.join();
  CHECK(woke.load());
  CHECK(m->server_state.load(std::memory_order_acquire) == static_cast<std::uint32_t>(ServerState::kStopped));
  CHECK(m->gc_done_seq.load() != 0);

  CHECK(!path_exists(r.cfg.socket));
  CHECK(!path_exists(r.cfg.socket + ".lock"));
  CHECK(!path_exists(r.cfg.shm_path()));
  CHECK(!path_exists(r.cfg.name_lock_path()));
  CHECK(!server_link_alive(l.fd));
  CHECK(!ping_server(l.fd));
  close_link(l.fd);
  CHECK_THROWS_AS(connect_to_server(r.cfg.socket), ServerGoneError);
  CHECK(r.server->log().find("received SIGTERM") != std::string::npos);
}
