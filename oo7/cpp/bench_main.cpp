// oo7-bench: the OO7 operations on the shared database against the same operations on the
// private structs, in one process and run (not a test). Each round times every operation on both
// databases (alternating which goes first), the ratio of a round is shared/private, and the table
// shows the median ratio over the rounds. Needs a running colors-server (COLORS_SOCKET).
#include <algorithm>
#include <map>
#include <ctime>
#include <colors/colors.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "fingerprint.hpp"
#include "indexes.hpp"
#include "operations.hpp"
#include "params.hpp"
#include "private_access.hpp"
#include "private_builder.hpp"
#include "queries.hpp"
#include "shared_access.hpp"
#include "shared_view_access.hpp"
#include "shared_builder.hpp"
#include "shared_schema.hpp"

namespace oo7 {
namespace {

const char* const kUsage =
    "usage: oo7-bench [--size small|medium] [--seed N] [--rounds N] [--min-ms MS] [--only t1,t1-rooted,q2,...]\n"
    "  builds OO7 in the heap of the server COLORS_SOCKET names and in private structs, then\n"
    "  times T1, T6, T2b and Q7 on both in interleaved rounds (median of shared/private ratios),\n"
    "  and Q1, Q2, Q3 through the shared sorted-map indexes vs std::unordered_map / std::map\n"
    "  (rows q1-locked.. read the indexes through SortedMap's locked reads; q1-floor is a private\n"
    "  std::map against the std::unordered_map)\n";

// This thread's CPU time: on a machine shared with other jobs, time spent descheduled would
// otherwise land on whichever side happened to be running.
double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Milliseconds of CPU per call of `run` (returning an OpResult), over `reps` calls.
template <class F>
double time_ms(const F& run, int reps) {
  const double t0 = cpu_ms();
  for (int i = 0; i < reps; ++i) {
    OpResult r = run();
    keep(static_cast<std::uintptr_t>(r.count + static_cast<std::uint64_t>(r.sum)));
  }
  return (cpu_ms() - t0) / reps;
}

struct Row {
  double private_ms, shared_ms;
};

// One table row: interleaved rounds (alternating which side goes first), each timing repeated so
// that the shared side takes at least min_ms; prints the medians and the median per-round ratio.
template <class P, class S>
Row bench_row(const char* name, const P& on_private, const S& on_shared, int rounds, double min_ms) {
  double one = std::max(time_ms(on_shared, 1), 1e-4);
  int reps = std::max(1, static_cast<int>(min_ms / one));
  std::vector<double> ratios, pms, sms;
  for (int r = 0; r < rounds; ++r) {
    double ps, ss;
    if (r % 2 == 0) {
      ps = time_ms(on_private, reps);
      ss = time_ms(on_shared, reps);
    } else {
      ss = time_ms(on_shared, reps);
      ps = time_ms(on_private, reps);
    }
    pms.push_back(ps);
    sms.push_back(ss);
    ratios.push_back(ss / ps);
  }
  auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
  std::printf("%-9s %14.4f %14.4f %9.2fx %8.2f..%-8.2f\n", name, median(pms), median(sms), median(ratios), *lo, *hi);
  std::fflush(stdout);
  return {median(pms), median(sms)};
}

// The object accesses T1 makes (SPEC.md "T1": field reads through a reference, a list-valued
// field counting once): designRoot, each complex assembly's subAssemblies, each base assembly's
// components, each component's rootPart, each visited part's `to`, each connection's `to`.
std::uint64_t t1_object_accesses(const Params& p) {
  std::uint64_t complex = 0, level = 1;
  for (int l = p.assm_levels; l > 1; --l, level *= static_cast<std::uint64_t>(p.assm_per_assm)) complex += level;
  const std::uint64_t base = level;
  const std::uint64_t roots = base * static_cast<std::uint64_t>(p.comp_per_assm);
  const std::uint64_t visits = roots * static_cast<std::uint64_t>(p.atomic_per_comp);
  return 1 + complex + base + roots + visits * (1 + static_cast<std::uint64_t>(p.conn_per_atomic));
}

// Q1 through a private ordered map: the floor an ordered index sets (q1-floor).
struct OrderedIdAccess {
  const std::map<std::int64_t, priv::AtomicPart*>& by_id;
  template <class F>
  void find(std::int64_t id, F&& fn) const {
    auto it = by_id.find(id);
    if (it != by_id.end()) fn(it->second->x);
  }
};

// Q1, Q2, Q3 through SortedMap's locked reads (a GC root per entry read), for comparison with the
// SortedMapView reads of SharedIndexAccess (the *-locked rows); the date lists and their parts are
// read through views in both.
class LockedIndexAccess {
 public:
  LockedIndexAccess(const SharedAccess& a, const SharedIndexes& ix) : a_(a), ix_(ix) {}
  template <class F>
  void find(std::int64_t id, F&& fn) const {
    std::optional<colors::Value> v = ix_.by_id.get(colors::Value(static_cast<long long>(id)));
    if (v) fn(a_.x({SharedAccess::object(std::move(*v))}));
  }
  template <class F>
  void dates(std::int64_t lo, std::int64_t hi, F&& fn) const {
    using B = colors::SortedMap::Bound;
    auto entries = ix_.by_date.range(B::at(colors::Value(static_cast<long long>(lo))),
                                     B::at(colors::Value(static_cast<long long>(hi)), false));
    colors::ReadScope scope;
    const colors::Field& x = a_.schema().part.x;
    colors::ValueView chunk[16];
    for (auto& [date, value] : entries) {
      const colors::ListView same = colors::ValueView(value).as_list();
      for (std::size_t from = 0, k; (k = same.read(from, chunk, 16)) > 0; from += k)
        for (std::size_t i = 0; i < k; ++i) fn(chunk[i].as_object().get(x).as_int());
    }
  }

 private:
  const SharedAccess& a_;
  const SharedIndexes& ix_;
};

int run(int argc, char** argv) {
  std::string size = "small";
  std::uint64_t seed = 42;
  int rounds = 11;
  double min_ms = 20;
  std::string only;  // comma-separated rows to run (default: all)
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (i + 1 >= argc) throw colors::InvalidArgumentError(a + ": unknown option or missing value");
    std::string v = argv[++i];
    try {
      if (a == "--size") size = v;
      else if (a == "--seed") seed = std::stoull(v);
      else if (a == "--rounds") rounds = std::max(1, std::stoi(v));
      else if (a == "--min-ms") min_ms = std::max(1.0, std::stod(v));
      else if (a == "--only") only = "," + v + ",";
      else throw colors::InvalidArgumentError("unknown option '" + a + "'");
    } catch (const std::logic_error&) {
      throw colors::InvalidArgumentError(a + " needs a number, got '" + v + "'");
    }
  }
  const Params p = params_for(size);
  colors::attach();
  const Schema s = define_schema();
  colors::Object db = build_shared(s, p, seed);
  auto priv = build_private(p, seed);
  SharedAccess sa(s, db);
  PrivateAccess pa(*priv);
  if (fingerprint(sa) != fingerprint(pa)) {
    std::fprintf(stderr, "oo7-bench: the shared and private databases differ (fingerprints)\n");
    return 1;
  }

  // The queries: shared sorted maps (built as the loader builds them) vs the private indexes,
  // compared before T2b runs (the calibration runs T2b once more on the shared side).
  const SharedIndexes six = build_shared_indexes(sa);
  const PrivateIndexes pix = build_private_indexes(*priv);
  SharedIndexAccess si(sa, six);
  PrivateIndexAccess pi(pix);
  for (Query q : {Query::kQ1, Query::kQ2, Query::kQ3}) {
    if (run_query(si, q, seed, atomic_parts(p)) != run_query(pi, q, seed, atomic_parts(p))) {
      std::fprintf(stderr, "oo7-bench: %s differs between the shared and the private indexes\n", query_name(q));
      return 1;
    }
  }

  const Op ops[] = {Op::kT1, Op::kT6, Op::kT2b, Op::kQ7};
  auto wanted = [&](const char* name) { return only.empty() || only.find("," + std::string(name) + ",") != std::string::npos; };
  std::printf("OO7 %s seed %llu, C++: shared heap through the public API (read-only ops in a read scope through views,\n"
              "updates through colors::Object in transactions) vs structs\n",
              p.size.c_str(), static_cast<unsigned long long>(seed));
  std::printf("%d rounds; per round each op repeated to take >= %.0f ms on the shared side; thread CPU time\n\n", rounds, min_ms);
  double t1_private_ms = 0, t1_shared_ms = 0;
  std::printf("%-9s %14s %14s %10s %17s\n", "op", "private ms/op", "shared ms/op", "ratio", "ratio min..max");
  for (Op op : ops) {
    if (!wanted(op_name(op))) continue;
    Row row = bench_row(op_name(op), [&] { return run_op(pa, op); }, [&] { return run_shared_op(sa, op); }, rounds, min_ms);
    if (op == Op::kT1) {
      t1_private_ms = row.private_ms;
      t1_shared_ms = row.shared_ms;
    }
  }
  // T1 through rooted handles (colors::Object, a GC root per reference read), for comparison.
  if (wanted("t1-rooted"))
    bench_row("t1-rooted", [&] { return run_op(pa, Op::kT1); }, [&] { return run_op(sa, Op::kT1); }, rounds, min_ms);
  for (Query q : {Query::kQ1, Query::kQ2, Query::kQ3}) {
    if (!wanted(query_name(q))) continue;
    bench_row(query_name(q), [&] { return run_query(pi, q, seed, atomic_parts(p)); },
              [&] { return run_query(si, q, seed, atomic_parts(p)); }, rounds, min_ms);
  }
  // The same queries through SortedMap's locked reads and rooted handles, for comparison.
  const LockedIndexAccess li(sa, six);
  for (Query q : {Query::kQ1, Query::kQ2, Query::kQ3}) {
    const std::string name = std::string(query_name(q)) + "-locked";
    if (!wanted(name.c_str())) continue;
    bench_row(name.c_str(), [&] { return run_query(pi, q, seed, atomic_parts(p)); },
              [&] { return run_query(li, q, seed, atomic_parts(p)); }, rounds, min_ms);
  }
  // Q1's floor for an ordered index: the same lookups through a private std::map (a tree, like
  // the shared index) against the std::unordered_map, both private; the "shared" column is the map.
  if (wanted("q1-floor")) {
    std::map<std::int64_t, priv::AtomicPart*> ordered(pix.by_id.begin(), pix.by_id.end());
    OrderedIdAccess oi{ordered};
    std::printf("q1-floor: private std::map (shared column) vs std::unordered_map, both private\n");
    bench_row("q1-floor", [&] { return q1(pi, seed, atomic_parts(p)); }, [&] { return q1(oi, seed, atomic_parts(p)); }, rounds,
              min_ms);
  }
  const double accesses = static_cast<double>(t1_object_accesses(p));
  if (t1_shared_ms > 0)
    std::printf("\nT1 makes %.0f object accesses (SPEC.md): %.1f ns each on structs, %.1f ns on the shared heap\n",
                accesses, t1_private_ms * 1e6 / accesses, t1_shared_ms * 1e6 / accesses);
  std::printf("issue 18 targets: T1 shared <= 1.5x structs; Q1 <= 2x std::unordered_map, Q2/Q3 <= 2x std::map\n");
  return 0;
}

}  // namespace
}  // namespace oo7

int main(int argc, char** argv) {
  try {
    return oo7::run(argc, argv);
  } catch (const colors::Error& e) {
    std::fprintf(stderr, "oo7-bench: %s\n%s", e.what(), oo7::kUsage);
    return 2;
  }
}
