// oo7-bench: the OO7 operations on the shared database against the same operations on the
// private structs, in one process and run (not a test). Each round times every operation on both
// databases (alternating which goes first), the ratio of a round is shared/private, and the table
// shows the median ratio over the rounds. Needs a running colors-server (COLORS_SOCKET).
#include <algorithm>
#include <ctime>
#include <colors/colors.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "fingerprint.hpp"
#include "operations.hpp"
#include "params.hpp"
#include "private_access.hpp"
#include "private_builder.hpp"
#include "shared_access.hpp"
#include "shared_builder.hpp"
#include "shared_schema.hpp"

namespace oo7 {
namespace {

const char* const kUsage =
    "usage: oo7-bench [--size small|medium] [--seed N] [--rounds N] [--min-ms MS]\n"
    "  builds OO7 in the heap of the server COLORS_SOCKET names and in private structs, then\n"
    "  times T1, T6, T2b and Q7 on both in interleaved rounds (median of shared/private ratios)\n";

// This thread's CPU time: on a machine shared with other jobs, time spent descheduled would
// otherwise land on whichever side happened to be running.
double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// Milliseconds of CPU per run of `op`, over `reps` runs.
template <class A>
double time_ms(const A& a, Op op, int reps) {
  const double t0 = cpu_ms();
  for (int i = 0; i < reps; ++i) {
    OpResult r = run_op(a, op);
    keep(static_cast<std::uintptr_t>(r.count + static_cast<std::uint64_t>(r.sum)));
  }
  return (cpu_ms() - t0) / reps;
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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int run(int argc, char** argv) {
  std::string size = "small";
  std::uint64_t seed = 42;
  int rounds = 11;
  double min_ms = 20;
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

  const Op ops[] = {Op::kT1, Op::kT6, Op::kT2b, Op::kQ7};
  std::printf("OO7 %s seed %llu, C++: shared heap (colors::Object/List through the public API) vs structs\n",
              p.size.c_str(), static_cast<unsigned long long>(seed));
  std::printf("%d rounds; per round each op repeated to take >= %.0f ms on the shared side; thread CPU time\n\n", rounds, min_ms);
  double t1_private_ms = 0, t1_shared_ms = 0;
  std::printf("%-5s %14s %14s %10s %17s\n", "op", "private ms/op", "shared ms/op", "ratio", "ratio min..max");
  for (Op op : ops) {
    // Repetitions per timing so that a round's shared run takes at least min_ms.
    double one = std::max(time_ms(sa, op, 1), 1e-3);
    int reps = std::max(1, static_cast<int>(min_ms / one));
    std::vector<double> ratios, pms, sms;
    for (int r = 0; r < rounds; ++r) {
      double ps, ss;
      if (r % 2 == 0) {
        ps = time_ms(pa, op, reps);
        ss = time_ms(sa, op, std::max(1, reps));
      } else {
        ss = time_ms(sa, op, reps);
        ps = time_ms(pa, op, reps);
      }
      pms.push_back(ps);
      sms.push_back(ss);
      ratios.push_back(ss / ps);
    }
    auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
    std::printf("%-5s %14.4f %14.4f %9.2fx %8.2f..%-8.2f\n", op_name(op), median(pms), median(sms), median(ratios), *lo,
                *hi);
    if (op == Op::kT1) {
      t1_private_ms = median(pms);
      t1_shared_ms = median(sms);
    }
  }
  const double accesses = static_cast<double>(t1_object_accesses(p));
  std::printf("\nT1 makes %.0f object accesses (SPEC.md): %.1f ns each on structs, %.1f ns on the shared heap\n",
              accesses, t1_private_ms * 1e6 / accesses, t1_shared_ms * 1e6 / accesses);
  std::printf("issue 18 target: T1 shared <= 1.5x structs\n");
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
