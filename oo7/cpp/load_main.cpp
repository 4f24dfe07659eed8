// oo7-load: the C++ OO7 loader and checker (oo7/README.md "Contract"). Exit codes: 0 all checks
// passed, 1 a check failed (expected and found values on stderr), 2 bad usage or a colors error.
#include <chrono>
#include <colors/colors.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "cli.hpp"
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

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

struct Lines {
  std::uint64_t visits, fingerprint, visit_order;
};

template <class A>
Lines lines_of(const A& a) {
  VisitOrder v = visit_order(a);
  return {v.visits, fingerprint(a), v.fold};
}

// Compares one value; prints both on stderr when they differ.
bool expect(const char* what, const std::string& expected, const std::string& found, const char* source) {
  if (expected == found) return true;
  std::fprintf(stderr, "oo7-load: %s mismatch: expected %s (%s), found %s\n", what, expected.c_str(), source,
               found.c_str());
  return false;
}

bool expect_lines(const Lines& want, const Lines& got, const char* source) {
  bool ok = expect("visits", std::to_string(want.visits), std::to_string(got.visits), source);
  ok &= expect("fingerprint", hex16(want.fingerprint), hex16(got.fingerprint), source);
  ok &= expect("visit-order", hex16(want.visit_order), hex16(got.visit_order), source);
  return ok;
}

bool check_indexes(const Params& p, const SharedAccess& shared);

// Prints the contract's lines for the shared database and checks them against SPEC.md's values
// (seed 42 small, untouched database) and against the private database the generator gives.
int print_and_check(const LoadOptions& o, const Params& p, const Schema& s, const colors::Object& db) {
  SharedAccess shared(s, db);
  auto t0 = std::chrono::steady_clock::now();
  Lines got = lines_of(shared);
  double read_ms = ms_since(t0);
  std::printf("oo7 size=%s seed=%llu lang=cpp\n", p.size.c_str(), static_cast<unsigned long long>(o.seed));
  std::printf("visits %llu\n", static_cast<unsigned long long>(got.visits));
  std::printf("fingerprint %s\n", hex16(got.fingerprint).c_str());
  std::printf("visit-order %s\n", hex16(got.visit_order).c_str());
  std::printf("read-back-ms %.1f\n", read_ms);

  bool ok = true;
  const int t2b_runs = o.t2b_runs.value_or(0);
  if (o.seed == 42 && p.size == "small" && t2b_runs == 0)
    ok &= expect_lines({kSeed42SmallVisits, kSeed42SmallFingerprint, kSeed42SmallVisitOrder}, got, "SPEC.md");
  auto priv = build_private(p, o.seed);
  PrivateAccess pa(*priv);
  for (int i = 0; i < t2b_runs; ++i) run_op(pa, Op::kT2b);
  std::string source = "generator, private copy";
  if (t2b_runs > 0) source += " after " + std::to_string(t2b_runs) + " T2b runs";
  ok &= expect_lines(lines_of(pa), got, source.c_str());
  if (t2b_runs > 0) {
    // Which parts differ: a lost update leaves a part swapped an odd number of times too few.
    std::size_t differ = 0, total = 0;
    const auto comps = shared.composites();
    for (std::size_t c = 0; c < SharedAccess::size(comps); ++c) {
      const auto parts = shared.parts(SharedAccess::at(comps, c));
      for (std::size_t k = 0; k < SharedAccess::size(parts); ++k, ++total) {
        const auto sp = SharedAccess::at(parts, k);
        const priv::AtomicPart* pp = priv->composites.at(c)->parts.at(k);
        if (shared.x(sp) != pp->x || shared.y(sp) != pp->y) ++differ;
      }
    }
    std::printf("t2b-runs %d parts %zu differing %zu\n", t2b_runs, total, differ);
    if (differ != 0) {
      std::fprintf(stderr, "oo7-load: %zu of %zu atomic parts do not hold the x/y that %d T2b runs give (lost updates?)\n",
                   differ, total, t2b_runs);
      ok = false;
    }
  }
  ok &= check_indexes(p, shared);
  return ok ? 0 : 1;
}

// Verifies the published indexes against the database; prints "indexes ok", or what is wrong on
// stderr. A database whose loader published no index (neither repository holds one) passes with
// "indexes none".
bool check_indexes(const Params& p, const SharedAccess& shared) {
  std::optional<SharedIndexes> ix = published_indexes(p);
  if (!ix) {
    std::printf("indexes none\n");
    return true;
  }
  std::vector<std::string> problems = index_problems(shared, *ix);
  for (const auto& m : problems) std::fprintf(stderr, "oo7-load: index: %s\n", m.c_str());
  if (problems.empty()) std::printf("indexes ok\n");
  return problems.empty();
}

// Runs --op q1|q2|q3 through the published indexes.
int run_queries(const LoadOptions& o, const Params& p, const Schema& s, const colors::Object& db) {
  SharedAccess shared(s, db);
  std::optional<SharedIndexes> ix = published_indexes(p);
  if (!ix)
    throw colors::KeyError("repositories '" + parts_by_id_repository(p) + "' and '" + parts_by_date_repository(p) +
                           "' hold no index: load the database with a loader that builds them");
  SharedIndexAccess access(shared, *ix);
  for (int i = 0; i < o.repeat; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    OpResult r = run_query(access, *o.query, o.seed, atomic_parts(p));
    std::printf("op %s run %d count %llu sum %lld ms %.3f\n", query_name(*o.query), i + 1,
                static_cast<unsigned long long>(r.count), static_cast<long long>(r.sum), ms_since(t0));
    std::fflush(stdout);
  }
  return 0;
}

int run_ops(const LoadOptions& o, const Schema& s, const colors::Object& db) {
  SharedAccess shared(s, db);
  shared.set_use_transactions(o.use_transactions);
  OpResult first{};
  for (int i = 0; i < o.repeat; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    OpResult r = run_shared_op(shared, *o.op);
    double ms = ms_since(t0);
    if (i == 0) first = r;
    std::printf("op %s run %d count %llu sum %lld ms %.2f\n", op_name(*o.op), i + 1,
                static_cast<unsigned long long>(r.count), static_cast<long long>(r.sum), ms);
    std::fflush(stdout);  // a line per run as it ends, also into a file or a pipe
    if (r.count != first.count) {
      std::fprintf(stderr, "oo7-load: %s counted %llu on run %d, %llu on run 1\n", op_name(*o.op),
                   static_cast<unsigned long long>(r.count), i + 1, static_cast<unsigned long long>(first.count));
      return 1;
    }
  }
  return 0;
}

int main_checked(const std::vector<std::string>& args) {
  LoadOptions o = parse_load_options(args);
  Params p = params_for(o.size);
  colors::attach();
  if (o.check_only) {
    colors::Object db = published_database(p.repository());
    Schema s = schema_of(db);
    if (o.query) return run_queries(o, p, s, db);
    return o.op ? run_ops(o, s, db) : print_and_check(o, p, s, db);
  }
  Schema s = define_schema();
  auto t0 = std::chrono::steady_clock::now();
  colors::Object built = build_shared(s, p, o.seed);
  std::printf("build-ms %.1f\n", ms_since(t0));
  t0 = std::chrono::steady_clock::now();
  SharedIndexes ix = build_shared_indexes(SharedAccess(s, built));
  std::printf("index-ms %.1f\n", ms_since(t0));
  // The database and its indexes appear together, in one transaction: a load interrupted between
  // the three stores (Ctrl-C, a kill) or another loader's stores between them left one load's
  // database with another's indexes.
  colors::atomically([&] {
    publish(p, built);
    publish_indexes(p, ix);
  });
  built = colors::Object();
  // Read back what the repository holds, as any other client would.
  return print_and_check(o, p, s, published_database(p.repository()));
}

}  // namespace
}  // namespace oo7

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  for (const auto& a : args) {
    if (a == "-h" || a == "--help") {
      std::fputs(oo7::kLoadUsage, stdout);
      return 0;
    }
  }
  try {
    int rc = oo7::main_checked(args);
    std::fflush(stdout);
    return rc;
  } catch (const colors::InvalidArgumentError& e) {
    std::fprintf(stderr, "oo7-load: %s\n%s", e.what(), oo7::kLoadUsage);
    return 2;
  } catch (const colors::Error& e) {
    std::fprintf(stderr, "oo7-load: %s\n", e.what());
    return 2;
  }
}
