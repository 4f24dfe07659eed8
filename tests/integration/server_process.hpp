// Test helpers for running real colors-server processes: a fresh temp directory, a unique
// name/socket/address per server, fork/exec of COLORS_SERVER_BIN with stdout on a pipe (for the
// ready line) and stderr in a file (for the log), and RAII cleanup that never leaves a server,
// a segment or a lock file behind.
#pragma once
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <glob.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#ifndef COLORS_SERVER_BIN
#error "COLORS_SERVER_BIN must name the colors-server executable"
#endif

namespace colors::test {

inline std::int64_t ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
}

// Polls `pred` every 10 ms for at most `timeout_ms`.
template <typename Pred>
bool eventually(Pred pred, int timeout_ms) {
  auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    if (pred()) return true;
    if (ms_since(t0) > timeout_ms) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

inline bool path_exists(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/colors-it-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Name, socket and address of one test server. Names carry the pid (test executables run in
// parallel under ctest); addresses are unique per server within 0x610000000000..0x6f0000000000.
struct ServerConfig {
  std::string name;
  std::string socket;
  std::uintptr_t address = 0;
  std::string dir;  // where the socket lives

  static ServerConfig fresh(const std::string& dir, const std::string& socket_subdir = "") {
    static std::atomic<int> counter{0};
    int n = counter.fetch_add(1);
    ServerConfig c;
    c.name = "it-" + std::to_string(::getpid()) + "-" + std::to_string(n);
    c.dir = socket_subdir.empty() ? dir : dir + "/" + socket_subdir;
    c.socket = c.dir + "/" + c.name + ".sock";
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    // Sanitizer builds: the only range both sanitizers accept (config.hpp), 128 MiB apart.
    std::uintptr_t slot = (static_cast<std::uintptr_t>(::getpid()) % 64) * 16 + static_cast<std::uintptr_t>(n % 16);
    c.address = 0x7ec000000000ULL + slot * 0x8000000ULL;  // at most 0x7ee000000000
#else
    std::uintptr_t slot = (static_cast<std::uintptr_t>(::getpid()) % 1024) * 32 + static_cast<std::uintptr_t>(n % 32);
    c.address = 0x610000000000ULL + slot * 0x10000000ULL;  // 256 MiB apart: at most 0x618000000000
#endif
    return c;
  }

  std::string address_hex() const {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%lx", static_cast<unsigned long>(address));
    return buf;
  }
  std::string shm_path() const { return "/dev/shm/colors-" + std::to_string(::geteuid()) + "/" + name + ".heap"; }
  std::string name_lock_path() const { return "/dev/shm/colors-" + std::to_string(::geteuid()) + "/" + name + ".lock"; }

  std::vector<std::string> args(const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> a = {"--name",         name,          "--socket",    socket, "--heap-size", "8M",
                                  "--classes-size", "4M",          "--address",   address_hex()};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
};

// Another identity for a server process (tests that need root: a server of another user).
struct RunAs {
  uid_t uid;
  gid_t gid;
  std::vector<gid_t> groups;  // supplementary groups
};

class ServerProcess {
 public:
  // Starts COLORS_SERVER_BIN with `args`; its stderr goes to `stderr_path`. With `run_as`, the
  // child takes that identity before exec (REQUIRES: root).
  ServerProcess(const ServerConfig& cfg, std::vector<std::string> args, std::string stderr_path,
                const RunAs* run_as = nullptr)
      : cfg_(cfg), stderr_path_(std::move(stderr_path)) {
    std::vector<std::string> all = {COLORS_SERVER_BIN};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : all) argv.push_back(s.data());
    argv.push_back(nullptr);

    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    int err = ::open(stderr_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (err < 0) throw std::runtime_error("cannot open " + stderr_path_);
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      // Child: async-signal-safe calls only. The server dies with the test process (a test killed
      // by ctest's timeout or a debugger must not leave its server running); the death signal is
      // tied to the forking thread, and test servers are made by the test's main thread.
      // A change of identity clears the death signal, so it comes first.
      if (run_as != nullptr &&
          (::setgroups(run_as->groups.size(), run_as->groups.data()) != 0 || ::setgid(run_as->gid) != 0 ||
           ::setuid(run_as->uid) != 0))
        ::_exit(125);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(126);  // the test process died before prctl
      ::dup2(out[1], STDOUT_FILENO);
      ::dup2(err, STDERR_FILENO);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(out[1]);
    ::close(err);
    stdout_fd_ = out[0];
  }

  ~ServerProcess() {
    if (!exited_) {
      ::kill(pid_, SIGTERM);
      if (!wait_exit(5000)) {
        ::kill(pid_, SIGKILL);
        wait_exit(-1);
      }
    }
    if (stdout_fd_ >= 0) ::close(stdout_fd_);
  }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& ready_line() const { return ready_line_; }
  std::string log() const { return read_file(stderr_path_); }

  // Reads stdout until the ready line (at the start of a line). False if the server exited or
  // stayed silent.
  bool wait_ready(int timeout_ms = 10000) {
    auto t0 = std::chrono::steady_clock::now();
    const std::string marker = "colors-server ready:";
    for (;;) {
      for (std::size_t pos = stdout_.find(marker); pos != std::string::npos; pos = stdout_.find(marker, pos + 1)) {
        if (pos != 0 && stdout_[pos - 1] != '\n') continue;
        auto nl = stdout_.find('\n', pos);
        if (nl == std::string::npos) break;
        ready_line_ = stdout_.substr(pos, nl - pos);
        return true;
      }
      if (!read_some(timeout_ms - static_cast<int>(ms_since(t0)))) return false;
    }
  }

  // Everything the process writes on stdout until it closes it.
  std::string read_stdout_to_eof(int timeout_ms = 10000) {
    auto t0 = std::chrono::steady_clock::now();
    while (read_some(timeout_ms - static_cast<int>(ms_since(t0)))) {
    }
    return stdout_;
  }

  // Exit code (128 + signal for a killed server), or nullopt after `timeout_ms` (-1: wait forever).
  std::optional<int> wait_exit(int timeout_ms = 10000) {
    if (exited_) return status_;
    auto t0 = std::chrono::steady_clock::now();
    for (;;) {
      int st = 0;
      pid_t r = ::waitpid(pid_, &st, timeout_ms < 0 ? 0 : WNOHANG);
      if (r == pid_) {
        exited_ = true;
        status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        return status_;
      }
      if (timeout_ms >= 0 && ms_since(t0) > timeout_ms) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  void signal(int sig) { ::kill(pid_, sig); }

  bool wait_for_log(const std::string& needle, int timeout_ms = 10000) const {
    return eventually([&] { return log().find(needle) != std::string::npos; }, timeout_ms);
  }

 private:
  // Appends what stdout has within `left_ms`. False on EOF or timeout.
  bool read_some(int left_ms) {
    if (left_ms <= 0) return false;
    pollfd p{stdout_fd_, POLLIN, 0};
    int rc = ::poll(&p, 1, left_ms);
    if (rc < 0 && errno == EINTR) return true;  // the caller recomputes what is left
    if (rc <= 0) return false;
    char buf[512];
    ssize_t n = ::read(stdout_fd_, buf, sizeof buf);
    if (n <= 0) return false;  // EOF: the process closed stdout (exited)
    stdout_.append(buf, static_cast<std::size_t>(n));
    return true;
  }

  ServerConfig cfg_;
  std::string stderr_path_;
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string stdout_;
  std::string ready_line_;
  bool exited_ = false;
  int status_ = -1;
};

// Removes what a kill -9'd server of `cfg` leaves behind (a cleanly stopped one leaves nothing).
struct LeftoverCleaner {
  ServerConfig cfg;
  ~LeftoverCleaner() {
    ::unlink(cfg.shm_path().c_str());
    ::unlink(cfg.name_lock_path().c_str());
    // Heaps a successor refused and set aside (<name>.heap.rejected-<time>).
    glob_t g{};
    if (::glob((cfg.shm_path() + ".rejected-*").c_str(), 0, nullptr, &g) == 0)
      for (std::size_t i = 0; i < g.gl_pathc; ++i) ::unlink(g.gl_pathv[i]);
    ::globfree(&g);
  }
};

}  // namespace colors::test
