// Helpers shared by the server's integration tests: a running server per test case, raw
// connections, and running code in a forked child.
#pragma once
#include <grp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "colors/colors.hpp"
#include "protocol.hpp"
#include "server_link.hpp"
#include "server_process.hpp"

namespace colors::test {

using namespace colors::detail;

// A started server that is ready, with its config and log file.
struct Running {
  TempDir dir;
  ServerConfig cfg;
  LeftoverCleaner cleaner;
  std::unique_ptr<ServerProcess> server;

  explicit Running(const std::vector<std::string>& extra = {}, const std::string& socket_subdir = "")
      : cfg(ServerConfig::fresh(dir.path(), socket_subdir)), cleaner{cfg} {
    server = std::make_unique<ServerProcess>(cfg, cfg.args(extra), log_path());
    if (!server->wait_ready()) FAIL("colors-server did not start; its log:\n" << server->log());
  }
  std::string log_path() const { return dir.path() + "/server.log"; }
};

// Attached to the server of `cfg` for the scope.
struct Attached {
  explicit Attached(const ServerConfig& cfg) { colors::attach(cfg.socket); }
  ~Attached() { colors::detach(); }
};

// `s` killed with SIGKILL and reaped.
inline void kill9(ServerProcess& s) {
  s.signal(SIGKILL);
  REQUIRE(s.wait_exit(5000) == 128 + SIGKILL);
}

// A simulated reboot: the server killed -9, then its heap file (tmpfs) gone.
inline void reboot(ServerProcess& s, const ServerConfig& cfg) {
  kill9(s);
  REQUIRE(::unlink(cfg.shm_path().c_str()) == 0);
}

// A connected socket to `path`, or -1. No Catch2 macro: forked abuser processes use it too.
inline int try_raw_connect(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

inline int raw_connect(const std::string& path) {
  int fd = try_raw_connect(path);
  REQUIRE(fd >= 0);
  return fd;
}

inline AttachReply raw_handshake(const std::string& path, const Hello& h) {
  int fd = raw_connect(path);
  auto bytes = encode_hello(h);
  REQUIRE(write_full(fd, bytes.data(), bytes.size(), 5000) == IoResult::kOk);
  AttachReply r;
  REQUIRE(read_reply(fd, r, 10000) == IoResult::kOk);
  // A refused peer is disconnected right after the reply.
  char c;
  CHECK(read_full(fd, &c, 1, 5000) == IoResult::kEof);
  ::close(fd);
  return r;
}

// Result of running `fn` in a forked child: its exit code and what it wrote to the pipe.
struct ChildResult {
  int exit_code = -1;
  std::string output;
};

template <typename Fn>
ChildResult run_in_child(Fn fn) {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(p[0]);
    std::string out;
    int code = 0;
    try {
      code = fn(out);
    } catch (const std::exception& e) {
      out = std::string("exception: ") + e.what();
      code = 99;
    }
    [[maybe_unused]] ssize_t n = ::write(p[1], out.data(), out.size());
    ::_exit(code);
  }
  ::close(p[1]);
  ChildResult r;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(p[0], buf, sizeof buf)) > 0) r.output.append(buf, static_cast<std::size_t>(n));
  ::close(p[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

// Codes a child reports after trying to attach.
inline constexpr int kAttached = 0, kRefused = 1, kOtherError = 2;

inline int try_attach(const std::string& socket, std::string& out) {
  try {
    ServerLink l = connect_to_server(socket);
    out = "attached as client " + std::to_string(l.client_id);
    return kAttached;
  } catch (const RefusedError& e) {
    out = e.what();
    return kRefused;
  } catch (const std::exception& e) {
    out = e.what();
    return kOtherError;
  }
}

// A group that exists, is neither root's nor nobody's, for the --allow-group tests.
inline std::optional<gid_t> pick_test_group(std::string& name) {
  for (const char* n : {"users", "staff", "daemon", "adm", "sys"}) {
    if (group* g = ::getgrnam(n); g != nullptr && g->gr_gid != 0 && g->gr_gid != 65534) {
      name = n;
      return g->gr_gid;
    }
  }
  return std::nullopt;
}


}  // namespace colors::test
