// Captures that copy only the pages the kernel saw written (colors-server/written_pages.hpp, and
// checkpointer.hpp for the passes and the capture without a stop): a restored heap must be the
// heap of one instant while clients write through it, detach and reattach, or write untracked.
//
// The witness: a "sweeper" writes round k into counters that sit one per page, in ascending
// order, again and again. At every instant they read k+1, ..., k+1, k, ..., k: never increasing,
// the first at most one above the last. An image that mixes pages of different instants (a page
// written but not listed, a copy torn by a write) breaks that.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "colors/colors.hpp"
#include "colors/errors.hpp"
#include "segment.hpp"
#include "write_tracking.hpp"
#include "server_process.hpp"
#include "server_test_util.hpp"

using namespace colors::test;

namespace {

constexpr std::size_t kStride = 512;  // list slots per 4 KiB page: one counter per page
constexpr std::size_t kCounters = 96;

void make_counters(const std::string& name) {
  colors::List list = colors::new_list();
  for (std::size_t i = 0; i < kCounters * kStride; ++i) list.append(colors::Value(std::int64_t{0}));
  colors::repository(name).set(list);
}

// "" when the counters of `name` are those of one instant, else what is wrong.
std::string check_instant(const std::string& name) {
  colors::List list(colors::repository(name).get());
  std::vector<std::int64_t> c;
  for (std::size_t j = 0; j < kCounters; ++j) c.push_back(list.get(j * kStride).as_int());
  for (std::size_t j = 1; j < kCounters; ++j) {
    if (c[j] > c[j - 1] || c[0] - c[kCounters - 1] > 1) {
      std::string all;
      for (std::int64_t v : c) all += std::to_string(v) + " ";
      return name + " is not of one instant: " + all;
    }
  }
  if (c[0] == 0) return name + " was never written";
  return "";
}

// Sweeps the counters of `name` forever; with `churn`, detaches and attaches again after each
// round (a detach replaces the mapping, and its record of writes with it).
[[noreturn]] void sweep_forever(const std::string& socket, const std::string& name, bool tracked, bool churn) {
  try {
    if (!tracked) ::setenv("COLORS_WRITE_TRACKING", "off", 1);
    colors::attach(socket);
    for (std::int64_t k = 1;; ++k) {
      colors::List list(colors::repository(name).get());
      for (std::size_t j = 0; j < kCounters; ++j) list.set(j * kStride, colors::Value(k));
      if (churn) {
        list = colors::List();
        colors::detach();
        colors::attach(socket);
      }
    }
  } catch (const std::exception&) {
    ::_exit(3);  // the server died under it: the test kills it anyway
  }
}

// Transactions, each waiting for its log record (--durability full): records all the time.
[[noreturn]] void commit_forever(const std::string& socket) {
  try {
    colors::attach(socket);
    colors::List list(colors::repository("wt.commits").get());
    for (std::int64_t n = 1;; ++n) colors::atomically([&] { list.set(0, colors::Value(n)); });
  } catch (const std::exception&) {
    ::_exit(3);
  }
}

pid_t spawn(const std::function<void()>& body) {
  pid_t k = ::fork();
  REQUIRE(k >= 0);
  if (k == 0) {
    body();
    ::_exit(0);
  }
  return k;
}

enum class Second { kTracked, kUntracked, kChurning };

// Two sweepers (the second as `second` says), a committer and checkpoints for `millis`, then a
// reboot; returns the first server's log. Every list must be of one instant in the restored heap.
std::string run_and_reboot(Second second, int millis) {
  TempDir data;
  const std::vector<std::string> flags = {"--data-dir", data.path() + "/d", "--checkpoint-interval", "0",
                                          "--durability", "full", "--log-level", "debug"};
  Running r(flags);
  const std::vector<std::string> names = {"wt.a", "wt.b"};
  {
    Attached a(r.cfg);
    for (const std::string& n : names) make_counters(n);
    colors::List commits = colors::new_list();
    commits.append(colors::Value(std::int64_t{0}));
    colors::repository("wt.commits").set(commits);
  }
  const std::string socket = r.cfg.socket;
  std::vector<pid_t> kids;
  kids.push_back(spawn([&] { sweep_forever(socket, "wt.a", true, false); }));
  kids.push_back(spawn([&] { sweep_forever(socket, "wt.b", second != Second::kUntracked, second == Second::kChurning); }));
  kids.push_back(spawn([&] { commit_forever(socket); }));
  {
    Attached a(r.cfg);
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(millis);
    while (std::chrono::steady_clock::now() < end) {
      (void)colors::checkpoint();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  // The reboot, in the middle of the writes: the log's records follow the last checkpoint.
  reboot(*r.server, r.cfg);
  for (pid_t k : kids) ::kill(k, SIGKILL);
  for (pid_t k : kids) ::waitpid(k, nullptr, 0);
  const std::string log = r.server->log();
  ServerProcess next(r.cfg, r.cfg.args(flags), r.dir.path() + "/next.log");
  REQUIRE(next.wait_ready());
  INFO(next.log());
  CHECK(next.log().find("log record(s)") != std::string::npos);
  Attached a(r.cfg);
  for (const std::string& n : names) {
    const std::string why = check_instant(n);
    INFO(log);
    CHECK(why == "");
  }
  colors::VerifyResult v = colors::verify_heap();
  INFO(v.report);
  CHECK(v.ok);
  return log;
}

}  // namespace

TEST_CASE("write tracking: checkpoints and log records of clients writing restore one instant",
          "[server][durability][tracking]") {
  const std::string log = run_and_reboot(Second::kTracked, 2000);
  // The captures relied on the scans: written pages copied in a stop, or no stop at all.
  CHECK(log.find("written page(s) copied") != std::string::npos);
  CHECK(log.find("not tracked") == std::string::npos);
}

TEST_CASE("write tracking: a client that detaches and attaches again after each round of writes",
          "[server][durability][tracking]") {
  const std::string log = run_and_reboot(Second::kChurning, 2000);
  // Its detaches made the captures after them compare: seen as the slot's gap, as its departure,
  // or as its mapping no longer tracked, whichever came first.
  CHECK((log.find("a client detached since the last scan") != std::string::npos ||
         log.find("a client left since the last scan") != std::string::npos ||
         log.find("not a tracked mapping: a detach") != std::string::npos));
}

TEST_CASE("write tracking: a client whose writes are not tracked makes every capture copy or compare every page",
          "[server][durability][tracking]") {
  const std::string log = run_and_reboot(Second::kUntracked, 1500);
  CHECK(log.find("not a tracked mapping") != std::string::npos);
  CHECK(log.find("written page(s) copied") == std::string::npos);
}

TEST_CASE("write tracking: a client that unmaps the segment itself makes the captures compare, not trust an empty scan",
          "[server][durability][tracking]") {
  TempDir data;
  Running r({"--data-dir", data.path() + "/d", "--checkpoint-interval", "0", "--log-level", "debug"});
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const ServerConfig cfg = r.cfg;
  pid_t kid = spawn([&] {
    ::close(ready[0]);
    colors::attach(cfg.socket);
    // The segment's whole mapping, as /proc/self/maps lists it: unmapped behind the library's back.
    std::ifstream maps("/proc/self/maps");
    for (std::string line; std::getline(maps, line);) {
      unsigned long from = 0, to = 0;
      if (std::sscanf(line.c_str(), "%lx-%lx", &from, &to) == 2 && from == cfg.address) ::munmap(reinterpret_cast<void*>(from), to - from);
    }
    char b = 1;
    (void)::write(ready[1], &b, 1);
    ::pause();
  });
  ::close(ready[1]);
  char b = 0;
  REQUIRE(::read(ready[0], &b, 1) == 1);
  ::close(ready[0]);
  {
    Attached a(r.cfg);
    (void)colors::checkpoint();
    (void)colors::checkpoint();
  }
  ::kill(kid, SIGKILL);
  ::waitpid(kid, nullptr, 0);
  INFO(r.server->log());
  CHECK(r.server->log().find("client process " + std::to_string(kid) + ": the segment is not mapped there") !=
        std::string::npos);
}

TEST_CASE("write tracking: a fork child's inherited mapping is private, so its raw writes never reach the heap",
          "[server][durability][tracking]") {
  Running r;
  Attached a(r.cfg);
  // The last byte of the objects space: free memory in a fresh heap.
  auto* spot = reinterpret_cast<volatile unsigned char*>(colors::detail::current_meta()->objects_end - 1);
  const unsigned char before = *spot;
  int wrote[2], done[2];
  REQUIRE(::pipe(wrote) == 0);
  REQUIRE(::pipe(done) == 0);
  pid_t kid = ::fork();
  REQUIRE(kid >= 0);
  if (kid == 0) {
    *spot = static_cast<unsigned char>(before ^ 0x5a);  // neither tracked nor stopped: must stay here
    char b = 1;
    (void)::write(wrote[1], &b, 1);
    (void)::read(done[0], &b, 1);
    ::_exit(*spot == static_cast<unsigned char>(before ^ 0x5a) ? 0 : 1);  // its own view has it
  }
  char b = 0;
  REQUIRE(::read(wrote[0], &b, 1) == 1);
  const unsigned char seen = *spot;
  *spot = before;  // in case it did reach the heap
  REQUIRE(::write(done[1], &b, 1) == 1);
  int st = 0;
  REQUIRE(::waitpid(kid, &st, 0) == kid);
  CHECK(seen == before);
  CHECK((WIFEXITED(st) && WEXITSTATUS(st) == 0));
}

TEST_CASE("write tracking: COLORS_WRITE_TRACKING off or an unknown value leaves a mapping untracked and says why",
          "[durability][tracking]") {
  const std::size_t n = 16 * 4096;
  void* p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(p != MAP_FAILED);
  const auto track = [&](const char* value, std::string& why) {
    if (value == nullptr)
      ::unsetenv("COLORS_WRITE_TRACKING");
    else
      ::setenv("COLORS_WRITE_TRACKING", value, 1);
    const int fd = colors::detail::track_writes(p, n, &why);
    ::unsetenv("COLORS_WRITE_TRACKING");
    if (fd >= 0) ::close(fd);
    return fd >= 0;
  };
  std::string why;
  CHECK(track(nullptr, why));
  CHECK(track("on", why));
  CHECK_FALSE(track("off", why));
  CHECK(why == "COLORS_WRITE_TRACKING=off");
  CHECK_FALSE(track("0", why));
  CHECK(why == "COLORS_WRITE_TRACKING=0 is neither on nor off: not tracked");
  ::munmap(p, n);
}
