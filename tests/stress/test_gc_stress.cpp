// Collector stress test: a real colors-server with a 16 MiB heap in --gc-debug mode (freed memory
// poisoned, heap verified after every cycle) and three mutator processes that, for a bounded
// time, build, mutate, share (repositories, channels) and drop random graphs: binary trees of
// user-class nodes, rings, DAGs with shared nodes, lists of 10k integers, maps with string keys,
// with schema evolution on live nodes. Every process keeps a private checksum of each graph it
// holds and re-checks them all the time; a single mismatch fails the test. The heap is small, so
// the collector runs cycles back to back; process 0 also calls collect() now and then.
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
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "colors/colors.hpp"
#include "gc_graphs.hpp"
#include "../integration/server_process.hpp"
#include "client_process.hpp"

using namespace colors;
using namespace colors::test::gcg;
using colors::test::ServerConfig;
using colors::test::ServerProcess;
using colors::test::TempDir;

namespace {

// ---- knobs -------------------------------------------------------------------------------------
constexpr int kMutatorSeconds = 50;                        // how long the mutators run at least
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kMaxMutatorSeconds = 200;                    // ... and at most (a sanitizer on a busy machine)
#else
constexpr int kMaxMutatorSeconds = 110;                    // ... and at most
#endif
constexpr int kProcs = 3;                                  // mutator processes
constexpr std::uint64_t kHeapBytes = 16ull << 20;          // --heap-size 16M
constexpr std::uint64_t kLiveBudget = 1536ull << 10;       // what each mutator holds at most (approx.)
constexpr int kCheckAllEveryMs = 300;                      // full re-check of everything held
constexpr int kCollectEveryMs = 1500;                      // process 0 calls collect()
#if defined(__SANITIZE_THREAD__)
// ThreadSanitizer slows the mutators ~10x (`make tsan` only; CI runs the normal and ASan builds
// at 50x): the test still churns well past the heap, looking for races rather than volume.
constexpr std::uint64_t kMinAllocFactor = 10;
constexpr std::uint64_t kMinCycles = 20;
#else
constexpr std::uint64_t kMinCycles = 100;
constexpr std::uint64_t kMinAllocFactor = 50;              // sum of allocations > 50 x heap
#endif

struct alignas(64) ProcStats {
  std::atomic<std::uint64_t> bytes{0}, checks{0}, mismatches{0}, built{0}, mutated{0}, evolved{0}, published{0},
      repo_reads{0}, sent{0}, received{0}, collects{0}, dropped{0}, held{0}, held_bytes{0};
};
struct Shared {
  ProcStats p[kProcs];
  std::atomic<int> stop{0};  // set by the test process
};

// Control block in anonymous shared memory, visible to the children after fork.
Shared* map_shared() {
  void* mem = ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mem != MAP_FAILED);
  return new (mem) Shared();
}

using colors::test::fork_client;
using colors::test::wait_child;

// One mutator process.
class Mutator {
 public:
  Mutator(int p, ProcStats& st) : p_(p), st_(st), rng_(0x5eed0000ull + static_cast<std::uint64_t>(p) * 7919 + static_cast<std::uint64_t>(::getpid())), b_(kit_, rng_) {}

  int run(const std::atomic<int>& stop, std::chrono::steady_clock::time_point deadline) {
    using clock = std::chrono::steady_clock;
    Repository mine = repository("gcs.pub." + std::to_string(p_));
    Channel in = channel("gcs.chan." + std::to_string(p_), 2);
    Channel out = channel("gcs.chan." + std::to_string((p_ + 1) % kProcs), 2);
    auto last_check = clock::now(), last_collect = clock::now();
    std::uint64_t seq = 0;
    while (stop.load() == 0 && clock::now() < deadline) {
      auto now = clock::now();
      if (now - last_check > std::chrono::milliseconds(kCheckAllEveryMs)) {
        check_all();
        last_check = clock::now();
      }
      if (p_ == 0 && now - last_collect > std::chrono::milliseconds(kCollectEveryMs)) {
        collect(30000);
        st_.collects++;
        last_collect = clock::now();
      }
      while (held_bytes_ > kLiveBudget && !held_.empty()) drop(rng_.below(held_.size()));

      std::uint64_t op = rng_.below(100);
      if (op < 25) {  // build a graph and keep it
        Kind kind = static_cast<Kind>(rng_.below(static_cast<int>(Kind::kCount)));
        keep(b_.any(kind, 4), kind, false, "built");
      } else if (op < 30) {  // a big tree
        keep(b_.tree(9 + static_cast<int>(rng_.below(2))), Kind::kTree, false, "built-big");
      } else if (op < 45) {  // mutate one this process owns
        mutate_one();
      } else if (op < 55) {  // check one
        if (!held_.empty()) check(rng_.below(held_.size()));
      } else if (op < 68) {  // pure garbage: built, checked once, dropped
        if (rng_.chance(25)) {  // a list of large binaries
          List l = new_list(8);
          for (int i = 0; i < 8; ++i) {
            std::vector<std::uint8_t> d((4 << 10) + rng_.below(28 << 10), static_cast<std::uint8_t>(rng_.next()));
            l.append(new_binary(d));
            alloc_bytes() += block(16 + d.size());
          }
          alloc_bytes() += block(16) + block(8 + 64);
        } else {
          Kind kind = static_cast<Kind>(rng_.below(static_cast<int>(Kind::kCount)));
          Built g = b_.any(kind, 5);
          st_.built++;
          verify_fresh(g, kind);
        }
      } else if (op < 76) {  // publish a fresh graph in this process's repository
        Kind kind = rng_.chance(50) ? Kind::kTree : Kind::kDag;
        Built g = b_.any(kind, 3);
        st_.built++;
        List msg = new_list(4);
        msg.append(g.root);
        msg.append(Value(static_cast<long long>(g.sum)));
        msg.append(Value(static_cast<int>(kind)));
        msg.append(Value(static_cast<long long>(++seq)));
        alloc_bytes() += block(16) + block(8 + 32) + 32;
        mine.set(msg);
        st_.published++;
        if (rng_.chance(40)) keep(std::move(g), kind, true, "published");
      } else if (op < 86) {  // read another process's repository, check it, maybe keep it
        int q = static_cast<int>((p_ + 1 + rng_.below(kProcs - 1)) % kProcs);
        Value v = repository("gcs.pub." + std::to_string(q)).get();
        if (!v.is_null()) receive_message(v, true, "repo of process " + std::to_string(q));
        st_.repo_reads++;
      } else if (op < 93) {  // hand a graph over to the next process
        send_one(out);
      } else {  // take what the previous process handed over
        if (auto v = in.try_receive()) {
          st_.received++;
          receive_message(*v, false, "channel");
        }
      }
      publish_stats();
    }
    check_all();
    publish_stats();
    std::fprintf(stderr, "mutator %d: done, %llu bytes allocated, %llu checks, %llu mismatches\n", p_,
                 static_cast<unsigned long long>(alloc_bytes()), static_cast<unsigned long long>(st_.checks.load()),
                 static_cast<unsigned long long>(mismatches_));
    return mismatches_ == 0 ? 0 : 10;
  }

 private:
  void publish_stats() {
    st_.bytes = alloc_bytes();
    st_.held = held_.size();
    st_.held_bytes = held_bytes_;
  }

  void keep(Built g, Kind kind, bool frozen, const std::string& origin) {
    st_.built++;
    if (!verify_fresh(g, kind)) return;
    Held h;
    h.root = std::move(g.root);
    h.kind = kind;
    h.sum = g.sum;
    h.bytes = g.bytes;
    h.frozen = frozen;
    h.origin = origin;
    held_bytes_ += h.bytes;
    held_.push_back(std::move(h));
  }

  // A fresh graph read back from the heap must match the checksum taken when it was built.
  bool verify_fresh(const Built& g, Kind kind) {
    Held tmp;
    tmp.root = g.root;
    tmp.kind = kind;
    tmp.sum = g.sum;
    tmp.origin = "fresh";
    return verify(tmp);
  }

  bool verify(const Held& g) {
    std::uint64_t s = 0;
    try {
      s = checksum(kit_, g.root);
    } catch (const std::exception& e) {
      report(g, "exception while reading it: " + std::string(e.what()));
      return false;
    }
    st_.checks++;
    if (s == g.sum) return true;
    char buf[96];
    std::snprintf(buf, sizeof buf, "checksum %016llx, expected %016llx", static_cast<unsigned long long>(s),
                  static_cast<unsigned long long>(g.sum));
    report(g, buf);
    return false;
  }

  void report(const Held& g, const std::string& what) {
    ++mismatches_;
    st_.mismatches++;
    unsigned long long cycle = 0;
    try {
      cycle = gc_stats().cycle;
    } catch (...) {
    }
    std::fprintf(stderr, "mutator %d (pid %d): MISMATCH in %s %s graph at 0x%llx (from %s), after gc cycle %llu: %s\n", p_,
                 getpid(), kind_name(g.kind), g.frozen ? "frozen" : "owned", static_cast<unsigned long long>(g.root.raw()),
                 g.origin.c_str(), cycle, what.c_str());
  }

  // Checks held_[i]; a broken graph is reported and dropped.
  bool check(std::size_t i) {
    if (verify(held_[i])) return true;
    drop(i);
    return false;
  }

  void check_all() {
    for (std::size_t i = held_.size(); i-- > 0;) check(i);
  }

  void drop(std::size_t i) {
    held_bytes_ -= std::min(held_bytes_, held_[i].bytes);
    std::swap(held_[i], held_.back());
    held_.pop_back();
    st_.dropped++;
  }

  // Index of a random graph this process may mutate or hand over, or -1.
  long pick_owned() {
    if (held_.empty()) return -1;
    std::size_t start = rng_.below(held_.size());
    for (std::size_t n = 0; n < held_.size(); ++n) {
      std::size_t i = (start + n) % held_.size();
      if (!held_[i].frozen) return static_cast<long>(i);
    }
    return -1;
  }

  void mutate_one() {
    long i = pick_owned();
    if (i < 0 || !check(static_cast<std::size_t>(i))) return;  // checked right before it changes
    Held& g = held_[static_cast<std::size_t>(i)];
    std::uint64_t before = g.bytes;
    g.sum = mutate(kit_, rng_, g);
    held_bytes_ += g.bytes - before;
    st_.mutated++;
  }

  void send_one(Channel& out) {
    long i = pick_owned();
    if (i < 0 || !check(static_cast<std::size_t>(i))) return;
    Held& g = held_[static_cast<std::size_t>(i)];
    List msg = new_list(4);
    msg.append(g.root);
    msg.append(Value(static_cast<long long>(g.sum)));
    msg.append(Value(static_cast<int>(g.kind)));
    msg.append(Value(static_cast<long long>(g.bytes)));
    alloc_bytes() += block(16) + block(8 + 32) + 32;
    if (out.try_send(msg)) {  // the receiver owns it now
      st_.sent++;
      drop(static_cast<std::size_t>(i));
    }
  }

  // A [graph, checksum, kind, ...] message from a repository (frozen: others read it too) or a
  // channel (owned from now on).
  void receive_message(const Value& v, bool frozen, const std::string& origin) {
    List msg(v);
    Held h;
    h.root = msg[0];
    h.sum = static_cast<std::uint64_t>(msg[1].as_int());
    h.kind = static_cast<Kind>(msg[2].as_int());
    h.frozen = frozen;
    h.origin = origin;
    h.bytes = frozen ? 0 : static_cast<std::uint64_t>(msg[3].as_int());
    if (!verify(h)) return;
    if (frozen) {
      std::uint64_t objects = 0;
      checksum(kit_, h.root, &objects);
      h.bytes = objects * 200;
    }
    if (rng_.chance(frozen ? 30 : 70)) {
      held_bytes_ += h.bytes;
      held_.push_back(std::move(h));
    }
  }

  int p_;
  ProcStats& st_;
  Kit kit_;
  Rng rng_;
  Builder b_;
  std::vector<Held> held_;
  std::uint64_t held_bytes_ = 0;
  std::uint64_t mismatches_ = 0;
};

std::size_t count_occurrences(const std::string& hay, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t pos = hay.find(needle); pos != std::string::npos; pos = hay.find(needle, pos + 1)) ++n;
  return n;
}

// Errors that the in-cycle verifier ("gc debug: heap verifier after cycle N: ...", one error per
// following line, indented by two spaces) reported, by kind.
struct VerifierWarnings {
  std::size_t warnings = 0, not_live = 0, slots = 0, freelist = 0;
  std::vector<std::string> other;
  std::size_t racy() const { return not_live + slots + freelist; }
};

VerifierWarnings classify_verifier_warnings(const std::string& log) {
  VerifierWarnings w;
  std::istringstream in(log);
  std::string line;
  bool in_report = false;
  while (std::getline(in, line)) {
    if (line.find("gc debug: heap verifier") != std::string::npos) {
      ++w.warnings;
      in_report = true;
      continue;
    }
    if (!in_report || line.rfind("  ", 0) != 0) {
      in_report = false;
      continue;
    }
    if (line.find(" is not a live object") != std::string::npos) ++w.not_live;
    else if (line.find(": class needs ") != std::string::npos && line.find(" slots, object has ") != std::string::npos) ++w.slots;
    else if (line.find(" free blocks are not on the freelist") != std::string::npos ||
             line.find("freelist counters say ") != std::string::npos) ++w.freelist;
    else w.other.push_back(line);
  }
  return w;
}

}  // namespace

TEST_CASE("gc stress: three mutators churn random graphs on a 16 MiB heap - checksums intact and heap verifies") {
  auto t_start = std::chrono::steady_clock::now();
  TempDir dir;
  ServerConfig cfg = ServerConfig::fresh(dir.path());
  ServerProcess server(cfg, cfg.args({"--heap-size", "16M", "--gc-debug"}), dir.path() + "/server.log");
  REQUIRE(server.wait_ready());

  Shared* sh = map_shared();
  auto t_mut = std::chrono::steady_clock::now();
  auto deadline = t_mut + std::chrono::seconds(kMaxMutatorSeconds + 5);
  std::vector<pid_t> kids;
  for (int p = 0; p < kProcs; ++p) {
    kids.push_back(fork_client(cfg.socket, [p, sh, deadline] { return Mutator(p, sh->p[p]).run(sh->stop, deadline); }));
  }
  // The mutators run kMutatorSeconds, longer when they have not yet allocated 1.25 x the
  // required total (slow builds), at most kMaxMutatorSeconds; any that exits early ends it.
  auto allocated = [&] {
    std::uint64_t n = 0;
    for (int p = 0; p < kProcs; ++p) n += sh->p[p].bytes;
    return n;
  };
  auto any_exited = [&] {
    for (pid_t k : kids) {
      siginfo_t info{};
      if (::waitid(P_PID, static_cast<id_t>(k), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != 0) return true;
    }
    return false;
  };
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto secs = colors::test::ms_since(t_mut) / 1000;
    if (any_exited() || secs >= kMaxMutatorSeconds) break;
    if (secs >= kMutatorSeconds && allocated() > kMinAllocFactor * kHeapBytes * 5 / 4) break;
  }
  sh->stop = 1;
  double mutator_seconds = colors::test::ms_since(t_mut) / 1000.0;
  std::vector<int> rcs;
  for (pid_t k : kids) rcs.push_back(wait_child(k, 60 * 1000));

  std::uint64_t total = 0;
  for (int p = 0; p < kProcs; ++p) {
    ProcStats& s = sh->p[p];
    total += s.bytes;
    std::printf("mutator %d: exit %d, %.1f MiB allocated, %llu graphs built, %llu mutated, %llu checks, %llu mismatches, "
                "%llu published, %llu repo reads, %llu sent, %llu received, %llu collect() calls, %llu held at the end\n",
                p, rcs[p], s.bytes / 1048576.0, (unsigned long long)s.built, (unsigned long long)s.mutated,
                (unsigned long long)s.checks, (unsigned long long)s.mismatches, (unsigned long long)s.published,
                (unsigned long long)s.repo_reads, (unsigned long long)s.sent, (unsigned long long)s.received,
                (unsigned long long)s.collects, (unsigned long long)s.held);
  }
  for (int p = 0; p < kProcs; ++p) {
    INFO("mutator " << p << " (exit 3: exception, 10: checksum mismatches; see stderr); server log:\n" << server.log().substr(0, 4000));
    CHECK(sh->p[p].mismatches == 0);
    REQUIRE(rcs[p] == 0);
  }

  attach(cfg.socket);
  collect(30000);
  GcStats last = collect(30000);
  VerifyResult v{false, ""};
  bool ok = colors::test::eventually([&] { return (v = verify_heap()).ok; }, 10000);
  HeapStats hs = heap_stats();
  detach();
  INFO(v.report);
  REQUIRE(ok);

  std::string log = server.log();
  if (const char* keep = std::getenv("COLORS_GC_STRESS_LOG")) {  // for the analysis of a failure
    std::ofstream(keep) << log;
  }
  std::size_t cycle_lines = count_occurrences(log, "gc cycle ");
  std::printf("gc stress: %llu cycles (%zu logged), %.1f MiB allocated by the mutators (%.1fx the %llu MiB heap; server "
              "counted %.1f MiB carved), heap used %llu B after the final collect, mutators ran %.1f s, %.1f s total\n",
              (unsigned long long)last.cycle, cycle_lines, total / 1048576.0, double(total) / double(kHeapBytes),
              (unsigned long long)(kHeapBytes >> 20), hs.allocated_bytes_total / 1048576.0,
              (unsigned long long)last.heap_used_after, mutator_seconds, colors::test::ms_since(t_start) / 1000.0);
  std::fflush(stdout);
  // The server verifies the heap after every cycle while the mutators run (--gc-debug, in the
  // verifier's concurrent mode): any warning it logged fails the test.
  VerifierWarnings w = classify_verifier_warnings(log);
  std::printf("gc stress: in-cycle verifier: %zu warnings\n", w.warnings);
  std::fflush(stdout);
  {
    auto pos = log.find("gc debug: heap verifier");
    INFO("verifier warning in the server log: " << (pos == std::string::npos ? "" : log.substr(pos, 2000)));
    REQUIRE(pos == std::string::npos);
  }
  REQUIRE(total > kMinAllocFactor * kHeapBytes);
  REQUIRE(last.cycle >= kMinCycles);
  ::munmap(sh, sizeof(Shared));
}
