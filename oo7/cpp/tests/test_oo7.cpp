// OO7 smoke tests against a fresh colors-server: the database built by the C++ generator in the
// heap and in private structs matches SPEC.md's checks, every operation agrees between the two,
// oo7-load keeps the loader contract, and T2b from two processes at once loses no update.
#include <csignal>

#include <catch2/catch.hpp>
#include <colors/colors.hpp>
#include <memory>
#include <string>
#include <vector>

#include "command.hpp"
#include "fingerprint.hpp"
#include "indexes.hpp"
#include "operations.hpp"
#include "params.hpp"
#include "private_access.hpp"
#include "private_builder.hpp"
#include "queries.hpp"
#include "server_process.hpp"
#include "shared_access.hpp"
#include "shared_builder.hpp"
#include "shared_schema.hpp"

using colors::test::ServerConfig;
using colors::test::ServerProcess;
using colors::test::TempDir;
using oo7::test::Command;
using oo7::test::Finished;

namespace {

struct Server {
  TempDir dir;
  ServerConfig cfg = ServerConfig::fresh(dir.path());
  std::unique_ptr<ServerProcess> server;
  Server() {
    server = std::make_unique<ServerProcess>(cfg, cfg.args({"--heap-size", "64M"}), dir.path() + "/server.log");
    REQUIRE(server->wait_ready());
  }
  ~Server() {
    if (colors::has_segment()) colors::detach();
  }
  // Runs oo7-load with `args` against this server.
  Command load(const std::vector<std::string>& args, const std::string& tag) {
    std::vector<std::string> argv = {OO7_LOAD_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return Command(argv, {"COLORS_SOCKET=" + cfg.socket}, dir.path() + "/" + tag);
  }
  Finished load_and_wait(const std::vector<std::string>& args, const std::string& tag) {
    Command c = load(args, tag);
    Finished f = c.wait();
    INFO("oo7-load " << tag << " stdout:\n" << f.out << "stderr:\n" << f.err);
    return f;
  }
};

bool has_line(const std::string& out, const std::string& line) {
  return ("\n" + out).find("\n" + line + "\n") != std::string::npos;
}

void require_contract_lines(const Finished& f, const std::string& lang) {
  INFO("stdout:\n" << f.out << "stderr:\n" << f.err);
  REQUIRE(f.exit_code == 0);
  CHECK(has_line(f.out, "oo7 size=small seed=42 lang=" + lang));
  CHECK(has_line(f.out, "visits 43740"));
  CHECK(has_line(f.out, "fingerprint e0381c302e05b74a"));
  CHECK(has_line(f.out, "visit-order 2c0f1a48f8151d7d"));
}

// Q1/Q2/Q3 computed by scanning the generator's private parts, without any index: the model the
// indexed queries are checked against.
oo7::OpResult scanned_query(const oo7::priv::Database& db, oo7::Query q, std::uint64_t seed) {
  std::vector<const oo7::priv::AtomicPart*> parts;
  for (const auto* c : db.composites)
    for (const auto* part : c->parts) parts.push_back(part);
  oo7::OpResult r{};
  if (q == oo7::Query::kQ1) {
    oo7::SplitMix64 rng(seed + 1);
    for (int i = 0; i < oo7::kQ1Lookups; ++i) {
      const auto id = static_cast<std::int64_t>(1 + rng.rand(parts.size()));
      for (const auto* part : parts)
        if (part->id == id) {
          ++r.count;
          r.sum += part->x;
        }
    }
    return r;
  }
  const std::int64_t lo = q == oo7::Query::kQ2 ? oo7::kQ2Lo : oo7::kQ3Lo;
  const std::int64_t hi = q == oo7::Query::kQ2 ? oo7::kQ2Hi : oo7::kQ3Hi;
  for (const auto* part : parts)
    if (part->build_date >= lo && part->build_date < hi) {
      ++r.count;
      r.sum += part->x;
    }
  return r;
}

std::string query_line(const oo7::priv::Database& db, oo7::Query q, std::uint64_t seed) {
  const oo7::OpResult r = scanned_query(db, q, seed);
  return std::string("op ") + oo7::query_name(q) + " run 1 count " + std::to_string(r.count) + " sum " +
         std::to_string(r.sum) + " ";
}

// oo7-load --check --op q1|q2|q3 on the published database prints the results the scan of the
// generator's parts gives.
void require_query_results(Server& srv, std::uint64_t seed, const std::string& tag) {
  auto priv = oo7::build_private(oo7::params_for("small"), seed);
  for (oo7::Query q : {oo7::Query::kQ1, oo7::Query::kQ2, oo7::Query::kQ3}) {
    Finished f = srv.load_and_wait({"--check", "--op", oo7::query_name(q), "--seed", std::to_string(seed)},
                                   tag + "-" + oo7::query_name(q));
    INFO("stdout:\n" << f.out << "stderr:\n" << f.err);
    REQUIRE(f.exit_code == 0);
    CHECK(f.out.find(query_line(*priv, q, seed)) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("OO7 small seed 42: the shared and the private database pass SPEC's checks and agree on every operation") {
  Server srv;
  colors::attach(srv.cfg.socket);
  const oo7::Params p = oo7::params_for("small");
  const oo7::Schema s = oo7::define_schema();
  colors::Object db = oo7::build_shared(s, p, 42);
  oo7::publish(p, db);
  auto priv = oo7::build_private(p, 42);
  oo7::SharedAccess sa(s, oo7::published_database("oo7.small"));
  oo7::PrivateAccess pa(*priv);

  SECTION("visits, fingerprint and visit order from both") {
    for (auto [visits, fold] : {oo7::visit_order(sa), oo7::visit_order(pa)}) {
      CHECK(visits == oo7::kSeed42SmallVisits);
      CHECK(oo7::hex16(fold) == "2c0f1a48f8151d7d");
    }
    CHECK(oo7::hex16(oo7::fingerprint(sa)) == "e0381c302e05b74a");
    CHECK(oo7::hex16(oo7::fingerprint(pa)) == "e0381c302e05b74a");
  }

  SECTION("read-only operations give the same results on both") {
    CHECK(oo7::run_op(sa, oo7::Op::kT1) == oo7::OpResult{43740, 0});
    CHECK(oo7::run_op(pa, oo7::Op::kT1) == oo7::OpResult{43740, 0});
    CHECK(oo7::run_op(sa, oo7::Op::kT6) == oo7::OpResult{2187, 0});
    CHECK(oo7::run_op(pa, oo7::Op::kT6) == oo7::OpResult{2187, 0});
    oo7::OpResult q = oo7::run_op(pa, oo7::Op::kQ7);
    CHECK(q.count == 10000);
    std::int64_t sum = 0;
    for (const auto& part : priv->part_owner) sum += part->x;
    CHECK(q.sum == sum);
    CHECK(oo7::run_op(sa, oo7::Op::kQ7) == q);
  }

  SECTION("the indexes check, and Q1/Q2/Q3 agree through the shared and the private indexes") {
    const oo7::SharedIndexes six = oo7::build_shared_indexes(sa);
    CHECK(six.by_id.size() == 10000);
    CHECK(oo7::index_problems(sa, six).empty());
    const oo7::PrivateIndexes pix = oo7::build_private_indexes(*priv);
    oo7::SharedIndexAccess si(sa, six);
    oo7::PrivateIndexAccess pi(pix);
    for (oo7::Query q : {oo7::Query::kQ1, oo7::Query::kQ2, oo7::Query::kQ3}) {
      INFO(oo7::query_name(q));
      const oo7::OpResult want = scanned_query(*priv, q, 42);
      CHECK(oo7::run_query(si, q, 42, oo7::atomic_parts(p)) == want);
      CHECK(oo7::run_query(pi, q, 42, oo7::atomic_parts(p)) == want);
    }
    CHECK(scanned_query(*priv, oo7::Query::kQ1, 42).count == 10);
    // About 1% and 10% of the 10,000 parts.
    CHECK(scanned_query(*priv, oo7::Query::kQ2, 42).count > 50);
    CHECK(scanned_query(*priv, oo7::Query::kQ3, 42).count > 500);
  }

  SECTION("each T2 swaps the same parts on both") {
    const std::uint64_t original = oo7::fingerprint(pa);
    for (oo7::Op op : {oo7::Op::kT2a, oo7::Op::kT2b, oo7::Op::kT2c}) {
      INFO(oo7::op_name(op));
      CHECK(oo7::run_op(sa, op) == oo7::OpResult{43740, 0});
      CHECK(oo7::run_op(pa, op) == oo7::OpResult{43740, 0});
      const std::uint64_t after = oo7::fingerprint(pa);
      CHECK(after != original);  // parts of composites used an odd number of times are swapped
      CHECK(oo7::fingerprint(sa) == after);
      CHECK(oo7::visit_order(sa).fold == oo7::kSeed42SmallVisitOrder);  // swaps change no links
    }
  }
  colors::detach();
}

TEST_CASE("a database whose classes are other versions (another language's typing) reads the same") {
  Server srv;
  colors::attach(srv.cfg.socket);
  const oo7::Params p = oo7::params_for("small");
  // As a loader that leaves AtomicPart.partOf untyped would build it: another version.
  oo7::Schema other = oo7::define_schema();
  using colors::TypeKind;
  other.part.cls = colors::define_class(
      "oo7.AtomicPart", {{"id", TypeKind::kInteger, ""}, {"x", TypeKind::kInteger, ""}, {"y", TypeKind::kInteger, ""},
                         {"buildDate", TypeKind::kInteger, ""}, {"type", TypeKind::kString, ""},
                         {"to", TypeKind::kList, ""}, {"from_", TypeKind::kList, ""}, {"partOf", TypeKind::kAny, ""}});
  REQUIRE(!(other.part.cls == oo7::define_schema().part.cls));
  auto& f = other.part;
  f.id = colors::Field(f.cls, "id");
  f.x = colors::Field(f.cls, "x");
  f.y = colors::Field(f.cls, "y");
  f.build_date = colors::Field(f.cls, "buildDate");
  f.type = colors::Field(f.cls, "type");
  f.to = colors::Field(f.cls, "to");
  f.from = colors::Field(f.cls, "from_");
  f.part_of = colors::Field(f.cls, "partOf");
  colors::Object db = oo7::build_shared(other, p, 42);

  const oo7::Schema found = oo7::schema_of(db);
  CHECK(found.part.cls == other.part.cls);
  CHECK(found.composite.cls == other.composite.cls);
  // Through the database's own versions, and by field name through the C++ loader's versions.
  for (const oo7::Schema* s : {&found, static_cast<const oo7::Schema*>(&other)}) {
    oo7::SharedAccess sa(*s, db);
    CHECK(oo7::hex16(oo7::fingerprint(sa)) == "e0381c302e05b74a");
  }
  oo7::SharedAccess by_name(oo7::define_schema(), db);
  CHECK(oo7::hex16(oo7::fingerprint(by_name)) == "e0381c302e05b74a");
  CHECK(oo7::hex16(oo7::visit_order(by_name).fold) == "2c0f1a48f8151d7d");
  CHECK(oo7::run_op(by_name, oo7::Op::kT2b) == oo7::OpResult{43740, 0});
  oo7::SharedAccess fast(found, db);
  CHECK(oo7::run_op(fast, oo7::Op::kT2b) == oo7::OpResult{43740, 0});
  CHECK(oo7::hex16(oo7::fingerprint(fast)) == "e0381c302e05b74a");  // two T2b runs: back again

  // A wrong kind in a field is an error, never a wild read: an integer where a reference belongs,
  // a string where an object with an id belongs.
  const auto comps = fast.composites();
  const auto parts = fast.parts(oo7::SharedAccess::at(comps, 0));
  const auto part = oo7::SharedAccess::at(parts, 0);
  part.obj.set(other.part.part_of, colors::Value(5));
  CHECK_THROWS_AS(oo7::fingerprint(fast), colors::TypeMismatchError);
  part.obj.set(other.part.part_of, colors::Value("not a composite part"));
  CHECK_THROWS_AS(oo7::fingerprint(fast), colors::KeyError);

  // A database that is not shaped as the SPEC says is refused with a clear error.
  colors::Object bare = colors::new_object(other.database.cls);
  CHECK_THROWS_AS(oo7::schema_of(bare), colors::TypeMismatchError);
  colors::detach();
}

TEST_CASE("oo7-load builds, publishes and checks, and --check reads what it published") {
  Server srv;
  Finished load = srv.load_and_wait({}, "load");
  require_contract_lines(load, "cpp");
  CHECK(has_line(load.out, "indexes ok"));
  Finished check = srv.load_and_wait({"--check"}, "check");
  require_contract_lines(check, "cpp");
  CHECK(has_line(check.out, "indexes ok"));
  require_query_results(srv, 42, "q");
  Finished t1 = srv.load_and_wait({"--check", "--op", "t1", "--repeat", "2"}, "t1");
  REQUIRE(t1.exit_code == 0);
  CHECK(t1.out.find("op t1 run 2 count 43740 sum 0") != std::string::npos);
  // Another seed: no SPEC value, but the read-back must match the generator's private copy.
  Finished other = srv.load_and_wait({"--seed", "7"}, "seed7");
  REQUIRE(other.exit_code == 0);
  CHECK(has_line(other.out, "oo7 size=small seed=7 lang=cpp"));
  CHECK(!has_line(other.out, "fingerprint e0381c302e05b74a"));
  CHECK(has_line(other.out, "indexes ok"));  // rebuilt with the new database
  require_query_results(srv, 7, "q7-seed");
  // The seed-42 check now fails on the seed-7 database, naming both values.
  Finished wrong = srv.load_and_wait({"--check"}, "wrong");
  CHECK(wrong.exit_code == 1);
  CHECK(wrong.err.find("fingerprint mismatch: expected e0381c302e05b74a") != std::string::npos);
}

TEST_CASE("oo7-load rejects bad input with a clear message") {
  Server srv;
  Finished size = srv.load_and_wait({"--size", "large"}, "size");
  CHECK(size.exit_code == 2);
  CHECK(size.err.find("unknown OO7 size 'large'") != std::string::npos);
  Finished op = srv.load_and_wait({"--check", "--op", "t9"}, "op");
  CHECK(op.exit_code == 2);
  CHECK(op.err.find("unknown OO7 operation 't9'") != std::string::npos);
  Finished empty = srv.load_and_wait({"--check"}, "empty");
  CHECK(empty.exit_code == 2);
  CHECK(empty.err.find("holds no OO7 database") != std::string::npos);
  // Something else published under the name.
  colors::attach(srv.cfg.socket);
  colors::repository("oo7.small").set(colors::Value("not a database"));
  colors::detach();
  Finished other = srv.load_and_wait({"--check"}, "other");
  CHECK(other.exit_code == 2);
  CHECK(other.err.find("not an oo7.Database") != std::string::npos);
}

TEST_CASE("the index check fails on an index that misses, misplaces or duplicates a part") {
  Server srv;
  REQUIRE(srv.load_and_wait({}, "load").exit_code == 0);
  colors::attach(srv.cfg.socket);
  auto by_id = [] { return colors::SortedMap(colors::repository("oo7.small.parts_by_id").get()); };
  auto by_date = [] { return colors::SortedMap(colors::repository("oo7.small.parts_by_date").get()); };
  const colors::Value part17 = by_id().at(colors::Value(17));
  const colors::Value part18 = by_id().at(colors::Value(18));

  SECTION("a part missing from parts_by_id") {
    REQUIRE(by_id().remove(colors::Value(17)));
    Finished f = srv.load_and_wait({"--check"}, "no-id");
    CHECK(f.exit_code == 1);
    CHECK(f.err.find("parts_by_id has no entry for part 17") != std::string::npos);
    CHECK(!has_line(f.out, "indexes ok"));
  }
  SECTION("an id mapped to another part") {
    by_id().put(colors::Value(17), part18);
    Finished f = srv.load_and_wait({"--check"}, "wrong-id");
    CHECK(f.exit_code == 1);
    CHECK(f.err.find("parts_by_id maps 17 to another object than part 17") != std::string::npos);
  }
  SECTION("a part listed under another date") {
    // Move part 17 from its date's list to the list of another date.
    colors::SortedMap dates = by_date();
    const std::int64_t date = colors::Object(part17).get("buildDate").as_int();
    colors::List own(dates.at(colors::Value(date)));
    for (std::size_t i = 0; i < own.size(); ++i)
      if (own.get(i).raw() == part17.raw()) {
        own.erase(i);
        break;
      }
    const std::int64_t other = date == 1000 ? 1001 : 1000;
    colors::List(dates.at(colors::Value(other))).append(part17);  // small has parts on every date
    Finished f = srv.load_and_wait({"--check"}, "wrong-date");
    CHECK(f.exit_code == 1);
    CHECK(f.err.find("parts_by_date lists part 17 under " + std::to_string(other)) != std::string::npos);
  }
  SECTION("a part listed twice") {
    colors::SortedMap dates = by_date();
    const std::int64_t date = colors::Object(part17).get("buildDate").as_int();
    colors::List(dates.at(colors::Value(date))).append(part17);
    Finished f = srv.load_and_wait({"--check"}, "twice");
    CHECK(f.exit_code == 1);
    CHECK(f.err.find("parts_by_date lists a part twice") != std::string::npos);
  }
  SECTION("a date mapped to something else than a list") {
    by_date().put(colors::Value(1000), colors::Value("not a list"));
    Finished f = srv.load_and_wait({"--check"}, "not-a-list");
    CHECK(f.exit_code == 1);
    CHECK(f.err.find("parts_by_date holds a ") != std::string::npos);
  }
  SECTION("one index without the other") {
    colors::repository("oo7.small.parts_by_date").set(colors::Value());
    Finished f = srv.load_and_wait({"--check"}, "one-index");
    CHECK(f.exit_code == 2);
    CHECK(f.err.find("'oo7.small.parts_by_date' holds no index while its companion does") != std::string::npos);
  }
  colors::detach();
  // A new load replaces both indexes, and the check passes again.
  REQUIRE(srv.load_and_wait({}, "reload").exit_code == 0);
  CHECK(srv.load_and_wait({"--check"}, "again").exit_code == 0);
}

TEST_CASE("T2b from two processes at once in transactions loses no update") {
  Server srv;
  REQUIRE(srv.load_and_wait({}, "load").exit_code == 0);
  {
    // Each process swaps every part 3 times per use of its composite part: 6 in all, so every
    // part must hold its generated x/y again.
    Command a = srv.load({"--check", "--op", "t2b", "--repeat", "3"}, "t2b-a");
    Command b = srv.load({"--check", "--op", "t2b", "--repeat", "3"}, "t2b-b");
    Finished fa = a.wait(), fb = b.wait();
    INFO("a:\n" << fa.out << fa.err << "b:\n" << fb.out << fb.err);
    REQUIRE(fa.exit_code == 0);
    REQUIRE(fb.exit_code == 0);
  }
  Finished even = srv.load_and_wait({"--check", "--t2b-runs", "6"}, "even");
  REQUIRE(even.exit_code == 0);
  CHECK(even.out.find("differing 0") != std::string::npos);
  // One more run makes the count odd: parts of composites used an odd number of times are now
  // swapped, and the check tells 7 runs from 6.
  REQUIRE(srv.load_and_wait({"--check", "--op", "t2b"}, "one").exit_code == 0);
  CHECK(srv.load_and_wait({"--check", "--t2b-runs", "7"}, "odd").exit_code == 0);
  Finished stale = srv.load_and_wait({"--check", "--t2b-runs", "6"}, "stale");
  CHECK(stale.exit_code == 1);
  CHECK(stale.err.find("lost updates?") != std::string::npos);
}

// Hidden (not in the default suite): run with `test_oo7 "[medium]"`. About 1.5 s of loading on
// the 2-vCPU dev machine, plus the server's start.
TEST_CASE("oo7-load medium: the read-back database matches the generator's private copy", "[.medium]") {
  TempDir dir;
  ServerConfig cfg = ServerConfig::fresh(dir.path());
  ServerProcess server(cfg, cfg.args({"--heap-size", "240M"}), dir.path() + "/server.log");
  REQUIRE(server.wait_ready());
  Command load({OO7_LOAD_BIN, "--size", "medium"}, {"COLORS_SOCKET=" + cfg.socket}, dir.path() + "/medium");
  Finished f = load.wait();
  INFO("stdout:\n" << f.out << "stderr:\n" << f.err);
  REQUIRE(f.exit_code == 0);
  CHECK(has_line(f.out, "oo7 size=medium seed=42 lang=cpp"));
  CHECK(has_line(f.out, "visits 437400"));
}

// A database another language's loader published must pass the C++ checks: the loader's own
// lines first, then oo7-load --check over the same heap.
[[maybe_unused]] static void check_database_of(const std::string& lang, const std::vector<std::string>& argv,
                                               std::vector<std::string> env, bool with_indexes) {
  Server srv;
  env.push_back("COLORS_SOCKET=" + srv.cfg.socket);
  Command loader(argv, env, srv.dir.path() + "/" + lang);
  Finished built = loader.wait(240000);
  require_contract_lines(built, lang);
  require_contract_lines(srv.load_and_wait({"--check"}, "check-" + lang), "cpp");
  Finished t1 = srv.load_and_wait({"--check", "--op", "t1"}, "t1-" + lang);
  REQUIRE(t1.exit_code == 0);
  CHECK(t1.out.find("op t1 run 1 count 43740") != std::string::npos);
  if (with_indexes) {
    CHECK(has_line(built.out, "indexes ok"));
    CHECK(has_line(srv.load_and_wait({"--check"}, "ix-" + lang).out, "indexes ok"));
    require_query_results(srv, 42, "q-" + lang);
  }
}

#ifdef OO7_PYTHON_LOADER
TEST_CASE("a database the Python loader published passes the C++ checks") {
  check_database_of("python", {"/usr/bin/env", "python3", OO7_PYTHON_LOADER, "--size", "small", "--seed", "42"},
                    {"PYTHONPATH=" OO7_PYTHON_PATH}, true);
}
#endif

#ifdef OO7_JAVA_LOADER
TEST_CASE("a database the Java loader published passes the C++ checks") {
  check_database_of("java", {"/usr/bin/env", "bash", OO7_JAVA_LOADER, "--size", "small", "--seed", "42"},
                    {"BUILD_DIR=" OO7_BUILD_DIR}, true);
}
#endif

TEST_CASE("a T2b process killed with SIGKILL inside a transaction leaves no half-swapped part") {
  Server srv;
  REQUIRE(srv.load_and_wait({}, "load").exit_code == 0);
  {
    Command victim = srv.load({"--check", "--op", "t2b", "--repeat", "100000"}, "victim");
    // Once its first run ended, it is inside the next one (oo7-load flushes a line per run).
    REQUIRE(colors::test::eventually([&] { return victim.out_so_far().find("op t2b run 1 ") != std::string::npos; }, 60000));
    victim.signal(SIGKILL);
    REQUIRE(victim.wait().exit_code == 128 + SIGKILL);
  }
  // The server rolled the victim's transaction back: the next T2b runs (it may wait for that).
  REQUIRE(srv.load_and_wait({"--check", "--op", "t2b"}, "next").exit_code == 0);
  // Every part holds its generated x/y, swapped or not: the victim's half-done composite part
  // was rolled back.
  colors::attach(srv.cfg.socket);
  colors::Object db = oo7::published_database("oo7.small");
  oo7::SharedAccess sa(oo7::schema_of(db), db);
  auto priv = oo7::build_private(oo7::params_for("small"), 42);
  std::size_t whole = 0, half = 0, other = 0;
  const auto comps = sa.composites();
  for (std::size_t c = 0; c < oo7::SharedAccess::size(comps); ++c) {
    const auto parts = sa.parts(oo7::SharedAccess::at(comps, c));
    for (std::size_t k = 0; k < oo7::SharedAccess::size(parts); ++k) {
      const auto part = oo7::SharedAccess::at(parts, k);
      const std::int64_t x = sa.x(part), y = sa.y(part);
      const std::int64_t x0 = priv->composites[c]->parts[k]->x, y0 = priv->composites[c]->parts[k]->y;
      if ((x == x0 && y == y0) || (x == y0 && y == x0)) ++whole;
      else if (x == y0 && y == y0) ++half;
      else ++other;
    }
  }
  CHECK(whole == 10000);
  CHECK(half == 0);
  CHECK(other == 0);
  colors::VerifyResult v{false, ""};
  CHECK(colors::test::eventually([&] { return (v = colors::verify_heap()).ok; }, 10000));
  INFO(v.report);
  colors::detach();
}
