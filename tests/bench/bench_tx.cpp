// Transactions (libshared/src/transaction.hpp) against the same work without one, and against the
// same work under a monitor, measured in the same run against a real colors-server (the 1- and
// 2-process rows fork client processes). Rounds interleave the variants; each row is the median
// over rounds of the per-round figures, and the note gives the median of the per-round ratios.
//
// Rows:
//  (a) a read-only traversal of depth-4 trees of user objects (fan-out 8: 4,681 nodes, an integer
//      and 8 reference fields each) in one transaction vs outside any (issue 19's target: <= 1.3x),
//      and OO7 T1 over the small database (oo7/cpp) the same way;
//  (b) an update of k objects (k = 1, 10, 1000; one integer field each) in one transaction vs the
//      same writes without one (target <= 3x at k = 10) vs the same writes under one monitor;
//  (c) bank transfers (64 accounts; atomically: two reads, two writes) per second in 1 and 2
//      processes, against the same transfers under one monitor;
//  (d) an STMBench7-style mix over a shared graph (assemblies, composite parts, atomic parts;
//      read-only traversals and lookups, updates of parts and of the structure), read-dominated
//      (90% read-only operations) and write-dominated (10%), in 1 and 2 processes, each operation
//      in atomically, against the same operations under one monitor (STMBench7's coarse lock).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "colors/colors.hpp"

void bench_tx(std::ostream& out);

#ifndef COLORS_SERVER_BIN
void bench_tx(std::ostream& out) { out << "| tx: not built: this build has no colors-server to run against |\n"; }
#else
#include "server_process.hpp"
#ifdef COLORS_BENCH_OO7
#include "operations.hpp"
#include "params.hpp"
#include "shared_access.hpp"
#include "shared_builder.hpp"
#include "shared_schema.hpp"
#endif

namespace {

using namespace colors;

bool quick() { return std::getenv("COLORS_BENCH_QUICK") != nullptr; }

using bench::median;

std::string fmt(const char* f, double a, double b = 0) {
  char buf[200];
  std::snprintf(buf, sizeof buf, f, a, b);
  return buf;
}

// ---- (a) trees ----

struct Tree {
  Class cls;
  Field value;
  std::vector<Field> kids;
};

constexpr int kFanout = 8, kDepth = 4;

Tree tree_class() {
  std::vector<FieldSpec> fs = {{"value", TypeKind::kInteger, ""}};
  for (int i = 0; i < kFanout; ++i) fs.push_back({"k" + std::to_string(i), TypeKind::kObject, "bench.TreeNode"});
  Tree t{define_class("bench.TreeNode", fs), {}, {}};
  t.value = Field(t.cls, "value");
  for (int i = 0; i < kFanout; ++i) t.kids.emplace_back(t.cls, "k" + std::to_string(i));
  return t;
}

Object build_tree(const Tree& t, int depth, long long& next) {
  Object n = new_object(t.cls);
  n.set(t.value, Value(next++));
  if (depth > 0)
    for (const Field& f : t.kids) n.set(f, build_tree(t, depth - 1, next));
  return n;
}

long long sum_tree(const Tree& t, const Object& n, int depth) {
  long long s = n.get(t.value).as_int();
  if (depth > 0)
    for (const Field& f : t.kids) s += sum_tree(t, Object(n.get(f)), depth - 1);
  return s;
}

void bench_traversal(std::ostream& out) {
  Tree t = tree_class();
  long long next = 0;
  Object root = build_tree(t, kDepth, next);
  const long long expect = next * (next - 1) / 2;
  const int rounds = quick() ? 5 : 11, iters = quick() ? 20 : 60;
  std::vector<double> in_ns, out_ns, ratio;
  for (int r = 0; r < rounds; ++r) {
    auto t0 = bench::now();
    for (int i = 0; i < iters; ++i)
      if (sum_tree(t, root, kDepth) != expect) std::abort();
    const double o = bench::ns_since(t0) / iters;
    t0 = bench::now();
    for (int i = 0; i < iters; ++i)
      if (atomically([&] { return sum_tree(t, root, kDepth); }) != expect) std::abort();
    const double in = bench::ns_since(t0) / iters;
    in_ns.push_back(in);
    out_ns.push_back(o);
    ratio.push_back(in / o);
  }
  bench::row(out, "tx: read-only traversal of a depth-4 tree (4,681 objects) in a transaction", median(in_ns), median(out_ns),
             fmt("base: outside; in/out %.2fx (target <= 1.3)", median(ratio)));
}

#ifdef COLORS_BENCH_OO7
// OO7 T1 (oo7/cpp/operations.hpp) over the small shared database, through the public API: every
// field and list read goes through the transaction when one runs.
void bench_oo7_t1(std::ostream& out) {
  const oo7::Params p = oo7::params_for("small");
  const oo7::Schema s = oo7::define_schema();
  Object db = oo7::build_shared(s, p, 1);
  oo7::SharedAccess sa(s, db);
  const oo7::OpResult expect = oo7::run_op(sa, oo7::Op::kT1);
  const int rounds = quick() ? 3 : 7, iters = quick() ? 1 : 3;
  std::vector<double> in_ns, out_ns, ratio;
  for (int r = 0; r < rounds; ++r) {
    auto t0 = bench::now();
    for (int i = 0; i < iters; ++i)
      if (!(oo7::run_op(sa, oo7::Op::kT1) == expect)) std::abort();
    const double o = bench::ns_since(t0) / iters;
    t0 = bench::now();
    for (int i = 0; i < iters; ++i)
      if (!(atomically([&] { return oo7::run_op(sa, oo7::Op::kT1); }) == expect)) std::abort();
    const double in = bench::ns_since(t0) / iters;
    in_ns.push_back(in);
    out_ns.push_back(o);
    ratio.push_back(in / o);
  }
  bench::row(out, "tx: OO7 T1 (small database, " + std::to_string(expect.count) + " part visits) in a transaction",
             median(in_ns), median(out_ns), fmt("base: outside; in/out %.2fx (target <= 1.3)", median(ratio)));
}
#endif

// ---- (b) updates of k objects ----

void bench_updates(std::ostream& out) {
  Class cls = define_class("bench.Counter", {{"n", TypeKind::kInteger, ""}});
  Field n(cls, "n");
  List holder = new_list();
  std::vector<Object> objs;
  for (int i = 0; i < 1000; ++i) {
    objs.push_back(new_object(cls));
    holder.append(objs.back());
  }
  for (int k : {1, 10, 1000}) {
    const long ops = (quick() ? 200000L : 1000000L) / k;  // object writes per variant and round: about the same for every k
    const int rounds = quick() ? 5 : 11;
    std::vector<double> tx_ns, plain_ns, mon_ns, r_plain, r_mon;
    long long v = 0;
    for (int r = 0; r < rounds; ++r) {
      auto t0 = bench::now();
      for (long i = 0; i < ops; ++i) {
        ++v;
        for (int j = 0; j < k; ++j) objs[j].set(n, Value(v));
      }
      const double plain = bench::ns_since(t0) / ops;
      t0 = bench::now();
      for (long i = 0; i < ops; ++i) {
        ++v;
        atomically([&] {
          for (int j = 0; j < k; ++j) objs[j].set(n, Value(v));
        });
      }
      const double tx = bench::ns_since(t0) / ops;
      t0 = bench::now();
      for (long i = 0; i < ops; ++i) {
        ++v;
        Monitor m(holder);
        for (int j = 0; j < k; ++j) objs[j].set(n, Value(v));
      }
      const double mon = bench::ns_since(t0) / ops;
      tx_ns.push_back(tx);
      plain_ns.push_back(plain);
      mon_ns.push_back(mon);
      r_plain.push_back(tx / plain);
      r_mon.push_back(tx / mon);
    }
    const std::string what = "tx: update of " + std::to_string(k) + " object(s) in a transaction";
    bench::row(out, what + " vs without", median(tx_ns), median(plain_ns),
               fmt(k == 10 ? "base: same writes, no transaction; tx/plain %.2fx (target <= 3)" : "base: same writes, no transaction; tx/plain %.2fx",
                   median(r_plain)));
    bench::row(out, what + " vs a monitor", median(tx_ns), median(mon_ns),
               fmt("base: same writes under one monitor; tx/monitor %.2fx", median(r_mon)));
  }
}

// ---- processes ----

// Runs `body(seed, seconds)` (returns its operation count) in `procs` client processes at once;
// returns operations per second, all processes together (-1 if a process failed).
double run_procs(const std::string& socket, int procs, double seconds,
                 const std::function<long long(unsigned, double)>& body) {
  std::vector<pid_t> kids;
  std::vector<int> fds;
  for (int p = 0; p < procs; ++p) {
    int fd[2];
    if (::pipe(fd) != 0) return -1;
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fd[0]);
      long long n = -1;
      try {
        attach(socket);
        n = body(1000u + static_cast<unsigned>(p), seconds);
        detach();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_tx child: %s\n", e.what());
      }
      (void)!::write(fd[1], &n, sizeof n);
      ::_exit(0);
    }
    ::close(fd[1]);
    kids.push_back(pid);
    fds.push_back(fd[0]);
  }
  long long total = 0;
  bool ok = true;
  for (int p = 0; p < procs; ++p) {
    long long n = -1;
    if (::read(fds[p], &n, sizeof n) != sizeof n || n < 0) ok = false;
    total += n;
    ::close(fds[p]);
    int st = 0;
    ::waitpid(kids[p], &st, 0);
  }
  return ok ? static_cast<double>(total) / seconds : -1;
}

using Clock = std::chrono::steady_clock;
bool elapsed(Clock::time_point t0, double seconds) { return std::chrono::duration<double>(Clock::now() - t0).count() >= seconds; }

// ---- (c) transfers ----

long long transfers(unsigned seed, double seconds, bool use_tx) {
  Field bal(define_class("bench.Account", {{"balance", TypeKind::kInteger, ""}}), "balance");
  List accts(repository("bench.accounts").get());
  std::vector<Object> a;
  const std::size_t n = accts.size();
  std::mt19937_64 rng(seed);
  long long count = 0;
  const auto t0 = Clock::now();
  while ((count & 63) != 0 || !elapsed(t0, seconds)) {
    const std::size_t i = rng() % n;
    std::size_t j = rng() % (n - 1);
    if (j >= i) ++j;
    const long long amount = static_cast<long long>(rng() % 100);
    auto body = [&] {
      Object x(accts.get(i)), y(accts.get(j));
      x.set(bal, Value(x.get(bal).as_int() - amount));
      y.set(bal, Value(y.get(bal).as_int() + amount));
    };
    if (use_tx) {
      atomically(body, 10000);
    } else {
      Monitor m(accts);
      body();
    }
    ++count;
  }
  return count;
}

void bench_transfers(std::ostream& out, const std::string& socket) {
  Class cls = define_class("bench.Account", {{"balance", TypeKind::kInteger, ""}});
  List accts = new_list();
  for (int i = 0; i < 64; ++i) {
    Object o = new_object(cls);
    o.set("balance", Value(1000));
    accts.append(o);
  }
  repository("bench.accounts").set(accts);
  const int rounds = quick() ? 3 : 5;
  const double secs = quick() ? 0.4 : 0.8;
  for (int procs : {1, 2}) {
    std::vector<double> tx_rate, mon_rate, ratio;
    for (int r = 0; r < rounds; ++r) {
      const double t = run_procs(socket, procs, secs, [](unsigned s, double d) { return transfers(s, d, true); });
      const double m = run_procs(socket, procs, secs, [](unsigned s, double d) { return transfers(s, d, false); });
      tx_rate.push_back(t);
      mon_rate.push_back(m);
      ratio.push_back(t / m);
    }
    bench::row(out, "tx: bank transfer (atomically), " + std::to_string(procs) + " process(es)", 1e9 / median(tx_rate),
               1e9 / median(mon_rate),
               fmt("base: one monitor; %.0f transfers/s (monitor %.0f/s)", median(tx_rate), median(mon_rate)) +
                   fmt(", tx/monitor throughput %.2fx", median(ratio)));
  }
}

// ---- (d) STMBench7-style mix ----

// The graph: a tree of assemblies (fan-out 3, depth 3: 27 base assemblies), each base assembly
// referring to 3 of 60 composite parts, each composite part owning a ring of 20 atomic parts
// (x, y, build date; `to`: the next in the ring). A repository list of every atomic part serves as
// the lookup index.
struct Schema {
  Class assembly, base, composite, atomic;
  Field a_kids, b_parts, c_root, c_date, p_x, p_y, p_date, p_to, p_id;
};

Schema schema() {
  Schema s;
  s.atomic = define_class("bench.stm7.AtomicPart", {{"id", TypeKind::kInteger, ""},
                                                    {"x", TypeKind::kInteger, ""},
                                                    {"y", TypeKind::kInteger, ""},
                                                    {"date", TypeKind::kInteger, ""},
                                                    {"to", TypeKind::kObject, "bench.stm7.AtomicPart"}});
  s.composite = define_class("bench.stm7.CompositePart",
                             {{"date", TypeKind::kInteger, ""}, {"root", TypeKind::kObject, "bench.stm7.AtomicPart"}});
  s.base = define_class("bench.stm7.BaseAssembly", {{"parts", TypeKind::kList, ""}});
  s.assembly = define_class("bench.stm7.Assembly", {{"kids", TypeKind::kList, ""}});
  s.a_kids = Field(s.assembly, "kids");
  s.b_parts = Field(s.base, "parts");
  s.c_root = Field(s.composite, "root");
  s.c_date = Field(s.composite, "date");
  s.p_x = Field(s.atomic, "x");
  s.p_y = Field(s.atomic, "y");
  s.p_date = Field(s.atomic, "date");
  s.p_to = Field(s.atomic, "to");
  s.p_id = Field(s.atomic, "id");
  return s;
}

constexpr int kComposites = 60, kAtomsPer = 20, kAsmFanout = 3, kAsmDepth = 3, kPartsPerBase = 3;

void build_stm7() {
  Schema s = schema();
  std::mt19937_64 rng(7);
  List composites = new_list(), atoms = new_list(), bases = new_list();
  long long id = 0;
  for (int c = 0; c < kComposites; ++c) {
    Object cp = new_object(s.composite);
    cp.set(s.c_date, Value(static_cast<long long>(rng() % 1000)));
    std::vector<Object> ring;
    for (int a = 0; a < kAtomsPer; ++a) {
      Object p = new_object(s.atomic);
      p.set(s.p_id, Value(id++));
      p.set(s.p_x, Value(static_cast<long long>(rng() % 1000)));
      p.set(s.p_y, Value(static_cast<long long>(rng() % 1000)));
      p.set(s.p_date, Value(static_cast<long long>(rng() % 1000)));
      ring.push_back(p);
      atoms.append(p);
    }
    for (int a = 0; a < kAtomsPer; ++a) ring[a].set(s.p_to, ring[(a + 1) % kAtomsPer]);
    cp.set(s.c_root, ring[0]);
    composites.append(cp);
  }
  std::function<Object(int)> assembly = [&](int depth) -> Object {
    if (depth == 0) {
      Object b = new_object(s.base);
      List parts = new_list();
      for (int i = 0; i < kPartsPerBase; ++i) parts.append(composites.get(rng() % kComposites));
      b.set(s.b_parts, parts);
      bases.append(b);
      return b;
    }
    Object a = new_object(s.assembly);
    List kids = new_list();
    for (int i = 0; i < kAsmFanout; ++i) kids.append(assembly(depth - 1));
    a.set(s.a_kids, kids);
    return a;
  };
  Object root = assembly(kAsmDepth);
  repository("bench.stm7.root").set(root);
  repository("bench.stm7.composites").set(composites);
  repository("bench.stm7.atoms").set(atoms);
  repository("bench.stm7.bases").set(bases);
}

// One process's share of the mix: `read_pct` percent read-only operations. Returns operations done.
long long stm7(unsigned seed, double seconds, int read_pct, bool use_tx) {
  Schema s = schema();
  Object root(repository("bench.stm7.root").get());
  List composites(repository("bench.stm7.composites").get());
  List atoms(repository("bench.stm7.atoms").get());
  List bases(repository("bench.stm7.bases").get());
  const std::size_t n_atoms = atoms.size(), n_bases = bases.size();
  std::mt19937_64 rng(seed);
  long long ops = 0, sink = 0;
  // Read-only: T1-like (every atomic part under the whole assembly tree, ring by ring), a
  // traversal of one base assembly's composite parts, and a lookup of atomic parts by index.
  auto walk_composite = [&](const Object& cp) {
    Object first(cp.get(s.c_root));
    Object p = first;
    long long sum = 0;
    do {
      sum += p.get(s.p_x).as_int();
      p = Object(p.get(s.p_to));
    } while (!p.same_object(first));
    return sum;
  };
  std::function<long long(const Object&)> t1 = [&](const Object& a) -> long long {
    long long sum = 0;
    if (a.cls() == s.base) {
      List parts(a.get(s.b_parts));
      for (std::size_t i = 0, n = parts.size(); i < n; ++i) sum += walk_composite(Object(parts.get(i)));
      return sum;
    }
    List kids(a.get(s.a_kids));
    for (std::size_t i = 0, n = kids.size(); i < n; ++i) sum += t1(Object(kids.get(i)));
    return sum;
  };
  const auto t0 = Clock::now();
  while (!elapsed(t0, seconds)) {
    const bool read_only = static_cast<int>(rng() % 100) < read_pct;
    const unsigned kind = static_cast<unsigned>(rng() % 8);
    const std::uint64_t r1 = rng(), r2 = rng();
    auto op = [&] {
      if (read_only) {
        if (kind == 0) return t1(root);  // long traversal: 1 in 8 read-only operations
        if (kind < 4) {
          Object b(bases.get(r1 % n_bases));
          List parts(b.get(s.b_parts));
          long long sum = 0;
          for (std::size_t i = 0, n = parts.size(); i < n; ++i) sum += walk_composite(Object(parts.get(i)));
          return sum;
        }
        long long sum = 0;
        for (int i = 0; i < 10; ++i) sum += Object(atoms.get((r1 + r2 * i) % n_atoms)).get(s.p_date).as_int();
        return sum;
      }
      if (kind < 4) {  // T2-like: swap x and y of every atomic part of one composite part
        Object cp(composites.get(r1 % kComposites));
        Object first(cp.get(s.c_root));
        Object p = first;
        do {
          Value x = p.get(s.p_x);
          p.set(s.p_x, p.get(s.p_y));
          p.set(s.p_y, x);
          p = Object(p.get(s.p_to));
        } while (!p.same_object(first));
        return 0LL;
      }
      if (kind < 7) {  // update the build dates of a few atomic parts and of their composite
        for (int i = 0; i < 4; ++i) {
          Object p(atoms.get((r1 + r2 * i) % n_atoms));
          p.set(s.p_date, Value(p.get(s.p_date).as_int() + 1));
        }
        Object cp(composites.get(r2 % kComposites));
        cp.set(s.c_date, Value(cp.get(s.c_date).as_int() + 1));
        return 0LL;
      }
      // Structural: a base assembly now uses another composite part.
      Object b(bases.get(r1 % n_bases));
      List parts(b.get(s.b_parts));
      parts.set(r2 % parts.size(), composites.get(r2 % kComposites));
      return 0LL;
    };
    if (use_tx) {
      sink += atomically(op, 10000);
    } else {
      Monitor m(root);
      sink += op();
    }
    ++ops;
  }
  return sink == 42 ? ops + 0 : ops;  // sink keeps the reads from being optimised away
}

void bench_stm7(std::ostream& out, const std::string& socket) {
  build_stm7();
  const int rounds = quick() ? 3 : 5;
  const double secs = quick() ? 0.4 : 0.8;
  for (int read_pct : {90, 10}) {
    for (int procs : {1, 2}) {
      std::vector<double> tx_rate, mon_rate, ratio;
      for (int r = 0; r < rounds; ++r) {
        const double t = run_procs(socket, procs, secs, [read_pct](unsigned sd, double d) { return stm7(sd, d, read_pct, true); });
        const double m = run_procs(socket, procs, secs, [read_pct](unsigned sd, double d) { return stm7(sd, d, read_pct, false); });
        tx_rate.push_back(t);
        mon_rate.push_back(m);
        ratio.push_back(t / m);
      }
      bench::row(out,
                 std::string("tx: STMBench7-style mix, ") + (read_pct == 90 ? "read" : "write") + "-dominated (" +
                     std::to_string(read_pct) + "% read-only), " + std::to_string(procs) + " process(es)",
                 1e9 / median(tx_rate), 1e9 / median(mon_rate),
                 fmt("base: one monitor; %.0f ops/s (monitor %.0f/s)", median(tx_rate), median(mon_rate)) +
                     fmt(", tx/monitor throughput %.2fx", median(ratio)));
    }
  }
}

}  // namespace

void bench_tx(std::ostream& out) {
  test::TempDir dir;
  test::ServerConfig cfg = test::ServerConfig::fresh(dir.path());
  test::ServerProcess server(cfg, cfg.args({"--heap-size", "128M", "--log-level", "warn"}), dir.path() + "/server.log");
  if (!server.wait_ready()) {
    out << "| tx: colors-server did not start (see its log) |\n";
    return;
  }
  attach(cfg.socket);
  bench_traversal(out);
#ifdef COLORS_BENCH_OO7
  bench_oo7_t1(out);
#endif
  bench_updates(out);
  bench_transfers(out, cfg.socket);
  bench_stm7(out, cfg.socket);
  detach();
}
#endif  // COLORS_SERVER_BIN
