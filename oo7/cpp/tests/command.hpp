// Runs a program as a child process for the OO7 tests: its stdout and stderr go to files, so that
// several children can run at once and be waited for in any order.
#pragma once
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace oo7::test {

struct Finished {
  int exit_code = -1;  // 128 + signal when killed; -1 on timeout (then killed)
  std::string out, err;
};

class Command {
 public:
  // Starts argv[0] (a path) with `env` added to this process's environment ("NAME=value").
  Command(const std::vector<std::string>& argv, const std::vector<std::string>& env, const std::string& out_prefix)
      : out_path_(out_prefix + ".out"), err_path_(out_prefix + ".err") {
    std::vector<std::string> args = argv;
    std::vector<char*> cargv;
    for (auto& a : args) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    std::vector<std::string> envs = env;
    int out = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int err = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0 || err < 0) throw std::runtime_error("cannot create " + out_path_);
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      for (auto& e : envs) ::putenv(e.data());
      ::dup2(out, STDOUT_FILENO);
      ::dup2(err, STDERR_FILENO);
      ::execv(cargv[0], cargv.data());
      ::_exit(127);
    }
    ::close(out);
    ::close(err);
  }
  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;
  ~Command() {
    if (pid_ > 0 && !done_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  void signal(int sig) { ::kill(pid_, sig); }
  // What the process wrote on stdout so far.
  std::string out_so_far() const { return slurp(out_path_); }

  Finished wait(int timeout_ms = 120000) {
    Finished f;
    auto t0 = std::chrono::steady_clock::now();
    for (;;) {
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        f.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        break;
      }
      if (std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(timeout_ms)) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &st, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    done_ = true;
    f.out = slurp(out_path_);
    f.err = slurp(err_path_);
    return f;
  }

 private:
  static std::string slurp(const std::string& path) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }
  std::string out_path_, err_path_;
  pid_t pid_ = -1;
  bool done_ = false;
};

}  // namespace oo7::test
