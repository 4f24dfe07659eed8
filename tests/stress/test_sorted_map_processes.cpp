// Ordered map stress: a real colors-server in --gc-debug mode (freed memory poisoned, the heap
// verified after every cycle) with a small heap, writer processes that each own the keys of one
// residue class of one shared sorted map, a reader that scans it, and kill -9 of writers at random
// instants (mostly inside a map operation, where they spend their time). A restarted writer takes
// what the map holds for its keys as its truth (its killed predecessor's last operation happened
// or not); from then on every few operations it checks that its keys hold exactly what it wrote.
// Values encode their key, so a scan detects any entry nobody wrote. A second reader reads through
// SortedMapView in read scopes, without the map's lock (gets and ranged reads: keys ascending,
// values encoding their keys), while nodes it reads are unlinked, freed and poisoned. At the end the full heap
// verifier checks the tree (levels, fill, order, separators, size).
//
// Runs SORTED_MAP_STRESS_SECS seconds (default 6). Children never return into Catch2.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <map>
#include <new>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "../integration/server_process.hpp"
#include "client_process.hpp"
#include "colors/colors.hpp"

using namespace colors;
using colors::test::fork_client;
using colors::test::ServerConfig;
using colors::test::ServerProcess;
using colors::test::TempDir;
using colors::test::wait_child;

namespace {

constexpr int kWriters = 3;
constexpr long long kKeys = 6000;
constexpr const char* kRepo = "sorted-map-stress";

struct Shared {
  std::atomic<int> stop{0};
  std::atomic<std::uint64_t> ops[kWriters];
  std::atomic<std::uint64_t> checks{0}, scans{0}, view_reads{0}, mismatches{0};
};

Shared* map_shared() {
  void* mem = ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mem != MAP_FAILED);
  return new (mem) Shared();
}

// A value written for key k: k * 1'000'000 + a serial below a million.
long long key_of_value(long long v) { return v / 1'000'000; }

std::map<long long, long long> owned(const SortedMap& sm, int w) {
  std::map<long long, long long> out;
  auto c = sm.cursor();
  while (auto e = c.next()) {
    long long k = e->first.as_int();
    if (k % kWriters == w) out[k] = e->second.as_int();
  }
  return out;
}

int writer(int w, Shared* sh, unsigned seed) {
  SortedMap sm(repository(kRepo).get());
  std::map<long long, long long> model = owned(sm, w);
  std::mt19937_64 rng(seed);
  long long serial = 0;
  while (!sh->stop.load()) {
    long long k = static_cast<long long>(rng() % (kKeys / kWriters)) * kWriters + w;
    if (rng() % 3 != 0) {
      long long v = k * 1'000'000 + (++serial % 1'000'000);
      sm.put(Value(k), Value(v));
      model[k] = v;
    } else {
      sm.remove(Value(k));
      model.erase(k);
    }
    sh->ops[w].fetch_add(1);
    if (serial % 200 == 0) {
      sh->checks.fetch_add(1);
      if (owned(sm, w) != model) {
        sh->mismatches.fetch_add(1);
        std::fprintf(stderr, "writer %d: its keys differ from what it wrote\n", w);
        return 10;
      }
    }
  }
  return 0;
}

int reader(Shared* sh) {
  SortedMap sm(repository(kRepo).get());
  while (!sh->stop.load()) {
    long long prev = -1;
    for (auto& [k, v] : sm.range({}, {})) {
      long long key = k.as_int();
      if (key <= prev || key_of_value(v.as_int()) != key) {
        sh->mismatches.fetch_add(1);
        std::fprintf(stderr, "reader: key %lld after %lld holds %lld\n", key, prev, static_cast<long long>(v.as_int()));
        return 10;
      }
      prev = key;
    }
    sh->scans.fetch_add(1);
  }
  return 0;
}

int view_reader(Shared* sh) {
  SortedMap sm(repository(kRepo).get());
  std::mt19937_64 rng(99);
  SortedMapView::Entry buf[64];
  while (!sh->stop.load()) {
    ReadScope scope;
    const SortedMapView view(sm);
    for (int i = 0; i < 16; ++i) {
      const auto k = static_cast<long long>(rng() % kKeys);
      const std::optional<ValueView> v = view.get(ValueView::integer(k));
      if (v && key_of_value(v->as_int()) != k) {
        sh->mismatches.fetch_add(1);
        std::fprintf(stderr, "view reader: get %lld gave %lld\n", k, static_cast<long long>(v->as_int()));
        return 10;
      }
    }
    const auto lo = static_cast<long long>(rng() % kKeys);
    const std::size_t n = view.read(SortedMapView::Bound::at(ValueView::integer(lo)), SortedMapView::Bound::none(), buf, 64);
    long long prev = lo - 1;
    for (std::size_t i = 0; i < n; ++i) {
      const long long key = buf[i].first.as_int();
      if (key <= prev || key_of_value(buf[i].second.as_int()) != key) {
        sh->mismatches.fetch_add(1);
        std::fprintf(stderr, "view reader: key %lld after %lld holds %lld\n", key, prev, static_cast<long long>(buf[i].second.as_int()));
        return 10;
      }
      prev = key;
    }
    sh->view_reads.fetch_add(1);
  }
  return 0;
}

}  // namespace

TEST_CASE("sorted map: writers killed with SIGKILL mid-operation under a running collector leave a whole tree") {
  int secs = 6;
  if (const char* s = std::getenv("SORTED_MAP_STRESS_SECS")) secs = std::max(1, std::atoi(s));
  TempDir dir;
  ServerConfig cfg = ServerConfig::fresh(dir.path());
  ServerProcess server(cfg, cfg.args({"--heap-size", "32M", "--gc-debug"}), dir.path() + "/server.log");
  REQUIRE(server.wait_ready());
  Shared* sh = map_shared();
  REQUIRE(wait_child(fork_client(cfg.socket, [] {
            repository(kRepo).set(new_sorted_map());
            return 0;
          })) == 0);

  std::vector<pid_t> writers(kWriters);
  unsigned seed = 1;
  for (int w = 0; w < kWriters; ++w) writers[w] = fork_client(cfg.socket, [w, sh, s = seed++] { return writer(w, sh, s); });
  pid_t rd = fork_client(cfg.socket, [sh] { return reader(sh); });
  pid_t view_rd = fork_client(cfg.socket, [sh] { return view_reader(sh); });

  std::mt19937 rng(5);
  int kills = 0;
  std::vector<int> bad;
  auto t0 = std::chrono::steady_clock::now();
  while (colors::test::ms_since(t0) < secs * 1000LL && sh->mismatches.load() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50 + rng() % 200));
    int w = static_cast<int>(rng() % kWriters);
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(writers[w]), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid != 0) {
      bad.push_back(wait_child(writers[w]));  // it exited on its own: a failure
      break;
    }
    ::kill(writers[w], SIGKILL);
    REQUIRE(wait_child(writers[w]) == 128 + SIGKILL);
    ++kills;
    writers[w] = fork_client(cfg.socket, [w, sh, s = seed++] { return writer(w, sh, s); });
  }
  sh->stop = 1;
  for (pid_t p : writers) bad.push_back(wait_child(p));
  bad.push_back(wait_child(rd));
  bad.push_back(wait_child(view_rd));
  const bool cycles_ran = server.log().find("gc cycle ") != std::string::npos;
  std::uint64_t ops = 0;
  for (auto& o : sh->ops) ops += o.load();
  std::printf("sorted map stress: %d kills, %llu operations, %llu owner checks, %llu scans, %llu view reads, collector cycles seen: %s\n",
              kills, static_cast<unsigned long long>(ops), static_cast<unsigned long long>(sh->checks.load()),
              static_cast<unsigned long long>(sh->scans.load()), static_cast<unsigned long long>(sh->view_reads.load()),
              cycles_ran ? "yes" : "no");
  std::fflush(stdout);
  INFO("kills " << kills << ", operations " << ops << ", checks " << sh->checks.load() << ", scans " << sh->scans.load()
                << ", view reads " << sh->view_reads.load() << "; server log:\n"
                << server.log().substr(0, 3000));
  REQUIRE(sh->mismatches.load() == 0);
  for (int rc : bad) REQUIRE(rc == 0);
  REQUIRE(kills > 5);
  REQUIRE(sh->checks.load() > 0);
  REQUIRE(sh->view_reads.load() > 0);

  attach(cfg.socket);
  {
    SortedMap sm(repository(kRepo).get());
    // The first operation after the last kill repairs the size if that writer died before it.
    std::size_t n = sm.size();
    auto items = sm.items();
    REQUIRE(items.size() == n);
    for (auto& [k, v] : items) REQUIRE(key_of_value(v.as_int()) == k.as_int());
  }
  collect(30000);
  collect(30000);
  VerifyResult v = verify_heap();
  detach();
  INFO(v.report);
  REQUIRE(v.ok);
  std::string log = server.log();
  auto pos = log.find("gc debug: heap verifier");
  INFO("verifier warning in the server log: " << (pos == std::string::npos ? "" : log.substr(pos, 2000)));
  REQUIRE(pos == std::string::npos);
  REQUIRE(cycles_ran);  // the collector ran while the writers did
  ::munmap(sh, sizeof(Shared));
}
