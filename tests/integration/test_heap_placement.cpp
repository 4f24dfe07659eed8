// Placement in the objects space, against a real colors-server: a client fills the heap with
// objects of every size while another process keeps small objects it allocates meanwhile; the
// filler is killed with SIGKILL. Once the server reclaimed it and the collector freed its objects,
// one allocation of 90% of the free memory must succeed: the survivors' small objects may not
// pepper the space the dead client's large objects occupied, and free space must coalesce across
// the collector's partitions.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "client_process.hpp"
#include "colors/colors.hpp"
#include "server_process.hpp"

using namespace colors;
using colors::test::eventually;
using colors::test::ServerConfig;
using colors::test::ServerProcess;
using colors::test::TempDir;

namespace {

struct Control {
  std::atomic<std::uint64_t> filled;  // bytes the filler holds
  std::atomic<int> full;              // the filler got OutOfMemoryError and holds everything
};

Control* shared_control() {
  void* mem = ::mmap(nullptr, sizeof(Control), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mem != MAP_FAILED);
  std::memset(mem, 0, sizeof(Control));
  return new (mem) Control;
}

// Log-uniform in [lo, hi].
std::size_t log_uniform(std::mt19937_64& rng, double lo, double hi) {
  std::uniform_real_distribution<double> d(std::log(lo), std::log(hi));
  return static_cast<std::size_t>(std::exp(d(rng)));
}

const std::vector<std::uint8_t>& zeros() {
  static const std::vector<std::uint8_t> z(16u << 20, 0);
  return z;
}

}  // namespace

TEST_CASE("placement: after a client that filled the heap is killed, one allocation takes 90% of the free memory") {
  TempDir dir;
  ServerConfig cfg = ServerConfig::fresh(dir.path());
  // Two collector threads: 16 sweep partitions, as on the machine the finding came from.
  ServerProcess server(cfg, cfg.args({"--heap-size", "128M", "--gc-threads", "2"}), dir.path() + "/server.log");
  REQUIRE(server.wait_ready());
  Control* c = shared_control();
  const std::uint64_t kHeap = 128u << 20;

  // The filler: objects of 16 B to 4 MiB (log-uniform), all kept, until the heap is full.
  pid_t filler = colors::test::fork_client(cfg.socket, [&]() -> int {
    std::mt19937_64 rng(8);
    List keep = new_list();
    try {
      for (;;) {
        std::size_t n = log_uniform(rng, 16, 4 << 20);
        keep.append(new_binary(zeros().data(), n));
        c->filled.fetch_add(n);
      }
    } catch (const OutOfMemoryError&) {
    }
    c->full.store(1);
    for (;;) ::pause();  // until killed
  });
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      int st = 0;
      if (::waitpid(pid, &st, WNOHANG) == 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &st, 0);
      }
    }
  } reaper{filler};

  // The survivor (this process): small strings, allocated while the filler runs, 1/32 of what it
  // allocated, until the heap is three quarters full. Their list is allocated at full size first:
  // a large object that survives where the filler's objects were would split the free space
  // (objects never move; heap.hpp, "Placement").
  attach(cfg.socket);
  struct Detach {
    ~Detach() {
      if (is_attached()) detach();
    }
  } detach_at_end;
  std::mt19937_64 rng(9);
  constexpr std::size_t kMaxSurvivors = 1 << 17;
  List survivors = new_list(kMaxSurvivors);
  std::uint64_t kept = 0, checksum = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (c->full.load() == 0) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);  // the filler died or hangs
    const std::uint64_t filled = c->filled.load();
    if (filled < kHeap * 3 / 4 && kept * 32 < filled && survivors.size() < kMaxSurvivors) {
      std::size_t n = log_uniform(rng, 8, 200);
      std::string s(n, static_cast<char>('a' + kept % 26));
      survivors.append(Value(s));
      kept += n;
      checksum += n * static_cast<unsigned char>(s[0]);
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  ::kill(filler, SIGKILL);
  REQUIRE(colors::test::wait_child(filler, 10000) == 128 + SIGKILL);
  REQUIRE(server.wait_for_log("died", 10000));

  // Its TLABs are reclaimed at once; its objects, whose roots the server dropped, by the second
  // cycle after that (the dropped roots are pending for the first).
  std::uint64_t free_before = 0;
  REQUIRE(eventually(
      [&] {
        collect(30000);
        HeapStats hs = heap_stats();
        bool stable = hs.free_bytes == free_before;
        free_before = hs.free_bytes;
        return stable && hs.free_bytes > kHeap / 2;
      },
      30000));
  HeapStats hs = heap_stats();
  const std::size_t want = hs.free_bytes / 10 * 9;
  std::printf("placement: filler held %.1f MiB, survivors %.2f MiB in %zu strings; free %.1f MiB in %zu chunks, largest %.1f MiB\n",
              c->filled.load() / 1048576.0, kept / 1048576.0, survivors.size(), hs.free_bytes / 1048576.0, hs.free_chunks,
              hs.largest_free / 1048576.0);
  INFO("free " << hs.free_bytes << " B in " << hs.free_chunks << " chunks, largest " << hs.largest_free << " B");
  {
    std::vector<std::uint8_t> big(want - 64, 0x5a);
    Value v;
    REQUIRE_NOTHROW(v = new_binary(big));
    REQUIRE(v.kind() == TypeKind::kBinary);
  }
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < survivors.size(); ++i) {
    std::string s = survivors.get(i).as_string();
    sum += s.size() * static_cast<unsigned char>(s[0]);
  }
  REQUIRE(sum == checksum);
  survivors = List();
  collect(30000);
  VerifyResult vr = verify_heap();
  INFO(vr.report);
  REQUIRE(vr.ok);
  ::munmap(c, sizeof(Control));
}
