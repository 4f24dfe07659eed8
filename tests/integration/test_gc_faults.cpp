// Fault tests of the concurrent collector, each with its own colors-server on a small heap:
//  a. a mutator killed with SIGKILL in the middle of a cycle;
//  b. a mutator stopped (SIGSTOP) for several cycles while it holds graphs, then continued;
//  c. the only reference to a large graph dropped: the memory comes back within two cycles;
//  d. allocation loops: garbage never runs out of memory (the allocator waits for cycles), keeping
//     everything live does, with a clear message, and nobody else is hurt.
// Client processes are forked before the test process attaches; they coordinate with it through
// a control block in anonymous shared memory, never return into Catch2 (_exit), and every wait
// is bounded.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "colors/colors.hpp"
#include "gc_graphs.hpp"
#include "segment.hpp"  // detail::current_meta(): gc_started_seq / gc_done_seq (mid-cycle kill)
#include "client_process.hpp"
#include "server_process.hpp"

using namespace colors;
using namespace colors::test::gcg;
using colors::test::eventually;
using colors::test::ServerConfig;
using colors::test::ServerProcess;
using colors::test::TempDir;

namespace {

using clock_type = std::chrono::steady_clock;
constexpr int kChildTimeoutMs = 120'000;

constexpr int kMaxKids = 4;
struct Control {
  std::atomic<int> stop[kMaxKids];       // parent -> child: finish and exit
  std::atomic<int> go[kMaxKids];         // parent -> child: next phase
  std::atomic<int> ready[kMaxKids];      // child -> parent: phase reached
  std::atomic<std::uint64_t> rounds[kMaxKids];      // full check rounds / loop iterations
  std::atomic<std::uint64_t> checks[kMaxKids], mismatches[kMaxKids], bytes[kMaxKids], held_bytes[kMaxKids];
  std::atomic<std::uint64_t> ooms[kMaxKids];
  char message[1024];
};

struct SharedControl {
  Control* c;
  SharedControl() {
    void* mem = ::mmap(nullptr, sizeof(Control), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    REQUIRE(mem != MAP_FAILED);
    std::memset(mem, 0, sizeof(Control));
    c = new (mem) Control;
  }
  ~SharedControl() { ::munmap(c, sizeof(Control)); }
  Control* operator->() { return c; }
  Control& operator*() { return *c; }
};

using colors::test::fork_client;
int wait_child(pid_t pid, int timeout_ms = kChildTimeoutMs) { return colors::test::wait_child(pid, timeout_ms); }

// Kills whatever children are still around when a REQUIRE fails, so the next test starts clean.
struct Kids {
  std::vector<pid_t> pids;
  ~Kids() {
    for (pid_t p : pids) {
      int st = 0;
      if (::waitpid(p, &st, WNOHANG) == 0) {
        ::kill(p, SIGKILL);
        ::waitpid(p, &st, 0);
      }
    }
  }
  pid_t add(pid_t p) {
    pids.push_back(p);
    return p;
  }
};

struct Fixture {
  TempDir dir;
  ServerConfig cfg = ServerConfig::fresh(dir.path());
  std::unique_ptr<ServerProcess> server;
  explicit Fixture(const std::vector<std::string>& extra) {
    server = std::make_unique<ServerProcess>(cfg, cfg.args(extra), dir.path() + "/server.log");
    REQUIRE(server->wait_ready());
  }
  ~Fixture() {
    if (is_attached()) detach();
  }
  // Waits until the heap verifies (dead clients are reclaimed asynchronously). verify_heap() must
  // not overlap a collector cycle (a cycle still running after the last mutator exited sweeps and
  // poisons blocks the verifier is reading: it crashed so, see the report to the lead), so a
  // requested cycle finishes first; with no mutator left, nothing starts another one.
  void require_heap_verifies() {
    collect(30000);
    VerifyResult v{false, ""};
    bool ok = eventually([&] { return (v = verify_heap()).ok; }, 10000);
    INFO(v.report);
    REQUIRE(ok);
  }
};

// Polls until `pred` holds; false after `timeout_ms`.
template <class P>
bool wait_for(P pred, int timeout_ms) {
  return eventually(pred, timeout_ms);
}

// Graphs held by one process with their checksums.
class Holder {
 public:
  Holder(int idx, Control& c, std::uint64_t seed) : idx_(idx), c_(c), rng_(seed), b_(kit_, rng_) {}

  void build(Kind kind, int scale) {
    Built g = b_.any(kind, scale);
    add(std::move(g), kind);
  }
  void add(Built g, Kind kind) {
    Held h;
    h.root = std::move(g.root);
    h.kind = kind;
    h.sum = g.sum;
    h.bytes = g.bytes;
    h.origin = "built";
    held_bytes_ += h.bytes;
    held_.push_back(std::move(h));
    check(held_.size() - 1);
  }
  bool check(std::size_t i) {
    const Held& g = held_[i];
    std::uint64_t s = 0;
    std::string err;
    try {
      s = checksum(kit_, g.root);
    } catch (const std::exception& e) {
      err = e.what();
    }
    c_.checks[idx_]++;
    if (err.empty() && s == g.sum) return true;
    c_.mismatches[idx_]++;
    std::fprintf(stderr, "client %d (pid %d): MISMATCH in %s graph at 0x%llx: %s (checksum %016llx, expected %016llx)\n", idx_,
                 getpid(), kind_name(g.kind), static_cast<unsigned long long>(g.root.raw()), err.c_str(),
                 static_cast<unsigned long long>(s), static_cast<unsigned long long>(g.sum));
    return false;
  }
  // Checks everything; returns the number of broken graphs.
  int check_all() {
    int bad = 0;
    for (std::size_t i = 0; i < held_.size(); ++i) bad += check(i) ? 0 : 1;
    c_.rounds[idx_]++;
    return bad;
  }
  void drop_random() {
    if (held_.empty()) return;
    std::size_t i = rng_.below(held_.size());
    held_bytes_ -= std::min(held_bytes_, held_[i].bytes);
    std::swap(held_[i], held_.back());
    held_.pop_back();
  }
  void mutate_random() {
    if (held_.empty()) return;
    std::size_t i = rng_.below(held_.size());
    if (!check(i)) return;
    std::uint64_t before = held_[i].bytes;
    held_[i].sum = mutate(kit_, rng_, held_[i]);
    held_bytes_ += held_[i].bytes - before;
  }
  void clear() {
    held_.clear();
    held_bytes_ = 0;
  }
  std::uint64_t held_bytes() const { return held_bytes_; }
  std::size_t size() const { return held_.size(); }
  Rng& rng() { return rng_; }
  Builder& builder() { return b_; }
  Kit& kit() { return kit_; }

 private:
  int idx_;
  Control& c_;
  Kit kit_;
  Rng rng_;
  Builder b_;
  std::vector<Held> held_;
  std::uint64_t held_bytes_ = 0;
};

// A mutator that churns until told to stop: builds, checks, mutates and drops graphs, keeping
// about `budget` bytes live. Exit 0 when every check passed.
int churner(Control& c, int idx, std::uint64_t budget) {
  Holder h(idx, c, 1000 + static_cast<std::uint64_t>(idx) * 77 + static_cast<std::uint64_t>(getpid()));
  auto last_check = clock_type::now();
  while (c.stop[idx].load() == 0) {
    std::uint64_t op = h.rng().below(100);
    if (op < 40) {
      Kind kind = static_cast<Kind>(h.rng().below(static_cast<int>(Kind::kCount)));
      h.build(kind, 4);
    } else if (op < 60) {
      h.mutate_random();
    } else {  // garbage
      Built g = h.builder().tree(6 + static_cast<int>(h.rng().below(3)));
      (void)g;
    }
    while (h.held_bytes() > budget) h.drop_random();
    if (clock_type::now() - last_check > std::chrono::milliseconds(200)) {
      h.check_all();
      last_check = clock_type::now();
    }
    c.bytes[idx] = alloc_bytes();
  }
  h.check_all();
  return c.mismatches[idx].load() == 0 ? 0 : 10;
}

std::uint64_t cycle() { return gc_stats().cycle; }

}  // namespace

TEST_CASE("gc fault: kill -9 of a mutator mid-cycle - the others keep their data and cycles go on and its memory comes back") {
  Fixture f({"--heap-size", "16M", "--gc-debug"});
  SharedControl c;
  Kids kids;
  const int kVictim = 2;
  pid_t a = kids.add(fork_client(f.cfg.socket, [&] { return churner(*c, 0, 1 << 20); }));
  pid_t b = kids.add(fork_client(f.cfg.socket, [&] { return churner(*c, 1, 1 << 20); }));
  pid_t victim = kids.add(fork_client(f.cfg.socket, [&] {
    Holder h(kVictim, *c, 4242);
    while (h.held_bytes() < (4u << 20)) h.build(Kind::kTree, 6);  // ~4 MiB only this process references
    for (int i = 0; i < 10; ++i) h.build(Kind::kIntList, 1);
    // One graph it shares: it must outlive the process.
    Built pub = h.builder().dag(5, 20);
    List msg = new_list(2);
    msg.append(pub.root);
    msg.append(Value(static_cast<long long>(pub.sum)));
    repository("victim.pub").set(msg);
    if (h.check_all() != 0) return 10;
    c->held_bytes[kVictim] = h.held_bytes();
    c->ready[kVictim] = 1;
    for (;;) {  // allocate and check until killed
      Built g = h.builder().tree(7);
      (void)g;
      h.check(h.rng().below(h.size()));
      c->rounds[kVictim]++;
    }
  }));

  attach(f.cfg.socket);
  REQUIRE(wait_for([&] { return c->ready[kVictim].load() == 1; }, 60000));
  REQUIRE(wait_for([&] { return c->rounds[kVictim].load() > 20; }, 30000));
  collect(30000);
  GcStats with_victim = collect(30000);
  const std::uint64_t victim_bytes = c->held_bytes[kVictim];
  INFO("victim holds ~" << victim_bytes << " B, heap used " << with_victim.heap_used_after << " B");
  REQUIRE(with_victim.heap_used_after >= victim_bytes);

  // Kill it while a cycle runs (they run back to back on this heap).
  detail::Metadata* m = detail::current_meta();
  bool mid_cycle = wait_for([&] { return m->gc_started_seq.load() != m->gc_done_seq.load(); }, 20000);
  ::kill(victim, SIGKILL);
  bool was_mid_cycle = m->gc_started_seq.load() != m->gc_done_seq.load();
  const std::uint64_t cycle_at_kill = cycle();
  REQUIRE(wait_child(victim, 10000) == 128 + SIGKILL);
  REQUIRE(mid_cycle);
  std::printf("gc fault a: victim (~%.1f MiB held) killed %s cycle %llu\n", victim_bytes / 1048576.0,
              was_mid_cycle ? "during" : "right after", static_cast<unsigned long long>(cycle_at_kill + 1));
  REQUIRE(f.server->wait_for_log("died", 10000));

  // The others keep going and keep their data; later cycles complete.
  std::uint64_t rounds_a = c->rounds[0], rounds_b = c->rounds[1];
  REQUIRE(wait_for([&] { return cycle() >= cycle_at_kill + 4; }, 60000));
  REQUIRE(wait_for([&] { return c->rounds[0].load() >= rounds_a + 3 && c->rounds[1].load() >= rounds_b + 3; }, 60000));
  c->stop[0] = 1;
  c->stop[1] = 1;
  REQUIRE(wait_child(a) == 0);
  REQUIRE(wait_child(b) == 0);
  REQUIRE(c->mismatches[0] == 0);
  REQUIRE(c->mismatches[1] == 0);

  // Its roots are gone: what only it referenced is freed; what it shared is intact.
  collect(30000);
  GcStats after = collect(30000);
  std::printf("gc fault a: heap used %llu B with the victim alive, %llu B after its death (cycle %llu); churners %.0f + %.0f MiB allocated\n",
              static_cast<unsigned long long>(with_victim.heap_used_after), static_cast<unsigned long long>(after.heap_used_after),
              static_cast<unsigned long long>(after.cycle), c->bytes[0] / 1048576.0, c->bytes[1] / 1048576.0);
  REQUIRE(after.heap_used_after < victim_bytes / 4);
  REQUIRE(after.heap_used_after + victim_bytes <= with_victim.heap_used_after);
  {
    List msg(repository("victim.pub").get());
    Kit kit;
    REQUIRE(checksum(kit, msg[0]) == static_cast<std::uint64_t>(msg[1].as_int()));
  }
  f.require_heap_verifies();
}

TEST_CASE("gc fault: a mutator stopped (SIGSTOP) for several cycles keeps everything it held") {
  Fixture f({"--heap-size", "16M", "--gc-debug"});
  SharedControl c;
  Kids kids;
  const int kS = 0;
  pid_t s = kids.add(fork_client(f.cfg.socket, [&] {
    Holder h(kS, *c, 777);
    for (int i = 0; i < 3; ++i) h.build(Kind::kTree, 5);
    h.build(Kind::kRing, 4);
    h.build(Kind::kDag, 4);
    h.build(Kind::kIntList, 1);
    h.build(Kind::kStrMap, 4);
    h.build(Kind::kMixed, 1);
    h.add(h.builder().tree(10), Kind::kTree);
    if (h.check_all() != 0) return 10;
    c->held_bytes[kS] = h.held_bytes();
    c->ready[kS] = 1;
    // Check continuously (stopped somewhere in here), until told to finish.
    while (c->stop[kS].load() == 0) {
      if (h.check_all() != 0) return 10;
    }
    return h.check_all() == 0 ? 0 : 10;
  }));
  pid_t a = kids.add(fork_client(f.cfg.socket, [&] { return churner(*c, 1, 1 << 20); }));
  pid_t b = kids.add(fork_client(f.cfg.socket, [&] { return churner(*c, 2, 1 << 20); }));

  attach(f.cfg.socket);
  REQUIRE(wait_for([&] { return c->ready[kS].load() == 1; }, 60000));
  REQUIRE(wait_for([&] { return c->rounds[kS].load() >= 3; }, 30000));
  std::this_thread::sleep_for(std::chrono::milliseconds(37));  // somewhere inside a check round
  REQUIRE(::kill(s, SIGSTOP) == 0);
  int st = 0;
  REQUIRE(::waitpid(s, &st, WUNTRACED) == s);
  REQUIRE(WIFSTOPPED(st));
  const std::uint64_t c0 = cycle(), rounds0 = c->rounds[kS];
  const std::uint64_t bytes0 = c->bytes[1] + c->bytes[2];
  auto t0 = clock_type::now();
  // Churn forces cycles; collect() asks for one more while the process is stopped.
  bool advanced = wait_for([&] { return cycle() >= c0 + 3 && colors::test::ms_since(t0) >= 1000; }, 60000);
  collect(30000);
  const std::uint64_t c1 = cycle();
  std::printf("gc fault b: %llu cycles while the mutator was stopped (%.1f s, others allocated %.0f MiB; it holds ~%.1f MiB)\n",
              static_cast<unsigned long long>(c1 - c0), colors::test::ms_since(t0) / 1000.0,
              (c->bytes[1] + c->bytes[2] - bytes0) / 1048576.0, c->held_bytes[kS] / 1048576.0);
  REQUIRE(c->rounds[kS].load() == rounds0);  // it really was stopped
  ::kill(s, SIGCONT);
  REQUIRE(advanced);
  REQUIRE(c1 >= c0 + 3);
  // It re-checks everything it held (at least two whole rounds), then exits.
  REQUIRE(wait_for([&] { return c->rounds[kS].load() >= rounds0 + 2; }, 60000));
  c->stop[kS] = 1;
  REQUIRE(wait_child(s) == 0);
  REQUIRE(c->mismatches[kS] == 0);
  c->stop[1] = 1;
  c->stop[2] = 1;
  REQUIRE(wait_child(a) == 0);
  REQUIRE(wait_child(b) == 0);
  f.require_heap_verifies();
}

TEST_CASE("gc fault: dropping the only reference to a large graph gives the memory back within two cycles") {
  Fixture f({"--heap-size", "16M", "--gc-debug"});
  SharedControl c;
  Kids kids;
  pid_t k = kids.add(fork_client(f.cfg.socket, [&] {
    Holder h(0, *c, 99);
    // One list referencing everything: ~8 MiB of trees, integer lists and maps.
    List big = new_list();
    std::uint64_t bytes = 0;
    Kit& kit = h.kit();
    while (bytes < (8u << 20)) {
      Kind kind = bytes % 3 == 0 ? Kind::kTree : (bytes % 3 == 1 ? Kind::kIntList : Kind::kStrMap);
      Built g = h.builder().any(kind, 4);
      bytes += g.bytes;
      big.append(g.root);
    }
    const std::uint64_t sum = checksum(kit, big);
    c->held_bytes[0] = bytes;
    c->ready[0] = 1;
    if (!wait_for([&] { return c->go[0].load() == 1; }, 60000)) return 20;
    if (checksum(kit, big) != sum) return 10;
    big = List();  // the only reference
    c->ready[0] = 2;
    if (!wait_for([&] { return c->stop[0].load() == 1; }, 60000)) return 21;
    return 0;
  }));
  attach(f.cfg.socket);
  REQUIRE(wait_for([&] { return c->ready[0].load() == 1; }, 60000));
  collect(30000);
  GcStats held = collect(30000);
  const std::uint64_t big_bytes = c->held_bytes[0];
  REQUIRE(held.heap_used_after >= big_bytes);
  c->go[0] = 1;
  REQUIRE(wait_for([&] { return c->ready[0].load() == 2; }, 30000));
  GcStats first = collect(30000);
  GcStats second = collect(30000);
  HeapStats hs = heap_stats();
  std::printf("gc fault c: graph of ~%.1f MiB; heap used %llu B while held, %llu B after 1 cycle, %llu B after 2 (%llu cycles), "
              "free %zu B, largest free block %zu B\n",
              big_bytes / 1048576.0, static_cast<unsigned long long>(held.heap_used_after),
              static_cast<unsigned long long>(first.heap_used_after), static_cast<unsigned long long>(second.heap_used_after),
              static_cast<unsigned long long>(second.cycle - held.cycle), hs.free_bytes, hs.largest_free);
  REQUIRE(second.cycle - held.cycle <= 2);  // nothing but our two requests ran
  // (big_bytes is the test's estimate of the graph's size, within a few percent.)
  REQUIRE(second.heap_used_after + big_bytes * 9 / 10 <= held.heap_used_after);
  REQUIRE(second.heap_used_after < big_bytes / 10);
  REQUIRE(hs.largest_free >= big_bytes * 9 / 10);  // coalesced back into large free blocks
  c->stop[0] = 1;
  REQUIRE(wait_child(k) == 0);
  f.require_heap_verifies();
}

TEST_CASE("gc fault: garbage loops never run out of memory - keeping everything does cleanly and hurts nobody else") {
  Fixture f({"--heap-size", "8M", "--gc-debug"});
  const std::uint64_t kHeap = 8u << 20;
  SharedControl c;
  Kids kids;
  const int kM = 0, kL = 1, kK = 2;
  // M: holds checksummed graphs and checks them throughout; builds more at the end.
  pid_t mm = kids.add(fork_client(f.cfg.socket, [&] {
    Holder h(kM, *c, 5);
    for (int i = 0; i < 4; ++i) h.build(Kind::kTree, 4);
    h.build(Kind::kRing, 2);
    h.build(Kind::kDag, 2);
    h.build(Kind::kStrMap, 1);
    if (h.check_all() != 0) return 10;
    c->held_bytes[kM] = h.held_bytes();
    c->ready[kM] = 1;
    while (c->go[kM].load() == 0) {
      if (h.check_all() != 0) return 10;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    // The heap was full a moment ago: allocating works again.
    for (int i = 0; i < 4; ++i) h.build(Kind::kTree, 4);
    h.build(Kind::kIntList, 1);
    if (h.check_all() != 0) return 10;
    c->ready[kM] = 2;
    return 0;
  }));
  // L: an allocation loop with little live data, ~30x the heap or 40 s.
  pid_t ll = kids.add(fork_client(f.cfg.socket, [&] {
    Holder h(kL, *c, 6);
    auto t0 = clock_type::now();
    try {
      while (alloc_bytes() < 30 * kHeap && clock_type::now() - t0 < std::chrono::seconds(40)) {
        std::uint64_t op = h.rng().below(10);
        if (op < 4) {
          Built g = h.builder().tree(7);
          (void)g;
        } else if (op < 6) {
          Built g = h.builder().int_list(10000);
          (void)g;
        } else if (op < 8) {
          std::vector<std::uint8_t> blob(32 << 10, 0x5a);
          Value v = new_binary(blob);
          alloc_bytes() += block(16 + blob.size());
        } else {
          h.build(Kind::kTree, 3);  // a little live data, checked
          while (h.held_bytes() > (256u << 10)) h.drop_random();
        }
        c->bytes[kL] = alloc_bytes();
      }
    } catch (const OutOfMemoryError& e) {
      std::fprintf(stderr, "allocation loop: unexpected OutOfMemoryError after %llu bytes: %s\n",
                   static_cast<unsigned long long>(alloc_bytes()), e.what());
      c->ooms[kL]++;
      return 20;
    }
    return h.check_all() == 0 ? 0 : 10;
  }));
  // K: keeps everything it allocates until the heap is exhausted.
  pid_t kk = kids.add(fork_client(f.cfg.socket, [&] {
    if (!wait_for([&] { return c->go[kK].load() == 1; }, 90000)) return 21;
    List keep = new_list();
    std::vector<std::uint8_t> blob(64 << 10, 0x42);
    std::uint64_t kept = 0;
    try {
      for (;;) {
        keep.append(new_binary(blob));
        kept += blob.size();
        if (kept > 4 * kHeap) return 22;  // impossible: everything stays reachable
      }
    } catch (const OutOfMemoryError& e) {
      std::snprintf(c->message, sizeof c->message, "%s", e.what());
      c->held_bytes[kK] = kept;
      c->ooms[kK]++;
    }
    if (keep.size() * blob.size() != kept) return 23;
    keep = List();  // give it all back
    c->ready[kK] = 1;
    if (!wait_for([&] { return c->go[kK].load() == 2; }, 60000)) return 24;
    // Allocating works again for the client that ran out, too.
    List again = new_list();
    for (int i = 0; i < 16; ++i) again.append(new_binary(blob));
    return 0;
  }));

  attach(f.cfg.socket);
  REQUIRE(wait_for([&] { return c->ready[kM].load() == 1; }, 60000));
  const std::uint64_t c0 = cycle();
  int rc_l = wait_child(ll);
  const std::uint64_t c1 = cycle();
  std::printf("gc fault d: allocation loop: %.0f MiB (%.1fx the 8 MiB heap) in %llu cycles, %llu out-of-memory errors\n",
              c->bytes[kL] / 1048576.0, double(c->bytes[kL]) / double(kHeap), static_cast<unsigned long long>(c1 - c0),
              static_cast<unsigned long long>(c->ooms[kL].load()));
  REQUIRE(rc_l == 0);
  REQUIRE(c->ooms[kL] == 0);
  REQUIRE(c->bytes[kL] >= 10 * kHeap);

  c->go[kK] = 1;
  REQUIRE(wait_for([&] { return c->ready[kK].load() == 1; }, 90000));
  std::string msg = c->message;
  std::printf("gc fault d: keeping everything: out of memory after %.1f MiB kept: %s\n", c->held_bytes[kK] / 1048576.0, msg.c_str());
  CHECK(msg.find("shared heap exhausted") != std::string::npos);
  CHECK(msg.find("--heap-size") != std::string::npos);
  REQUIRE(c->held_bytes[kK] >= kHeap / 2);
  // The server and the other client survived it.
  REQUIRE_FALSE(f.server->wait_exit(0).has_value());
  ping();
  c->go[kM] = 1;
  c->go[kK] = 2;
  REQUIRE(wait_child(kk) == 0);
  REQUIRE(wait_child(mm) == 0);
  REQUIRE(c->mismatches[kM] == 0);
  collect(30000);
  GcStats last = collect(30000);
  INFO("heap used after the end: " << last.heap_used_after);
  f.require_heap_verifies();
}
