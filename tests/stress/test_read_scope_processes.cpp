// Read scopes across processes (libshared/src/read_scope.hpp, gc/README.md "Read scopes"), for
// reading and for allocating: a real
// colors-server with a 16 MiB heap in --gc-debug mode (freed memory poisoned, heap verified after
// every cycle), one writer process that keeps replacing a published chain of nodes (so what the
// readers borrowed becomes garbage while they read it, and cycles run back to back), and reader
// processes that walk the chain through views inside read scopes, pausing mid-walk so that cycles
// begin during their scopes (some pauses outlast two cycles), promote nodes and check them after
// later cycles. Every node carries
// its value twice (an integer and its decimal string), so a freed node read through a view shows
// up as a mismatch. One reader is killed with SIGKILL inside its scope again and again: the server
// must release its scope word with the rest of its roots, and the collector must go on.
//
// Children never return into Catch2 (they _exit) and every wait is bounded.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "colors/colors.hpp"
#include "../integration/server_process.hpp"
#include "client_process.hpp"

using namespace colors;
using colors::test::ServerConfig;
using colors::test::ServerProcess;
using colors::test::TempDir;
using colors::test::fork_client;
using colors::test::wait_child;
using namespace std::chrono_literals;

namespace {

constexpr int kSeconds = 12;       // how long the processes run
constexpr int kChain = 200;        // nodes per published chain
constexpr int kKills = 6;          // times the victim reader is killed inside a scope

struct Shared {
  std::atomic<int> stop{0};
  std::atomic<std::uint64_t> published{0}, scoped_full{0}, walks{0}, nodes_read{0}, promoted_checked{0}, mismatches{0};
  std::atomic<int> victim_in_scope{0};
};

Shared* map_shared() {
  void* mem = ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mem != MAP_FAILED);
  return new (mem) Shared();
}

Class node_class() {
  return define_class("rs.Node", {{"v", TypeKind::kInteger, ""}, {"s", TypeKind::kString, ""}, {"next", TypeKind::kAny, ""}});
}

// Publishes a fresh chain of kChain nodes after another, each replacing the last: the old chain
// becomes garbage the moment the repository is overwritten. Every other chain is allocated in a
// read scope (no root per node, the fields written at birth) and promoted whole to be published.
int writer(Shared* sh) {
  Class cls = node_class();
  Field v(cls, "v"), s(cls, "s"), next(cls, "next");
  Repository repo = repository("rs.chain");
  std::int64_t base = 0;
  for (std::uint64_t round = 0; sh->stop.load() == 0; ++round) {
    if (round % 2 == 0) {  // through the rooted API
      Object head;
      for (int i = kChain - 1; i >= 0; --i) {
        Object n = new_object(cls);
        const std::int64_t value = base + i;
        n.set(v, Value(value));
        n.set(s, Value(std::to_string(value)));
        n.set(next, head);
        head = std::move(n);
      }
      repo.set(head);
    } else {  // allocated in a scope, unrooted, linked at birth; the head promoted to publish it
      try {
        ReadScope scope;
        ObjectView head;
        for (int i = kChain - 1; i >= 0; --i) {
          const std::int64_t value = base + i;
          head = new_object_view(cls, {{v, ValueView::integer(value)}, {s, new_string_view(std::to_string(value))}, {next, head}});
          if (i % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));  // cycles begin meanwhile
        }
        repo.set(head.promote());
      } catch (const OutOfMemoryError&) {
        // The heap filled while the readers' scopes held the collector back, and a scope cannot
        // wait for a cycle: the chain is garbage; the next round (rooted) waits for one.
        sh->scoped_full++;
        continue;
      }
    }
    base += kChain;
    sh->published++;
  }
  return 0;
}

// Walks the published chain inside a read scope, pausing now and then inside the scope; keeps a
// few promoted nodes and checks them after later walks (and so after later cycles).
int reader(Shared* sh, bool victim) {
  Class cls = node_class();
  Field v(cls, "v"), s(cls, "s"), next(cls, "next");
  Repository repo = repository("rs.chain");
  std::vector<std::pair<Object, std::int64_t>> kept;
  unsigned walk = 0;
  auto check = [&](const ObjectView& n, std::int64_t& value) {
    value = n.get(v).as_int();
    if (n.get(s).string_view() != std::to_string(value)) {
      sh->mismatches++;
      std::fprintf(stderr, "reader %d: node %lld reads '%.*s'\n", ::getpid(), static_cast<long long>(value),
                   static_cast<int>(n.get(s).string_view().size()), n.get(s).string_view().data());
      return false;
    }
    return true;
  };
  while (sh->stop.load() == 0) {
    Value head = repo.get();
    if (head.is_null()) {
      std::this_thread::sleep_for(1ms);
      continue;
    }
    ReadScope scope;
    if (victim) sh->victim_in_scope.store(1);
    ObjectView n = ObjectView(Object(head));
    head = Value();  // the scope alone keeps the chain now, once the writer replaces it
    std::int64_t first = 0, value = 0;
    int i = 0;
    for (; !n.is_null(); ++i) {
      if (!check(n, value)) return 10;
      if (i == 0) first = value;
      if (value != first + i) {
        sh->mismatches++;
        std::fprintf(stderr, "reader %d: node %d of a chain from %lld holds %lld\n", ::getpid(), i, static_cast<long long>(first),
                     static_cast<long long>(value));
        return 10;
      }
      if (i % 50 == 25) std::this_thread::sleep_for(std::chrono::microseconds(victim ? 2000 : 300));
      // Now and then a pause longer than two cycles (about 80 ms each here), so that without
      // the collector's wait the chain would be freed under the walk.
      if (i == 150 && walk % 8 == 3) std::this_thread::sleep_for(250ms);
      if (i == 100 && walk % 7 == 0 && kept.size() < 16) kept.emplace_back(n.promote(), value);
      sh->nodes_read++;
      ValueView nx = n.get(next);
      n = nx.is_null() ? ObjectView() : nx.as_object();
    }
    if (victim) sh->victim_in_scope.store(0);
    if (i != kChain) {
      sh->mismatches++;
      std::fprintf(stderr, "reader %d: a chain of %d nodes\n", ::getpid(), i);
      return 10;
    }
    sh->walks++;
    ++walk;
    for (auto& [o, want] : kept) {
      if (o.get(v).as_int() != want || o.get(s).as_string() != std::to_string(want)) {
        sh->mismatches++;
        std::fprintf(stderr, "reader %d: a promoted node lost its value %lld\n", ::getpid(), static_cast<long long>(want));
        return 10;
      }
      sh->promoted_checked++;
    }
    if (kept.size() >= 16) kept.erase(kept.begin(), kept.begin() + 8);
  }
  return 0;
}

}  // namespace

TEST_CASE("read scopes under a churning writer, cycles back to back and readers killed inside their scopes") {
  TempDir dir;
  ServerConfig cfg = ServerConfig::fresh(dir.path());
  ServerProcess server(cfg, cfg.args({"--heap-size", "16M", "--gc-debug"}), dir.path() + "/server.log");
  REQUIRE(server.wait_ready());
  attach(cfg.socket);
  const std::uint64_t cycles_before = gc_stats().cycle;

  Shared* sh = map_shared();
  pid_t w = fork_client(cfg.socket, [sh] { return writer(sh); });
  pid_t r = fork_client(cfg.socket, [sh] { return reader(sh, false); });
  // The victim: killed while inside a scope, then replaced by a new one, kKills times.
  int kills = 0;
  std::vector<std::uint64_t> cycles_after_kill;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kSeconds);
  pid_t victim = fork_client(cfg.socket, [sh] { return reader(sh, true); });
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(kSeconds * 1000 / (kKills + 2)));
    if (kills < kKills) {
      const bool in = colors::test::eventually([&] { return sh->victim_in_scope.load() == 1; }, 2000);
      ::kill(victim, SIGKILL);
      ::waitpid(victim, nullptr, 0);
      ++kills;
      INFO("the victim was " << (in ? "" : "not ") << "inside a scope when killed");
      cycles_after_kill.push_back(gc_stats().cycle);
      victim = fork_client(cfg.socket, [sh] { return reader(sh, true); });
    }
  }
  sh->stop = 1;
  const int rc_w = wait_child(w, 30000), rc_r = wait_child(r, 30000), rc_v = wait_child(victim, 30000);
  const std::uint64_t cycles = gc_stats().cycle - cycles_before;
  std::printf("read scopes: %llu chains published (%llu scoped ones given up on a full heap), %llu walks, %llu nodes read, %llu promoted checks, %llu cycles, %d kills\n",
              (unsigned long long)sh->published.load(), (unsigned long long)sh->scoped_full.load(), (unsigned long long)sh->walks.load(),
              (unsigned long long)sh->nodes_read.load(), (unsigned long long)sh->promoted_checked.load(),
              (unsigned long long)cycles, kills);
  INFO("server log:\n" << server.log().substr(0, 4000));
  REQUIRE(sh->mismatches.load() == 0);
  REQUIRE(rc_w == 0);
  REQUIRE(rc_r == 0);
  REQUIRE(rc_v == 0);
  REQUIRE(kills == kKills);
  REQUIRE(sh->walks.load() > 20);
  REQUIRE(sh->promoted_checked.load() > 0);
  // Cycles ran during the walks (about 150 in 12 s here alone; 10 under ASan on a loaded machine,
  // the long pauses holding each one back for a quarter of a second).
  REQUIRE(cycles >= 4);
  // The collector went on after the last kill: a dead client's scope word does not hold it.
  REQUIRE(collect(30000).cycle > cycles_after_kill.back());
  VerifyResult v{false, ""};
  const bool ok = colors::test::eventually([&] { return (v = verify_heap()).ok; }, 10000);
  INFO(v.report);
  REQUIRE(ok);
  detach();
  // The server verified the heap after every cycle (--gc-debug): any warning it logged fails.
  const std::string log = server.log();
  const auto pos = log.find("gc debug: heap verifier");
  INFO("verifier warning in the server log: " << (pos == std::string::npos ? "" : log.substr(pos, 2000)));
  REQUIRE(pos == std::string::npos);
  ::munmap(sh, sizeof(Shared));
}
