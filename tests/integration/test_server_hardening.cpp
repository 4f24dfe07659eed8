// The server and the client connection under attack and misuse (colors-server/README.md,
// "Threat model"): who a client talks to, names in /dev/shm, peers that flood or stall the event
// loop, and a server that dies under its clients.
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <fstream>
#include <algorithm>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "colors/colors.hpp"
#include "colors/errors.hpp"
#include "protocol.hpp"
#include "segment.hpp"
#include "server_link.hpp"
#include "server_process.hpp"
#include "server_test_util.hpp"

using namespace colors;
using namespace colors::detail;
using namespace colors::test;

namespace {

constexpr uid_t kNobody = 65534;
constexpr gid_t kNogroup = 65534;

bool is_root() { return ::geteuid() == 0; }

// Runs `body` in a forked child until the child is killed; returns its pid. The child uses raw
// sockets only (no library state), so it is safe to fork from the test.
pid_t start_abuser(const std::function<void()>& body) {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    body();
    ::_exit(0);
  }
  return pid;
}

void stop_abuser(pid_t pid) {
  ::kill(pid, SIGKILL);
  int st = 0;
  ::waitpid(pid, &st, 0);
}

std::size_t count_lines(const std::string& path) {
  std::ifstream in(path);
  std::size_t n = 0;
  std::string line;
  while (std::getline(in, line)) ++n;
  return n;
}

// The bound a real client's attach must meet while an abuser runs: 2 s. The abuser spins on one
// of the machine's two cores and `ctest -j2` runs another test on the other, so the server and
// the client share what is left (an attach can pass 1 s there). Sanitizer builds run all of them
// several times slower, so there the bound is 3 s: those builds check what the abuse cannot break
// (every attach succeeds, the server stops), the release build checks the time.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr std::int64_t kAttachBoundMs = 3000;
#else
constexpr std::int64_t kAttachBoundMs = 2000;
#endif

// An attach that takes this long is starved, whatever the machine does meanwhile.
constexpr std::int64_t kAttachStarvedMs = 10000;

// 50 attaches of a real client while an abuser runs: each must succeed, none may be starved, and
// all but two must take less than kAttachBoundMs (a single attach of a CI run took 2.3 s: the
// machine descheduled the server or the client once; an abuser that slows attaches slows them
// all). Then SIGTERM must stop the server within 1 s.
void attach_50_times_then_stop(Running& r) {
  int slow = 0;
  for (int i = 0; i < 50; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    ServerLink l = connect_to_server(r.cfg.socket);
    std::int64_t ms = ms_since(t0);
    INFO("attach " << i << " took " << ms << " ms");
    CHECK(ms < kAttachStarvedMs);
    if (ms >= kAttachBoundMs) ++slow;
    CHECK(l.client_id != 0);
    ::close(l.segment_fd);
    close_link(l.fd);
  }
  INFO(slow << " of 50 attaches took " << kAttachBoundMs << " ms or more");
  CHECK(slow <= 2);
  auto t0 = std::chrono::steady_clock::now();
  r.server->signal(SIGTERM);
  CHECK(r.server->wait_exit(5000) == 0);
  INFO("SIGTERM took " << ms_since(t0) << " ms");
  CHECK(ms_since(t0) < 1000);
}

}  // namespace

// ---- 1. Who the client talks to ----------------------------------------------------------------

TEST_CASE("a client refuses a server that runs as a user it does not trust", "[server][security]") {
  if (!is_root()) {
    WARN("needs root to run a server as another user (CI runs as root); not run here");
    return;
  }
  // The impostor: a real colors-server of uid 65534 that accepts root's group, so that the
  // server side would let the client in; only the client's own check can refuse.
  TempDir dir;
  REQUIRE(::chown(dir.path().c_str(), kNobody, kNogroup) == 0);
  REQUIRE(::chmod(dir.path().c_str(), 0755) == 0);
  ServerConfig cfg = ServerConfig::fresh(dir.path(), "sockets");
  RunAs nobody{kNobody, kNogroup, {0}};
  ServerProcess impostor(cfg, cfg.args({"--allow-group", "0", "--heap-dir", dir.path() + "/heaps"}),
                         dir.path() + "/impostor.log", &nobody);
  INFO("impostor log:\n" << impostor.log());
  REQUIRE(impostor.wait_ready());

  ::unsetenv("COLORS_TRUSTED_UIDS");
  try {
    ServerLink l = connect_to_server(cfg.socket);
    close_link(l.fd);
    FAIL("attached to a server running as uid 65534");
  } catch (const RefusedError& e) {
    std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("runs as uid 65534") != std::string::npos);
    CHECK(msg.find("COLORS_TRUSTED_UIDS") != std::string::npos);
  }
  // Nothing was sent to it: it never saw a hello.
  CHECK(impostor.log().find("attached") == std::string::npos);

  // Told to trust that uid, the client attaches.
  ::setenv("COLORS_TRUSTED_UIDS", "1234,65534", 1);
  ServerLink l = connect_to_server(cfg.socket);
  ::unsetenv("COLORS_TRUSTED_UIDS");
  CHECK(l.client_id != 0);
  CHECK(ping_server(l.fd));
  ::close(l.segment_fd);
  close_link(l.fd);
}

TEST_CASE("a malformed COLORS_TRUSTED_UIDS is a clear error", "[server][security]") {
  Running r;
  ::setenv("COLORS_TRUSTED_UIDS", "1000,bob", 1);
  CHECK_THROWS_WITH(connect_to_server(r.cfg.socket), Catch::Contains("'bob' is not one"));
  ::unsetenv("COLORS_TRUSTED_UIDS");
}

TEST_CASE("the segment reaches the client as a descriptor, not a name", "[server][security]") {
  Running r;
  ServerLink l = connect_to_server(r.cfg.socket);
  REQUIRE(l.segment_fd >= 0);
  // The descriptor is the server's segment file: same inode, and close-on-exec in the client.
  struct stat by_fd {}, by_path {};
  REQUIRE(::fstat(l.segment_fd, &by_fd) == 0);
  REQUIRE(::stat(r.cfg.shm_path().c_str(), &by_path) == 0);
  CHECK(by_fd.st_ino == by_path.st_ino);
  CHECK(by_fd.st_dev == by_path.st_dev);
  CHECK((::fcntl(l.segment_fd, F_GETFD) & FD_CLOEXEC) != 0);
  // The heap directory is private to the server's user.
  struct stat dir {};
  REQUIRE(::stat(default_heap_dir().c_str(), &dir) == 0);
  CHECK((dir.st_mode & 0777) == 0700);
  CHECK(dir.st_uid == ::geteuid());
  ::close(l.segment_fd);
  close_link(l.fd);
}

TEST_CASE("names another user created first in /dev/shm do not keep a server from starting", "[server][security]") {
  if (!is_root()) {
    WARN("needs root to create files as another user (CI runs as root); not run here");
    return;
  }
  TempDir dir;
  ServerConfig cfg = ServerConfig::fresh(dir.path());
  LeftoverCleaner cleaner{cfg};
  // Another user squats the names a server of this name used to take.
  const std::vector<std::string> squatted = {"/dev/shm/colors." + cfg.name, "/dev/shm/colors-lock." + cfg.name};
  ChildResult c = run_in_child([&](std::string& out) {
    if (::setgid(kNogroup) != 0 || ::setuid(kNobody) != 0) {
      out = "cannot drop privileges";
      return 3;
    }
    for (const auto& p : squatted) {
      int fd = ::open(p.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
      if (fd < 0) {
        out = "cannot create " + p;
        return 4;
      }
      ::close(fd);
    }
    return 0;
  });
  REQUIRE(c.exit_code == 0);
  struct Unsquat {
    std::vector<std::string> paths;
    ~Unsquat() {
      for (const auto& p : paths) ::unlink(p.c_str());
    }
  } unsquat{squatted};

  ServerProcess server(cfg, cfg.args(), dir.path() + "/server.log");
  INFO("server log:\n" << server.log());
  REQUIRE(server.wait_ready());
  ServerLink l = connect_to_server(cfg.socket);
  CHECK(ping_server(l.fd));
  ::close(l.segment_fd);
  close_link(l.fd);
}

TEST_CASE("a heap directory that is not the server's own is refused with the failed check", "[server][security]") {
  TempDir dir;
  ServerConfig cfg = ServerConfig::fresh(dir.path());

  SECTION("a symlink planted at the heap directory's path") {
    const std::string heaps = dir.path() + "/heaps";
    REQUIRE(::mkdir((dir.path() + "/elsewhere").c_str(), 0700) == 0);
    REQUIRE(::symlink((dir.path() + "/elsewhere").c_str(), heaps.c_str()) == 0);
    ServerProcess server(cfg, cfg.args({"--heap-dir", heaps}), dir.path() + "/server.log");
    CHECK(server.wait_exit(10000) == 1);
    INFO(server.log());
    CHECK(server.log().find("the heap directory " + heaps + " is not a directory") != std::string::npos);
    CHECK(!path_exists(dir.path() + "/elsewhere/" + cfg.name + ".heap"));
  }
  SECTION("a directory that belongs to another user") {
    if (!is_root()) {
      WARN("needs root to make a directory of another user (CI runs as root); not run here");
      return;
    }
    const std::string heaps = dir.path() + "/heaps";
    REQUIRE(::mkdir(heaps.c_str(), 0777) == 0);
    REQUIRE(::chown(heaps.c_str(), kNobody, kNogroup) == 0);
    ServerProcess server(cfg, cfg.args({"--heap-dir", heaps}), dir.path() + "/server.log");
    CHECK(server.wait_exit(10000) == 1);
    INFO(server.log());
    CHECK(server.log().find("belongs to uid 65534") != std::string::npos);
  }
}

// ---- 2. One peer must not stall the control plane ---------------------------------------------

TEST_CASE("64 idle half-open connections do not keep a real client out", "[server][abuse]") {
  Running r;
  const std::string socket = r.cfg.socket;
  pid_t abuser = start_abuser([socket] {
    std::vector<int> fds;
    for (;;) {  // keep 64 connections open that never say hello; reopen the ones dropped
      while (fds.size() < 64) {
        int fd = try_raw_connect(socket);
        if (fd >= 0) fds.push_back(fd);
      }
      ::usleep(200'000);
      for (int& fd : fds) {
        char c;
        if (::recv(fd, &c, 1, MSG_DONTWAIT) == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
          ::close(fd);
          fd = -1;
        }
      }
      std::erase(fds, -1);
    }
  });
  ::usleep(300'000);  // the flood is in place
  attach_50_times_then_stop(r);
  stop_abuser(abuser);
}

TEST_CASE("a client that sends pings and never reads the answers does not stall the server", "[server][abuse]") {
  Running r;
  const std::string socket = r.cfg.socket;
  pid_t abuser = start_abuser([socket] {
    ServerLink l = connect_to_server(socket);
    Request ping;
    ping.type = RequestType::kPing;
    auto bytes = encode_request(ping);
    for (;;) (void)write_full(l.fd, bytes.data(), bytes.size(), 1000);  // never reads
  });
  REQUIRE(r.server->wait_for_log("attached"));
  ::usleep(500'000);  // its socket buffers fill up
  attach_50_times_then_stop(r);
  stop_abuser(abuser);
}

TEST_CASE("clients that stream requests the server does not answer do not stall it", "[server][abuse]") {
  // Detach notices, unknown request types and bad magic get no answer, so no output piles up to
  // make the server stop reading such a peer; it used to drain each socket until empty, which a
  // few peers writing without pause never let happen: attaches of others took 3-12 s.
  Running r;
  const std::string socket = r.cfg.socket;
  std::vector<pid_t> abusers;
  for (std::uint32_t type : {3u, 99u, 3u, 0u}) {
    abusers.push_back(start_abuser([socket, type] {
      ServerLink l = connect_to_server(socket);
      Request q;
      q.type = static_cast<RequestType>(type);
      auto one = encode_request(q);
      if (type == 0) one[0] ^= 0xff;  // bad magic
      std::vector<std::uint8_t> chunk;
      for (int i = 0; i < 8192; ++i) chunk.insert(chunk.end(), one.begin(), one.end());
      for (;;) (void)write_full(l.fd, chunk.data(), chunk.size(), 1000);
    }));
  }
  REQUIRE(r.server->wait_for_log("attached"));
  ::usleep(500'000);
  attach_50_times_then_stop(r);
  for (pid_t a : abusers) stop_abuser(a);
}

TEST_CASE("a connect/close loop neither fails real attaches nor floods the log", "[server][abuse]") {
  Running r;
  const std::string socket = r.cfg.socket;
  pid_t abuser = start_abuser([socket] {
    for (;;) {
      int fd = try_raw_connect(socket);
      if (fd >= 0) ::close(fd);
    }
  });
  ::usleep(2'000'000);  // two seconds of it
  attach_50_times_then_stop(r);
  stop_abuser(abuser);
  // Lines peers can trigger are rate-limited: ~10 per second per kind plus the counts.
  std::size_t lines = count_lines(r.log_path());
  INFO("server log has " << lines << " lines");
  CHECK(lines < 1000);
}

// Two processes that connect and close in a loop refill the listen backlog as fast as the server
// drains it. The server accepts a bounded number of connections per turn of its loop, so the hello
// of a client it accepted is read within a turn or two, not when the flood pauses. Whether a
// flood outruns the server's accept loop depends on scheduling: with an accept loop that ran
// until the backlog was empty, the worst of 100 attaches here took 315-601 ms in three of three
// release runs, and 287 ms to 4.9 s in three of five ASan runs (16-21 ms in two); with the bound,
// 2-12 ms, also with a CPU hog beside it.
TEST_CASE("a connect/close flood from two processes does not hold a real attach up", "[server][abuse]") {
  Running r;
  const std::string socket = r.cfg.socket;
  // Non-blocking connects: an abuser spins on a full backlog and refills each slot as soon as
  // the server's accept frees it.
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket.c_str(), sizeof addr.sun_path - 1);
  std::vector<pid_t> abusers;
  for (int i = 0; i < 2; ++i)
    abusers.push_back(start_abuser([addr] {
      for (;;) {
        int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        (void)::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
        ::close(fd);
      }
    }));
  ::usleep(500'000);
  std::vector<std::int64_t> took;
  for (int i = 0; i < 100; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    ServerLink l = connect_to_server(socket);
    took.push_back(ms_since(t0));
    ::close(l.segment_fd);
    close_link(l.fd);
  }
  for (pid_t a : abusers) stop_abuser(a);
  std::sort(took.begin(), took.end());
  INFO("attaches: median " << took[50] << " ms, second worst " << took[98] << " ms, worst " << took[99] << " ms");
  CHECK(took[99] < 250);
}

TEST_CASE("a flood of connections from one process gets 'busy', and the client retries", "[server][abuse]") {
  Running r;
  // Four connections of this process wait for their handshake: its next attach is 'busy' until
  // one of them is answered or dropped.
  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) idle.push_back(raw_connect(r.cfg.socket));
  ::usleep(200'000);
  ::setenv("COLORS_ATTACH_TIMEOUT_MS", "300", 1);
  try {
    ServerLink l = connect_to_server(r.cfg.socket);
    close_link(l.fd);
    FAIL("attached past the per-process bound of pending handshakes");
  } catch (const RefusedError& e) {
    std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("is running but busy") != std::string::npos);
    CHECK(msg.find("waiting for their handshake") != std::string::npos);
  }
  // Within its attach timeout the client gets in once the idle ones are dropped (2 s).
  ::setenv("COLORS_ATTACH_TIMEOUT_MS", "5000", 1);
  auto t0 = std::chrono::steady_clock::now();
  ServerLink l = connect_to_server(r.cfg.socket);
  ::unsetenv("COLORS_ATTACH_TIMEOUT_MS");
  CHECK(ms_since(t0) < 5000);
  CHECK(l.client_id != 0);
  ::close(l.segment_fd);
  close_link(l.fd);
  for (int fd : idle) ::close(fd);
}

TEST_CASE("a per-user limit of client slots (--max-clients-per-uid) refuses one more", "[server][abuse]") {
  Running r({"--max-clients-per-uid", "2"});
  ServerLink a = connect_to_server(r.cfg.socket);
  ServerLink b = connect_to_server(r.cfg.socket);
  try {
    ServerLink c = connect_to_server(r.cfg.socket);
    close_link(c.fd);
    FAIL("a third slot for the same uid");
  } catch (const RefusedError& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find("--max-clients-per-uid 2") != std::string::npos);
  }
  close_link(a.fd);
  // A freed slot can be taken again.
  CHECK(eventually(
      [&] {
        try {
          ServerLink c = connect_to_server(r.cfg.socket);
          ::close(c.segment_fd);
          close_link(c.fd);
          return true;
        } catch (const RefusedError&) {
          return false;
        }
      },
      5000));
  ::close(a.segment_fd);
  ::close(b.segment_fd);
  close_link(b.fd);
}

// A process that accepts connections on the socket and never answers (a hung or stopped server):
// the attach waits for the handshake's answer no longer than its timeout allows (at least 250 ms),
// where a fixed 10 s wait made COLORS_ATTACH_TIMEOUT_MS meaningless.
TEST_CASE("a socket whose server never answers the handshake fails the attach within COLORS_ATTACH_TIMEOUT_MS", "[server][abuse]") {
  const std::string path = "/tmp/colors-test-silent-" + std::to_string(::getpid()) + ".sock";
  ::unlink(path.c_str());
  int lfd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(lfd >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  REQUIRE(::bind(lfd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(lfd, 8) == 0);  // connections complete in the backlog; nobody reads them
  const char* budget = GENERATE("300", "0");
  INFO("COLORS_ATTACH_TIMEOUT_MS=" << budget);
  ::setenv("COLORS_ATTACH_TIMEOUT_MS", budget, 1);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    ServerLink l = connect_to_server(path);
    ::close(l.segment_fd);
    close_link(l.fd);
    FAIL("attached to a socket nobody answers");
  } catch (const ServerGoneError& e) {
    CHECK(std::string(e.what()).find("did not answer the handshake") != std::string::npos);
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  ::unsetenv("COLORS_ATTACH_TIMEOUT_MS");
  ::close(lfd);
  ::unlink(path.c_str());
  CHECK(ms >= 200);  // the 250 ms floor, less the poll's rounding
  CHECK(ms < 3000);
}

// ---- 3. A dead server is noticed ---------------------------------------------------------------

// Since servers adopt the heap of a dead predecessor (test_server_survival.cpp), what needs the
// server waits for a successor up to COLORS_ATTACH_TIMEOUT_MS before it fails; here no successor
// comes within it, then one does and the client gets its objects back by attach().
TEST_CASE("a client notices within 100 ms that its server died, and what needs the server fails after its timeout", "[server][liveness]") {
  Running r;
  ::setenv("COLORS_SOCKET", r.cfg.socket.c_str(), 1);
  colors::attach();
  ::unsetenv("COLORS_SOCKET");
  REQUIRE(colors::is_attached());
  colors::List list = colors::new_list();
  list.append(colors::Value(1));
  colors::Repository repo = colors::repository("liveness");
  repo.set(list);
  colors::Channel ch = colors::channel("liveness", 4);

  r.server->signal(SIGKILL);
  REQUIRE(r.server->wait_exit(5000) == 128 + SIGKILL);
  auto t0 = std::chrono::steady_clock::now();
  CHECK(eventually([] { return !colors::is_attached(); }, 2000));
  INFO("noticed after " << ms_since(t0) << " ms");
  CHECK(ms_since(t0) <= 100);

  // What it holds it can still read and write.
  CHECK(list.size() == 1);
  list.set(0, colors::Value(2));
  CHECK(list.get(0).as_int() == 2);
  // What needs the server waits for a successor up to the attach timeout, then fails.
  ::setenv("COLORS_ATTACH_TIMEOUT_MS", "200", 1);
  auto t1 = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(repo.set(colors::Value(3)), ServerGoneError);
  CHECK(ms_since(t1) >= 190);
  CHECK_THROWS_AS(colors::repository("other"), ServerGoneError);
  CHECK_THROWS_AS(ch.send(colors::Value(4), 0), ServerGoneError);
  CHECK_THROWS_AS(ch.receive(0), ServerGoneError);
  const std::vector<colors::FieldSpec> fields{{"a", colors::TypeKind::kInteger, ""}};
  CHECK_THROWS_AS(colors::define_class("liveness.C", fields), ServerGoneError);
  // Allocation goes on (TLABs come from the freelist in the segment) until the 8 MiB heap is
  // full: then it needs the collector, which waits for a successor and fails.
  CHECK_THROWS_AS(
      [] {
        for (int i = 0; i < 100'000; ++i) colors::Value v(std::string(512, 'x'));
      }(),
      ServerGoneError);
  ::unsetenv("COLORS_ATTACH_TIMEOUT_MS");

  // A new server adopts the heap: attach() takes this client back with its objects.
  ServerProcess next(r.cfg, r.cfg.args(), r.dir.path() + "/next.log");
  REQUIRE(next.wait_ready());
  ::setenv("COLORS_SOCKET", r.cfg.socket.c_str(), 1);
  colors::attach();
  ::unsetenv("COLORS_SOCKET");
  CHECK(colors::is_attached());
  colors::List kept(colors::repository("liveness").get());
  REQUIRE(kept.size() == 1);
  CHECK(kept.get(0).as_int() == 2);  // the write made while no server ran
  colors::detach();
  CHECK(!colors::is_attached());
}

TEST_CASE("detach after the server died is clean, and a later attach works", "[server][liveness]") {
  Running r;
  ::setenv("COLORS_SOCKET", r.cfg.socket.c_str(), 1);
  colors::attach();
  r.server->signal(SIGKILL);
  REQUIRE(r.server->wait_exit(5000) == 128 + SIGKILL);
  CHECK(eventually([] { return !colors::is_attached(); }, 2000));
  colors::detach();
  CHECK_THROWS_AS(colors::attach(), ServerGoneError);  // nobody listens
  ServerProcess next(r.cfg, r.cfg.args(), r.dir.path() + "/next.log");
  REQUIRE(next.wait_ready());
  colors::attach();
  ::unsetenv("COLORS_SOCKET");
  CHECK(colors::is_attached());
  colors::detach();
}

// ---- 7. One client cannot take everything ------------------------------------------------------

TEST_CASE("a per-client limit of live bytes (--client-live-limit) stops one client, not the others", "[server][abuse]") {
  Running r({"--heap-size", "64M", "--client-live-limit", "8M"});
  ::setenv("COLORS_SOCKET", r.cfg.socket.c_str(), 1);
  colors::attach();
  // The greedy client keeps everything it allocates, until the limit stops it.
  colors::List held = colors::new_list();
  std::size_t kept = 0;
  std::string message;
  try {
    for (int i = 0; i < 100'000; ++i) {
      held.append(colors::new_binary(std::string(4000, 'g').data(), 4000));
      kept += 4000;
    }
  } catch (const colors::OutOfMemoryError& e) {
    message = e.what();
  }
  INFO(message);
  REQUIRE(!message.empty());
  CHECK(kept >= (std::size_t{6} << 20));
  CHECK(kept <= (std::size_t{9} << 20));
  CHECK(message.find("--client-live-limit") != std::string::npos);
  CHECK(message.find("largest holders: client ") != std::string::npos);
  CHECK(message.find("(pid " + std::to_string(::getpid()) + ")") != std::string::npos);

  // Another client still allocates (the heap is far from full).
  ChildResult other = run_in_child([&](std::string& out) {
    colors::attach();
    colors::List l = colors::new_list();
    for (int i = 0; i < 1500; ++i) l.append(colors::new_binary(std::string(4000, 'o').data(), 4000));
    out = "allocated";
    return 0;
  });
  INFO(other.output);
  CHECK(other.exit_code == 0);
  CHECK(other.output == "allocated");

  // What it drops no longer counts once a cycle has seen it go.
  held = colors::List(colors::new_list());
  colors::collect();
  CHECK_NOTHROW([] {
    colors::List again = colors::new_list();
    for (int i = 0; i < 1000; ++i) again.append(colors::new_binary(std::string(4000, 'a').data(), 4000));
  }());
  colors::detach();
  ::unsetenv("COLORS_SOCKET");
}

// A copy_to builds in a read scope of its own, where the limit's recount (a collector cycle) would
// wait for the scope: there the limit is reported as a full heap is, and the copy is made rooted,
// after the recount, as it would be outside a scope.
TEST_CASE("a copy_to that meets the per-client limit inside its read scope is made after a recount", "[server][abuse]") {
  Running r({"--heap-size", "64M", "--client-live-limit", "8M"});
  ::setenv("COLORS_SOCKET", r.cfg.socket.c_str(), 1);
  colors::attach();
  {
    // 7 MB of garbage the limit still counts (no cycle has seen it go).
    colors::List garbage = colors::new_list();
    for (int i = 0; i < 1750; ++i) garbage.append(colors::new_binary(std::string(4000, 'g').data(), 4000));
  }
  std::vector<std::string> strings;
  for (int i = 0; i < 2000; ++i) strings.push_back(std::to_string(i) + std::string(1000, 's'));
  colors::List copy = colors::List(colors::copy_to(strings));  // ~2 MB more: over the limit until a recount
  REQUIRE(copy.size() == strings.size());
  CHECK(copy.get(0).as_string() == strings[0]);
  CHECK(copy.get(1999).as_string() == strings[1999]);

  // An explicit scope gets the error, naming the scope, and no wait: 5 MB held, 4 MB more asked.
  copy = colors::List(colors::new_list());
  {
    colors::List garbage = colors::new_list();
    for (int i = 0; i < 1250; ++i) garbage.append(colors::new_binary(std::string(4000, 'g').data(), 4000));
  }
  std::string message;
  try {
    colors::ReadScope scope;
    for (int i = 0; i < 4000; ++i) (void)colors::new_string_view(strings[static_cast<std::size_t>(i) % strings.size()]);
  } catch (const colors::OutOfMemoryError& e) {
    message = e.what();
  }
  INFO(message);
  CHECK(message.find("--client-live-limit") != std::string::npos);
  CHECK(message.find("read scope") != std::string::npos);
  colors::detach();
  ::unsetenv("COLORS_SOCKET");
}

// ---- 8. A client stopped inside a heap-wide lock, or holding one for good ----------------------

namespace {

// Another client allocates (TLAB refills take the heap lock) and defines a class (the classes
// lock), and the heap is sound: what a killed holder must leave possible.
void others_go_on(const std::string& socket, const std::string& class_name) {
  ::setenv("COLORS_SOCKET", socket.c_str(), 1);
  colors::attach();
  colors::List l = colors::new_list();
  for (int i = 0; i < 4000; ++i) l.append(colors::new_binary(std::string(4000, 'x').data(), 4000));
  colors::Class c = colors::define_class(class_name, {{"n", colors::TypeKind::kInteger, ""}});
  colors::Object o = colors::new_object(c);
  o.set("n", colors::Value(7));
  CHECK(o.get("n").as_int() == 7);
  CHECK(colors::verify_heap().ok);
  colors::detach();
  ::unsetenv("COLORS_SOCKET");
}

// Forks a client that runs `hold` with the metadata lock `which` points to (attached first);
// returns once `hold` said it has the lock (through `ready`, a pipe's write end it writes one
// byte to).
pid_t fork_holder(const std::string& socket, RobustMutex Metadata::*which,
                  void (*hold)(RobustMutex& lock, int ready)) {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  std::fflush(nullptr);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::close(p[0]);
    colors::attach(socket);
    hold(current_meta()->*which, p[1]);
    ::_exit(0);
  }
  ::close(p[1]);
  char c = 0;
  REQUIRE(::read(p[0], &c, 1) == 1);
  ::close(p[0]);
  return pid;
}

// Waits up to `ms` for `pid` to end; true (and its status in `st`) if it did. A child that is
// still there after that is killed, so that a test whose watch failed ends instead of hanging.
bool ended_within(pid_t pid, int ms, int* st) {
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < until) {
    if (::waitpid(pid, st, WNOHANG) == pid) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop_abuser(pid);
  return false;
}

// A fork_holder body: takes the lock and keeps it, alive (state S), never letting go.
void hold_forever(RobustMutex& lock, int ready) {
  lock.lock();
  if (::write(ready, "h", 1) != 1) ::_exit(3);
  for (;;) ::usleep(1000);
}

// Forks a client that takes the metadata lock `which` points to and stops itself (SIGSTOP) while
// holding it; returns once it is stopped.
pid_t fork_stopped_holder(const std::string& socket, RobustMutex Metadata::*which) {
  pid_t pid = fork_holder(socket, which, [](RobustMutex& lock, int ready) {
    lock.lock();
    if (::write(ready, "h", 1) != 1) ::_exit(3);
    ::raise(SIGSTOP);  // continued: the test let it go
  });
  int st = 0;
  REQUIRE(::waitpid(pid, &st, WUNTRACED) == pid);
  REQUIRE(WIFSTOPPED(st));
  return pid;
}

// Whether `pid` is still there (stopped) after `ms`; reaps it if it died.
bool still_there_after(pid_t pid, int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  int st = 0;
  return ::waitpid(pid, &st, WNOHANG) == 0;
}

}  // namespace

TEST_CASE("a client stopped while it holds the heap lock is killed after --stopped-holder-timeout, and the others go on", "[server][abuse]") {
  Running r({"--heap-size", "64M", "--stopped-holder-timeout", "500"});
  auto which = GENERATE(&Metadata::heap_lock, &Metadata::classes_lock);
  pid_t kid = fork_stopped_holder(r.cfg.socket, which);
  auto t0 = std::chrono::steady_clock::now();
  int st = 0;
  REQUIRE(ended_within(kid, 10000, &st));  // without the watch, it would stay stopped for good
  CHECK(WIFSIGNALED(st));
  CHECK(WTERMSIG(st) == SIGKILL);
  CHECK(ms_since(t0) >= 400);
  CHECK(ms_since(t0) < 10000);
  CHECK(r.server->log().find("process " + std::to_string(kid) + " was stopped for") != std::string::npos);
  others_go_on(r.cfg.socket, "hardening.AfterStoppedHolder");
}

TEST_CASE("a stopped client that holds no heap-wide lock, or any with --stopped-holder-timeout 0, is left alone", "[server][abuse]") {
  SECTION("a stopped client holding nothing") {
    Running r({"--heap-size", "32M", "--stopped-holder-timeout", "200"});
    std::fflush(nullptr);
    pid_t kid = ::fork();
    REQUIRE(kid >= 0);
    if (kid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      colors::attach(r.cfg.socket);
      ::raise(SIGSTOP);
      ::_exit(0);
    }
    int st = 0;
    REQUIRE(::waitpid(kid, &st, WUNTRACED) == kid);
    CHECK(still_there_after(kid, 1500));
    stop_abuser(kid);
  }
  SECTION("a holder, with the watch off") {
    Running r({"--heap-size", "32M", "--stopped-holder-timeout", "0"});
    pid_t kid = fork_stopped_holder(r.cfg.socket, &Metadata::heap_lock);
    CHECK(still_there_after(kid, 1500));
    stop_abuser(kid);
  }
}

TEST_CASE("a running client that holds the heap or classes lock without letting it go is killed after --held-lock-timeout, and the others go on", "[server][abuse]") {
  // A hang inside a critical section (here: a thread that takes the lock and sleeps) stalled the
  // server and every other client for good; --stopped-holder-timeout covers stopped holders only.
  Running r({"--heap-size", "64M", "--held-lock-timeout", "500"});
  auto which = GENERATE(&Metadata::heap_lock, &Metadata::classes_lock);
  pid_t kid = fork_holder(r.cfg.socket, which, hold_forever);
  auto t0 = std::chrono::steady_clock::now();
  int st = 0;
  REQUIRE(ended_within(kid, 10000, &st));  // without the watch, it would hold the lock for good
  CHECK(WIFSIGNALED(st));
  CHECK(WTERMSIG(st) == SIGKILL);
  CHECK(ms_since(t0) >= 400);
  CHECK(ms_since(t0) < 10000);
  CHECK(r.server->log().find("process " + std::to_string(kid) + ": its thread") != std::string::npos);
  CHECK(r.server->log().find("--held-lock-timeout") != std::string::npos);
  others_go_on(r.cfg.socket, "hardening.AfterHeldLock");
}

TEST_CASE("time a checkpoint keeps clients stopped does not count toward --held-lock-timeout", "[server][abuse]") {
  // The holder below never lets go, so it is killed in the end; but the 1.5 s for which the
  // server's own checkpoint stopped it are not its doing, and the watch's clock restarts after
  // them. Counting them, it was killed right after the thaw.
  TempDir data;
  ::setenv("COLORS_CHECKPOINT_FAULT_HOLD_MS", "1500", 1);  // the first capture holds its clients stopped
  Running r({"--heap-size", "32M", "--held-lock-timeout", "1500", "--data-dir", data.path() + "/d",
             "--checkpoint-interval", "0"});
  ::unsetenv("COLORS_CHECKPOINT_FAULT_HOLD_MS");
  pid_t kid = fork_holder(r.cfg.socket, &Metadata::heap_lock, hold_forever);
  // Two checks (every 375 ms) see the hold before the capture, well within the timeout.
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  REQUIRE(::waitpid(kid, nullptr, WNOHANG) == 0);
  colors::attach(r.cfg.socket);
  colors::checkpoint();  // its capture stops every client, the holder too, for 1.5 s
  colors::detach();
  CHECK(still_there_after(kid, 500));
  int st = 0;
  REQUIRE(ended_within(kid, 10000, &st));
  CHECK(WIFSIGNALED(st));
  CHECK(r.server->log().find("process " + std::to_string(kid) + ": its thread") != std::string::npos);
}

TEST_CASE("a client that takes the heap lock again and again is not killed by --held-lock-timeout, nor a holder with it 0", "[server][abuse]") {
  SECTION("holding it nearly all the time, but letting it go after each millisecond") {
    // Every check finds this client's thread holding the lock; only the count of acquisitions
    // (RobustMutex::holds) tells it from one hold that never ends.
    Running r({"--heap-size", "32M", "--held-lock-timeout", "200"});
    pid_t kid = fork_holder(r.cfg.socket, &Metadata::heap_lock, [](RobustMutex& lock, int ready) {
      for (bool told = false;; told = true) {
        lock.lock();
        if (!told && ::write(ready, "h", 1) != 1) ::_exit(3);
        auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1);
        while (std::chrono::steady_clock::now() < until) {
        }
        lock.unlock();
      }
    });
    CHECK(still_there_after(kid, 1500));
    stop_abuser(kid);
  }
  SECTION("one hold that never ends, with the watch off") {
    Running r({"--heap-size", "32M", "--held-lock-timeout", "0"});
    pid_t kid = fork_holder(r.cfg.socket, &Metadata::heap_lock, hold_forever);
    CHECK(still_there_after(kid, 1500));
    stop_abuser(kid);
  }
}

TEST_CASE("a client killed while its root table holds words that are no objects does not take the server down", "[server][abuse]") {
  // The server drops a dead client's roots through the deletion barrier, which flagged each word's
  // object pending: a word outside the objects space (written by a buggy or hostile client where
  // a root goes) indexed outside the pending bitmap, and the server died of a general protection
  // fault, for every client.
  Running r({"--heap-size", "64M"});
  auto word = GENERATE(std::uint64_t{0x1000}, std::uint64_t{0x123456789abcdef0}, std::uint64_t{0x7ffffffffff0});
  std::fflush(nullptr);
  pid_t kid = ::fork();
  REQUIRE(kid >= 0);
  if (kid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    colors::attach(r.cfg.socket);
    colors::Value bogus = colors::Value::from_raw(word);  // a root slot now holds the word
    ::raise(SIGKILL);
    ::_exit(0);
  }
  int st = 0;
  REQUIRE(::waitpid(kid, &st, 0) == kid);
  REQUIRE(WIFSIGNALED(st));
  REQUIRE(eventually([&] { return r.server->log().find("pid " + std::to_string(kid) + ") died") != std::string::npos; }, 10000));
  INFO(r.server->log());
  colors::attach(r.cfg.socket);
  colors::List l = colors::new_list();
  l.append(colors::Value(1));
  colors::collect();
  CHECK(l.size() == 1);
  colors::detach();
  CHECK_FALSE(r.server->wait_exit(200).has_value());  // still serving
}

TEST_CASE("a heap larger than its filesystem's free space is refused at start, not met with SIGBUS later", "[server][abuse]") {
  // The heap file is sparse: a server started with a heap larger than the filesystem could hold
  // ran until the filesystem filled, and then every process writing a new page of the heap died
  // of SIGBUS, the server too, and again at each restart adopting that heap.
  TempDir dir;
  ServerConfig cfg = ServerConfig::fresh(dir.path());
  LeftoverCleaner cleaner{cfg};
  const std::string heap_dir = cfg.shm_path().substr(0, cfg.shm_path().rfind('/'));
  ::mkdir(heap_dir.c_str(), 0700);
  struct statvfs fs {};
  REQUIRE(::statvfs(heap_dir.c_str(), &fs) == 0);
  const std::uint64_t avail_mib = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize >> 20;
  const std::string too_big = std::to_string(avail_mib + 256) + "M";
  ServerProcess p(cfg, cfg.args({"--heap-size", too_big}), dir.path() + "/big.log");
  CHECK(p.wait_exit(20000) == 1);
  INFO(p.log());
  CHECK(p.log().find("bytes free, and the heap needs up to") != std::string::npos);
  CHECK(::access(cfg.shm_path().c_str(), F_OK) != 0);  // nothing left behind
}

TEST_CASE("handles that hold no object of the current attachment are refused, never followed", "[server][misuse]") {
  // Default-constructed and moved-from handles dereferenced null; handles kept across detach()
  // and attach() (to the same or another server) acted on whatever lived at their address in the
  // new heap (an append landed in an unrelated list); a copy of one took a root of that address
  // in the new heap; a fork's child, which has no attachment, wrote into its parent's heap.
  Running r({"--heap-size", "64M"});
  colors::attach(r.cfg.socket);
  CHECK_THROWS_AS(colors::List().size(), colors::InvalidArgumentError);
  CHECK_THROWS_AS(colors::Map().put(colors::Value(1), colors::Value(2)), colors::InvalidArgumentError);
  CHECK_THROWS_AS(colors::Set().add(colors::Value(1)), colors::InvalidArgumentError);
  CHECK_THROWS_AS(colors::Object().get("x"), colors::InvalidArgumentError);
  CHECK_THROWS_AS(colors::Class().name(), colors::InvalidArgumentError);
  CHECK_THROWS_AS(colors::Field(colors::Class(), "x"), colors::InvalidArgumentError);
  CHECK_THROWS_AS(colors::Repository().get(), colors::InvalidArgumentError);
  CHECK_THROWS_AS(colors::Channel().send(colors::Value(1)), colors::InvalidArgumentError);
  colors::List moved = colors::new_list();
  colors::List taker(std::move(moved));
  CHECK_THROWS_AS(moved.append(colors::Value(1)), colors::InvalidArgumentError);
  taker.append(colors::Value(1));

  colors::List old = colors::new_list();
  colors::Value old_value = colors::new_list();
  colors::detach();
  colors::attach(r.cfg.socket);
  colors::List fresh = colors::new_list();
  CHECK_THROWS_AS(old.append(colors::Value(7)), colors::NotAttachedError);
  CHECK_THROWS_AS(old.size(), colors::NotAttachedError);
  colors::Value copy = old_value;  // no root of that address in this attachment
  CHECK_FALSE(copy.is_current());
  colors::Value copy_of_copy = copy;  // nor in a copy of the copy
  CHECK_FALSE(copy_of_copy.is_current());
  CHECK_THROWS_AS(fresh.append(old_value), colors::NotAttachedError);
  CHECK_THROWS_AS(fresh.append(copy), colors::NotAttachedError);
  CHECK_THROWS_AS(fresh.append(copy_of_copy), colors::NotAttachedError);
  CHECK_THROWS_AS(colors::repository("hardening.stale").set(old_value), colors::NotAttachedError);
  {
    // Views of them, and copies holding them, which build without the checked List::append.
    colors::ReadScope scope;
    CHECK_THROWS_AS(colors::ValueView(old_value), colors::NotAttachedError);
    CHECK_THROWS_AS(colors::ListView(old), colors::NotAttachedError);
    CHECK_THROWS_AS(colors::ValueView(copy), colors::NotAttachedError);
    CHECK(colors::ValueView(colors::Value()).is_null());
  }
  CHECK_THROWS_AS(colors::copy_to(std::vector<colors::Value>{colors::Value(1), old_value}), colors::NotAttachedError);
  CHECK(fresh.size() == 0);

  colors::Class cls = colors::define_class("hardening.ForkChild", {{"a", colors::TypeKind::kInteger, ""}});
  colors::Object o = colors::new_object(cls);
  o.set("a", colors::Value(1));
  std::fflush(nullptr);
  pid_t kid = ::fork();
  REQUIRE(kid >= 0);
  if (kid == 0) {
    int code = 0;
    try {
      o.set("a", colors::Value(99));
      code = 1;  // wrote into the parent's heap
    } catch (const colors::NotAttachedError&) {
      code = 0;
    } catch (...) {
      code = 2;
    }
    ::_exit(code);
  }
  int st = 0;
  REQUIRE(::waitpid(kid, &st, 0) == kid);
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
  CHECK(o.get("a").as_int() == 1);
  CHECK(colors::verify_heap().ok);
  colors::detach();
}
