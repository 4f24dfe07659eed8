// Collector benchmark (issue 3, "Benchmark"; after section 6.3 of the CoLoRS paper), in-process:
// this executable's segment (test::TestSegment) is the heap, its main thread the mutator, and
// gc::Collector runs cycles against it on its own threads, as colors-server does.
//
//   bench_gc(out)   COLORS_BENCH_QUICK=1 (or `colors-bench --quick`) makes it about 3x shorter.
//
// Part 1, cycle cost. A 256 MiB heap filled to ~70% with binary trees of depth 4 (15 nodes; a node
// is a user object with integer, float, boolean and string fields and left/right children), held
// by a few Lists (client roots) and one repository. Between cycles a window of trees is replaced
// (churn: the oldest trees, so that the dead ones form contiguous runs the sweep can return to
// the freelist). Cycles alternate between a 1-thread and a 2-thread collector; every phase is
// best-of-N. Baselines, measured right before each cycle on the same heap:
//   * plain DFS: single-threaded depth-first walk over the same live graph from the same roots,
//     reading the shared objects' reference slots directly (detail:: layouts, relaxed = plain
//     loads), a std::vector stack and a visited bitmap. Compared with the root pass (roots +
//     marking everything reachable), and with root pass + pending passes.
//   * linear pass: one plain walk over the whole objects space reading every block header.
//     Compared with the partition walk + sweep.
// Part 2, mutator impact. The main thread runs an allocate-and-link loop (new small object,
// linked into a shared singly linked queue of the last 4096 objects, the oldest dropped) and
// times every iteration: with GC off (no cycle runs while it is timed; cycles run between timed
// rounds so the heap does not fill) and with back-to-back cycles on other threads (2 and 1 GC
// threads). An allocation stall (the allocator found no space and waited for a cycle) shows up as
// a change of Metadata::gc_request_seq during the iteration: nothing else requests cycles here.
// A control row runs GC off with another thread busy reading the heap (CPU competition alone).
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.hpp"
#include "channel.hpp"
#include "collector.hpp"
#include "colors/colors.hpp"
#include "heap.hpp"
#include "layout.hpp"
#include "repository.hpp"
#include "test_segment.hpp"

void bench_gc(std::ostream& out);

namespace {

using namespace colors;
using namespace colors::detail;

std::string fmt(const char* f, double a = 0, double b = 0, double c = 0, double d = 0, double e = 0, double g = 0) {
  char buf[512];
  std::snprintf(buf, sizeof buf, f, a, b, c, d, e, g);
  return buf;
}

// ---- the tree workload ---------------------------------------------------------------------

struct Trees {
  Class node;
  Field fi, ff, fb, fs, fl, fr;
  std::vector<List> lists;  // tree t is lists[t % lists.size()][t / lists.size()]
  std::size_t count = 0;
  std::uint64_t serial = 0;

  Trees() {
    node = define_class("bench.Node", {{"i", TypeKind::kInteger, ""},
                                       {"f", TypeKind::kFloat, ""},
                                       {"b", TypeKind::kBoolean, ""},
                                       {"s", TypeKind::kString, ""},
                                       {"left", TypeKind::kObject, "bench.Node"},
                                       {"right", TypeKind::kObject, "bench.Node"}});
    fi = Field(node, "i");
    ff = Field(node, "f");
    fb = Field(node, "b");
    fs = Field(node, "s");
    fl = Field(node, "left");
    fr = Field(node, "right");
    for (int i = 0; i < 16; ++i) lists.push_back(new_list(8192));
    repository("bench.gc.trees").set(lists[0]);  // one of the lists is also held by a repository
  }

  Object build(int depth) {
    Object n = new_object(node);
    std::uint64_t k = serial++;
    n.set(fi, Value(static_cast<long long>(k)));
    n.set(ff, Value(static_cast<double>(k) * 0.5));
    n.set(fb, Value((k & 1) != 0));
    char s[24];
    std::snprintf(s, sizeof s, "node-%llu", static_cast<unsigned long long>(k));
    n.set(fs, Value(std::string_view(s)));
    if (depth > 1) {
      n.set(fl, build(depth - 1));
      n.set(fr, build(depth - 1));
    }
    return n;
  }

  void fill(Metadata* m, double fraction) {
    const std::size_t cap = m->objects_end - m->objects_begin;
    while (static_cast<double>(cap - m->free_bytes.load()) < fraction * static_cast<double>(cap)) {
      for (int i = 0; i < 256; ++i, ++count) lists[count % lists.size()].append(build(4));
    }
  }

  // Replaces `n` trees starting at tree `*window` (oldest first), wrapping around.
  void churn(std::size_t n, std::size_t* window) {
    for (std::size_t k = 0; k < n; ++k) {
      std::size_t t = (*window + k) % count;
      lists[t % lists.size()].set(t / lists.size(), build(4));
    }
    *window = (*window + n) % count;
  }
};

// ---- baselines ------------------------------------------------------------------------------

struct Walked {
  std::uint64_t objects = 0, bytes = 0;
};

// Plain single-threaded depth-first walk over everything reachable from the collector's roots.
// Mirrors the marker's reference discovery (same slots per kind) without atomics' ordering.
class PlainDfs {
 public:
  explicit PlainDfs(Metadata* m) : m_(m), bits_(((m->objects_end - m->objects_begin) / kGranule + 63) / 64) {
    stack_.reserve(1 << 16);
  }

  void reset() { std::fill(bits_.begin(), bits_.end(), 0); }

  // From explicit roots only (the 2-thread calibration: disjoint halves of the trees).
  Walked run_from(const std::vector<Word>& roots) {
    Walked r;
    for (Word w : roots) visit(r, w);
    drain(r);
    return r;
  }

  Walked run() {
    Walked r;
    for (const ClientSlot& cs : m_->clients) {
      if (cs.state.load(std::memory_order_relaxed) != static_cast<std::uint32_t>(ClientState::kFree))
        visit(r, cs.roots.load(std::memory_order_relaxed));
    }
    for_each_repository(m_, [&](RepositoryRecord* rr) { visit(r, rr->root.load(std::memory_order_relaxed)); });
    for_each_channel(m_, [&](ChannelRecord* c) { for_each_channel_slot(c, [&](std::atomic<Word>*, Word v) { visit(r, v); }); });
    drain(r);
    return r;
  }

 private:
  void drain(Walked& r) {
    while (!stack_.empty()) {
      Word o = stack_.back();
      stack_.pop_back();
      trace(r, o);
    }
  }

  void visit(Walked& r, Word ref) {
    if (!is_ref(ref) || ref < m_->objects_begin || ref >= m_->objects_end) return;
    std::size_t g = (ref - m_->objects_begin) / kGranule;
    std::uint64_t bit = std::uint64_t{1} << (g % 64);
    if (bits_[g / 64] & bit) return;
    bits_[g / 64] |= bit;
    std::uint64_t w = header_at(ref)->word.load(std::memory_order_relaxed);
    if (BlockHeader::kind_of(w) != BlockKind::kObject) return;
    r.objects += 1;
    r.bytes += BlockHeader::size_of(w);
    stack_.push_back(ref);
  }

  void slots(Walked& r, std::atomic<Word>* s, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) visit(r, s[i].load(std::memory_order_relaxed));
  }

  void trace(Walked& r, Word obj) {
    auto* o = reinterpret_cast<ObjectHead*>(obj);
    const std::size_t block = BlockHeader::size_of(o->block.word.load(std::memory_order_relaxed));
    switch (o->cls.load(std::memory_order_relaxed)->kind) {
      case TypeKind::kArray:
      case TypeKind::kExtension:
      case TypeKind::kRootChunk: {
        auto* a = reinterpret_cast<ArrayObject*>(obj);
        slots(r, a->slots, a->capacity);
        break;
      }
      case TypeKind::kList: visit(r, reinterpret_cast<ListObject*>(obj)->array.load(std::memory_order_relaxed)); break;
      case TypeKind::kSet:
      case TypeKind::kMap: visit(r, reinterpret_cast<HashObject*>(obj)->table.load(std::memory_order_relaxed)); break;
      case TypeKind::kTable: {
        auto* t = reinterpret_cast<TableObject*>(obj);
        for (std::size_t i = 0; i < t->capacity; ++i) {
          visit(r, t->entries[i].key.load(std::memory_order_relaxed));
          visit(r, t->entries[i].value.load(std::memory_order_relaxed));
        }
        break;
      }
      case TypeKind::kObject: {
        auto* u = reinterpret_cast<UserObject*>(obj);
        visit(r, u->extension.load(std::memory_order_relaxed));
        slots(r, u->slots, (block - sizeof(UserObject)) / sizeof(Word));
        break;
      }
      default: break;
    }
  }

  Metadata* m_;
  std::vector<std::uint64_t> bits_;
  std::vector<Word> stack_;
};

// One plain pass over [begin, end) reading every block header.
std::uint64_t linear_pass(std::uintptr_t begin, std::uintptr_t end) {
  std::uint64_t blocks = 0, kinds = 0;
  for (std::uintptr_t p = begin; p < end;) {
    std::uint64_t w = header_at(p)->word.load(std::memory_order_relaxed);
    std::size_t size = BlockHeader::size_of(w);
    if (size == 0) break;
    kinds += w & 0xff;
    ++blocks;
    p += size;
  }
  return blocks + (kinds & 1);
}

// The first block boundary at or after the middle of the objects space.
std::uintptr_t middle_boundary(Metadata* m) {
  const std::uintptr_t mid = m->objects_begin + (m->objects_end - m->objects_begin) / 2;
  std::uintptr_t p = m->objects_begin;
  while (p < mid) p += BlockHeader::size_of(header_at(p)->word.load(std::memory_order_relaxed));
  return p;
}

// Runs a() on a second thread and b() on this one; returns the wall time of both.
template <class A, class B>
double in_parallel(A&& a, B&& b) {
  auto t0 = bench::now();
  std::thread t(std::forward<A>(a));
  b();
  t.join();
  return bench::ns_since(t0);
}

// A table row in milliseconds (the cycle-level figures), same columns as bench::row.
void row_ms(std::ostream& out, const std::string& what, double ours_ns, double base_ns, const std::string& note) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "| %-75s | %7.1f ms | %7.1f ms | %6.2fx | %s |", what.c_str(), ours_ns / 1e6, base_ns / 1e6,
                base_ns / ours_ns, note.c_str());
  out << buf << "\n";
}

// ---- part 1 -----------------------------------------------------------------------------------

struct Best {
  double clear = 1e30, mark = 1e30, remark = 1e30, sweep = 1e30, total = 1e30, walk_sweep = 1e30, mark_remark = 1e30;
  std::uint64_t passes_min = ~0ULL, passes_max = 0;
  std::uint64_t objects_marked = 0, bytes_marked = 0, bytes_freed = 0, objects_freed = 0;
  int n = 0;
  void add(const GcCycleStats& s) {
    clear = std::min(clear, double(s.clear_ns));
    mark = std::min(mark, double(s.mark_ns));
    remark = std::min(remark, double(s.remark_ns));
    sweep = std::min(sweep, double(s.sweep_ns));
    total = std::min(total, double(s.total_ns));
    walk_sweep = std::min(walk_sweep, double(s.clear_ns + s.sweep_ns));
    mark_remark = std::min(mark_remark, double(s.mark_ns + s.remark_ns));
    passes_min = std::min(passes_min, s.marking_passes);
    passes_max = std::max(passes_max, s.marking_passes);
    objects_marked += s.objects_marked;
    bytes_marked += s.bytes_marked;
    bytes_freed += s.bytes_freed;
    objects_freed += s.objects_freed;
    ++n;
  }
};

double ms(double ns) { return ns / 1e6; }
double mib(double b) { return b / (1 << 20); }

void part_cycles(std::ostream& out, Metadata* m, Trees& trees, bool quick) {
  const int rounds = quick ? 2 : 6;
  const std::size_t churn = trees.count / 10;
  std::size_t window = 0;
  gc::Options o1, o2;
  o1.threads = 1;
  o2.threads = 2;
  gc::Collector c1(m, o1), c2(m, o2);
  // Warm-up, untimed: the pending flags left by building (every dropped handle flags its
  // object), the build garbage, and one churn so that every timed cycle frees a churn's trees.
  c2.run_cycle();
  trees.churn(churn, &window);
  c2.run_cycle();

  PlainDfs dfs(m), dfs_b(m);
  std::vector<Word> half_a, half_b;  // the trees' lists, split in two (the roots of the 2-thread DFS)
  for (std::size_t i = 0; i < trees.lists.size(); ++i) (i % 2 == 0 ? half_a : half_b).push_back(trees.lists[i].raw());
  double dfs_best = 1e30, dfs2_best = 1e30, lin_best = 1e30, lin2_best = 1e30;
  Walked walked;
  Best b1, b2;
  for (int r = 0; r < rounds; ++r) {
    for (int t = 1; t <= 2; ++t) {
      trees.churn(churn, &window);
      dfs.reset();
      auto t0 = bench::now();
      walked = dfs.run();
      dfs_best = std::min(dfs_best, bench::ns_since(t0));
      t0 = bench::now();
      volatile std::uint64_t blocks = linear_pass(m->objects_begin, m->objects_end);
      lin_best = std::min(lin_best, bench::ns_since(t0));
      // Calibration of what 2 threads can give on this machine: the same plain walks split in
      // two disjoint halves, one per thread, no coordination at all.
      dfs.reset();
      dfs_b.reset();
      dfs2_best = std::min(dfs2_best, in_parallel([&] { dfs_b.run_from(half_b); }, [&] { dfs.run_from(half_a); }));
      const std::uintptr_t mid = middle_boundary(m);
      volatile std::uint64_t blocks_b = 0;
      lin2_best = std::min(lin2_best, in_parallel([&] { blocks_b = linear_pass(mid, m->objects_end); },
                                                  [&] { blocks = linear_pass(m->objects_begin, mid); }));
      GcCycleStats s = (t == 1 ? c1 : c2).run_cycle();
      (t == 1 ? b1 : b2).add(s);
    }
  }

  const std::size_t cap = m->objects_end - m->objects_begin;
  HeapUsage u = heap_usage(m);
  out << fmt("\nGC part 1: %.0f MiB heap, %.1f%% used after the last cycle; ", mib(cap), 100.0 * (cap - u.free_bytes) / cap)
      << trees.count << " trees of depth 4 (15 nodes, 45 objects each) in 16 lists + 1 repository; " << churn
      << " trees (10%) replaced before each cycle; best of " << rounds << " cycles per thread count\n";
  out << fmt("  plain DFS over the live graph: %.0f objects, %.1f MiB (%.1f%% of the heap), best %.1f ms (2 threads on disjoint halves: %.1f ms);\n",
             double(walked.objects), mib(walked.bytes), 100.0 * walked.bytes / cap, ms(dfs_best), ms(dfs2_best))
      << fmt("  linear header pass: best %.1f ms (2 threads on halves: %.1f ms)\n", ms(lin_best), ms(lin2_best));
  out << "  | GC threads | walk/partition ms | root+mark ms | remark ms | sweep ms | cycle ms | passes | objects marked | MiB marked | MiB freed |\n";
  for (int t = 1; t <= 2; ++t) {
    const Best& b = t == 1 ? b1 : b2;
    out << fmt("  | %10.0f | %17.1f | %12.1f | %9.1f | %8.1f | %8.1f |", t, ms(b.clear), ms(b.mark), ms(b.remark), ms(b.sweep),
               ms(b.total))
        << fmt(" %2.0f..%-3.0f | %14.0f | %10.1f | %9.1f |\n", double(b.passes_min), double(b.passes_max),
               double(b.objects_marked) / b.n, mib(double(b.bytes_marked) / b.n), mib(double(b.bytes_freed) / b.n));
  }
  out << "  (phase columns: best of each phase; objects/MiB: mean per cycle. Marked = live graph + the trees dropped by\n"
         "   the churn just before the cycle, which the write barrier flagged pending before the cycle started: by\n"
         "   design that cycle keeps them and the next one frees them. remark = the pending passes, each a heap walk.)\n";
  auto target = [](double ratio, double limit) {
    return fmt(ratio <= limit ? "ours/base %.2f, target <= %.0f" : "ours/base %.2f, target <= %.0f (ABOVE TARGET)", ratio, limit);
  };
  for (int t = 1; t <= 2; ++t) {
    const Best& b = t == 1 ? b1 : b2;
    std::string th = t == 1 ? "1 GC thread" : "2 GC threads";
    row_ms(out, "GC root+mark pass, " + th + " (vs plain 1-thread DFS, same graph)", b.mark, dfs_best,
           target(b.mark / dfs_best, 2));
    row_ms(out, "GC root+mark + remark passes, " + th + " (vs plain 1-thread DFS)", b.mark_remark, dfs_best,
           target(b.mark_remark / dfs_best, 2));
    row_ms(out, "GC walk/partition + sweep, " + th + " (vs 1 linear header pass)", b.walk_sweep, lin_best,
           target(b.walk_sweep / lin_best, 2));
  }
  row_ms(out, "GC root+mark, 2 threads (vs same with 1 thread): parallel speed-up", b2.mark, b1.mark,
         fmt("2 cores; plain DFS split in 2: %.2fx", dfs_best / dfs2_best));
  row_ms(out, "GC walk/partition + sweep, 2 threads (vs same, 1 thread): speed-up", b2.walk_sweep, b1.walk_sweep,
         fmt("2 cores; linear pass split in 2: %.2fx", lin_best / lin2_best));
  row_ms(out, "GC whole cycle, 2 threads (vs same with 1 thread): parallel speed-up", b2.total, b1.total, "2 cores");
}

// ---- part 2 -----------------------------------------------------------------------------------

using Clock = std::chrono::steady_clock;
double ns_of(Clock::time_point t) { return std::chrono::duration<double, std::nano>(t.time_since_epoch()).count(); }

struct Outlier {
  double start_ns, latency_ns;
  bool refill;  // the iteration carved a new TLAB from the freelist (heap_lock)
};

struct Latencies {
  std::vector<std::uint32_t> ns;   // every iteration
  std::vector<Outlier> outliers;   // iterations above 100 us
  std::uint64_t stalls = 0;        // iterations during which the allocator asked for a cycle
  std::uint64_t stall_max_ns = 0;
  std::uint64_t other_max_ns = 0;  // the largest latency of an iteration that did not stall
  std::uint64_t cycles = 0;        // cycles finished while timing
  double wall_ns = 0;
  long invol_cs = 0, vol_cs = 0;   // context switches of the mutator thread while timed
  std::uint64_t min_free = ~0ULL;  // lowest free bytes seen at an iteration start
};

long context_switches(bool involuntary) {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return involuntary ? ru.ru_nivcsw : ru.ru_nvcsw;
}

struct LinkLoop {
  Class cls;
  Field fnext, fval;
  std::vector<Object> ring;  // the last R objects (client roots); each links to its predecessor
  std::uint64_t i = 0;

  explicit LinkLoop(std::size_t r) : ring(r) {
    cls = define_class("bench.Link", {{"next", TypeKind::kAny, ""}, {"v", TypeKind::kInteger, ""}});
    fnext = Field(cls, "next");
    fval = Field(cls, "v");
  }

  // `n` timed iterations appended to `lat`.
  void run(Metadata* m, std::size_t n, Latencies& lat) {
    const std::size_t r = ring.size();
    const long ic0 = context_switches(true), vc0 = context_switches(false);
    auto w0 = bench::now();
    for (std::size_t k = 0; k < n; ++k, ++i) {
      const std::uint32_t req = m->gc_request_seq.load(std::memory_order_relaxed);
      const std::uint64_t fr = m->free_bytes.load(std::memory_order_relaxed);
      const std::uint64_t alloc = m->allocated_bytes_total.load(std::memory_order_relaxed);
      if (fr < lat.min_free) lat.min_free = fr;
      auto t0 = bench::now();
      Object o = new_object(cls);
      o.set(fval, Value(static_cast<long long>(i)));
      const std::size_t j = i % r;
      o.set(fnext, ring[(j + r - 1) % r]);
      ring[j] = std::move(o);                     // drops the oldest handle
      Object& oldest = ring[(j + 1) % r];          // cut the chain behind the new oldest
      if (!oldest.is_null()) oldest.set(fnext, Value());
      const double dt = bench::ns_since(t0);
      const std::uint32_t v = dt > 4e9 ? 4000000000u : static_cast<std::uint32_t>(dt);
      lat.ns.push_back(v);
      if (v > 100000)
        lat.outliers.push_back({ns_of(t0), dt, m->allocated_bytes_total.load(std::memory_order_relaxed) != alloc});
      if (m->gc_request_seq.load(std::memory_order_relaxed) != req) {
        ++lat.stalls;
        lat.stall_max_ns = std::max<std::uint64_t>(lat.stall_max_ns, v);
      } else {
        lat.other_max_ns = std::max<std::uint64_t>(lat.other_max_ns, v);
      }
    }
    lat.wall_ns += bench::ns_since(w0);
    lat.invol_cs += context_switches(true) - ic0;
    lat.vol_cs += context_switches(false) - vc0;
  }
};

struct TimedCycle {
  double start_ns;
  GcCycleStats s;
};

// Which collector phase the middle of an outlier fell into.
const char* phase_at(const std::vector<TimedCycle>& cycles, double t) {
  for (const TimedCycle& c : cycles) {
    double p = c.start_ns;
    if (t < p) continue;
    if (t < (p += c.s.clear_ns)) return "walk";
    if (t < (p += c.s.mark_ns)) return "mark";
    if (t < (p += c.s.remark_ns)) return "remark";
    if (t < (p += c.s.sweep_ns)) return "sweep";
  }
  return "between";
}

void print_latencies(std::ostream& out, const std::string& what, Latencies& l, double cycle_ms) {
  std::vector<std::uint32_t> v = l.ns;
  std::sort(v.begin(), v.end());
  auto pct = [&](double p) { return double(v[std::min(v.size() - 1, static_cast<std::size_t>(p * v.size()))]); };
  std::size_t over100us = v.end() - std::upper_bound(v.begin(), v.end(), 100000u);
  std::size_t over1ms = v.end() - std::upper_bound(v.begin(), v.end(), 1000000u);
  double sum = 0, sum_short = 0;
  for (std::size_t k = 0; k < v.size(); ++k) {
    sum += v[k];
    if (k < v.size() - over100us) sum_short += v[k];
  }
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "  | %-29s | %5.0f | %5.0f | %6.0f | %8.0f | %4.0f/%-4.0f | %6zu | %5zu | %5.2f | %6llu | %4llu, max %7.0f us | %3ld/%-4ld | %6.1f |\n",
                what.c_str(), pct(0.5), pct(0.99), pct(0.999), double(v.back()) / 1e3, sum / v.size(),
                sum_short / double(v.size() - over100us), over100us, over1ms,
                v.size() / (l.wall_ns / 1e9) / 1e6, static_cast<unsigned long long>(l.cycles),
                static_cast<unsigned long long>(l.stalls), double(l.stall_max_ns) / 1e3, l.invol_cs, l.vol_cs, cycle_ms);
  out << buf;
}

void part_mutator(std::ostream& out, Metadata* m, bool quick) {
  const std::size_t total = quick ? 1000000 : 3000000;
  const std::size_t round = 500000;  // GC off: timed rounds of this many, cycles in between
  out << "\nGC part 2: mutator allocate-and-link loop (new 48-byte object, linked into a shared queue of the last 4096,\n"
         "  oldest dropped; 4 barriered stores per iteration) on the part-1 heap; "
      << total << " timed iterations per row\n";
  out << "  | run                           | p50ns | p99ns | p99.9ns |   max us | mean ns * | >100us | >1 ms | Mit/s | cycles | stalls              | inv/vol cs | cyc ms |\n";

  LinkLoop loop(4096);
  std::vector<std::string> notes;
  {
    gc::Options o;
    o.threads = 2;
    gc::Collector c(m, o);
    Latencies l;
    l.ns.reserve(total);
    for (std::size_t done = 0; done < total; done += round) {
      loop.run(m, std::min(round, total - done), l);
      c.run_cycle();  // not timed: keeps the heap from filling; no cycle runs during a timed round
      c.run_cycle();
    }
    print_latencies(out, "GC off", l, 0);
  }
  {
    // Control: GC off, but another thread keeps one CPU busy reading the heap (linear header
    // passes) while the mutator is timed: the CPU competition of a 1-thread collector without
    // any of its synchronisation.
    gc::Options o;
    o.threads = 2;
    gc::Collector c(m, o);
    Latencies l;
    l.ns.reserve(total);
    for (std::size_t done = 0; done < total; done += round) {
      std::atomic<bool> stop{false};
      std::thread hog([&] {
        std::uint64_t sink = 0;
        while (!stop.load(std::memory_order_relaxed)) sink += linear_pass(m->objects_begin, m->objects_end);
        asm volatile("" : : "r"(sink));  // keep the passes
      });
      loop.run(m, std::min(round, total - done), l);
      stop.store(true);
      hog.join();
      c.run_cycle();
      c.run_cycle();
    }
    print_latencies(out, "GC off, 1 CPU hog (control)", l, 0);
  }
  for (unsigned threads : {2u, 1u}) {
    gc::Options o;
    o.threads = threads;
    o.threshold_percent = 100;  // the collector's own thread only answers allocation stalls
    gc::Collector c(m, o);
    c.start();
    c.run_cycle();
    c.run_cycle();
    std::atomic<bool> stop{false};
    std::vector<TimedCycle> cycles;
    std::uint64_t done0 = m->gc_done_seq.load();
    std::thread driver([&] {
      while (!stop.load(std::memory_order_acquire)) {
        double t = ns_of(Clock::now());
        cycles.push_back({t, c.run_cycle()});
      }
    });
    Latencies l;
    l.ns.reserve(total);
    loop.run(m, total, l);
    l.cycles = m->gc_done_seq.load() - done0;
    stop.store(true, std::memory_order_release);
    driver.join();
    c.stop();
    double sum = 0;
    for (auto& tc : cycles) sum += double(tc.s.total_ns);
    const std::string name = "back-to-back GC, " + std::to_string(threads) + " GC thread" + (threads == 1 ? "" : "s");
    print_latencies(out, name, l, cycles.empty() ? 0 : ms(sum / cycles.size()));
    // Where the outliers above 1 ms fell.
    std::map<std::string, int> where;
    int refills = 0, big = 0;
    for (const Outlier& x : l.outliers) {
      if (x.latency_ns < 1e6) continue;
      ++big;
      refills += x.refill;
      where[std::string(phase_at(cycles, x.start_ns + x.latency_ns / 2)) + (x.refill ? "+refill" : "")]++;
    }
    std::string n = "    " + name + ": " + std::to_string(big) + " iterations > 1 ms, by collector phase at their middle:";
    for (auto& [k, c] : where) n += " " + k + " " + std::to_string(c);
    n += fmt("; %.0f of them refilled a TLAB (a refill happens every ~680 iterations); max without stalls %.0f us;"
             " lowest free heap %.1f MiB\n", refills, double(l.other_max_ns) / 1e3, mib(double(l.min_free)));
    notes.push_back(n);
  }
  for (auto& n : notes) out << n;
  out << "  * mean of all iterations / of those under 100 us.\n";
  out << "  stalls: iterations during which the allocator found no free space and waited for a cycle (counted apart;\n"
         "  they are also in the percentiles; one lasts up to two cycles: the one running and the one it asked for).\n"
         "  They happen when the mutator allocates faster than cycles free: garbage dropped before a cycle starts is\n"
         "  freed only by the cycle after it (gc/README.md), so ~2 cycles of allocation must fit in the free heap.\n"
         "  inv/vol cs: involuntary/voluntary context switches of the mutator thread while timed (vol: it blocked,\n"
         "  on a lock or waiting out a stall). cyc ms: mean cycle time under load. Outliers: the machine has 2 cores;\n"
         "  with 2 GC threads both collector threads and the mutator compete for them and the scheduler preempts the\n"
         "  mutator for whole time slices (ms), seen as involuntary switches; with 1 GC thread one core is left for\n"
         "  the mutator, but other processes (load average above; see the GC off row) take CPUs too. No collector\n"
         "  phase waits for or stops the mutator; only stalls make it wait.\n";
}

}  // namespace

void bench_gc(std::ostream& out) {
  const char* q = std::getenv("COLORS_BENCH_QUICK");
  const bool quick = q != nullptr && *q != '\0' && *q != '0';
  test::TestSegment seg(256 << 20, 16 << 20);
  Metadata* m = seg.meta();
  Trees trees;
  auto t0 = bench::now();
  trees.fill(m, 0.70);
  double build_ms = ms(bench::ns_since(t0));
  double load[1] = {0};
  getloadavg(load, 1);
  out << "\nGC benchmark" << (quick ? " (quick)" : "")
      << fmt(": heap filled in %.0f ms; %.0f CPUs, load average %.2f before the run (other work competes for the CPUs)\n",
             build_ms, double(std::thread::hardware_concurrency()), load[0]);
  part_cycles(out, m, trees, quick);
  part_mutator(out, m, quick);
  out.flush();
}
