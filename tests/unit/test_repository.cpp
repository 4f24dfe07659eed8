// Unit tests of repositories (libshared/src/repository.*).
#include <atomic>
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "block.hpp"
#include "classes.hpp"
#include "colors/colors.hpp"
#include "colors/errors.hpp"
#include "objects.hpp"
#include "pending_bits.hpp"
#include "repository.hpp"
#include "test_segment.hpp"

using namespace colors;
using namespace colors::detail;

TEST_CASE("repository: find_or_create returns one record per name", "[repository]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  CHECK(find_repository(m, "demo.root") == nullptr);
  RepositoryRecord* r = find_or_create_repository(m, "demo.root");
  REQUIRE(r != nullptr);
  CHECK(name_view(r->name) == "demo.root");
  CHECK(find_or_create_repository(m, "demo.root") == r);
  CHECK(find_repository(m, "demo.root") == r);
  CHECK(find_or_create_repository(m, "demo.root2") != r);
  CHECK(find_or_create_repository(m, "démo.ünïcode") != r);
  CHECK(find_repository(m, "démo.ünïcode") != nullptr);
  // Records live in the classes space.
  auto a = reinterpret_cast<std::uintptr_t>(r);
  CHECK(a >= m->classes_begin);
  CHECK(a < m->classes_end);
}

TEST_CASE("repository: get and set", "[repository]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  RepositoryRecord* r = find_or_create_repository(m, "r");
  CHECK(repository_get(r) == kNull);
  repository_set(r, make_small(42));
  CHECK(repository_get(r) == make_small(42));
  CHECK(repository_get(find_or_create_repository(m, "r")) == make_small(42));

  // Overwriting a reference flags the old target pending (SATB deletion barrier).
  Rooted oa = new_string(m, "a"), ob = new_string(m, "b");
  const Word ra = oa.word(), rb = ob.word();
  REQUIRE(is_ref(ra));
  repository_set(r, ra);
  CHECK_FALSE(pending_bit(g_pending_bits, ra));
  repository_set(r, rb);
  CHECK(pending_bit(g_pending_bits, ra));
  CHECK_FALSE(pending_bit(g_pending_bits, rb));
  CHECK(repository_get(r) == rb);
  repository_set(r, kNull);
  CHECK(pending_bit(g_pending_bits, rb));
}

TEST_CASE("repository: bad names are rejected", "[repository]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  CHECK_THROWS_AS(find_or_create_repository(m, ""), InvalidArgumentError);
  CHECK_THROWS_AS(find_or_create_repository(m, std::string(kMaxNameLength + 1, 'x')), InvalidArgumentError);
  CHECK_THROWS_AS(find_or_create_repository(m, "bad\xff utf8"), InvalidArgumentError);
  CHECK_THROWS_AS(find_or_create_repository(m, std::string("nul\0inside", 10)), InvalidArgumentError);
  CHECK_NOTHROW(find_or_create_repository(m, std::string(kMaxNameLength, 'x')));
}

TEST_CASE("repository: many names, for_each_repository visits each once", "[repository]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  constexpr int kN = 3000;  // many buckets hold chains of several records
  std::vector<RepositoryRecord*> recs;
  for (int i = 0; i < kN; ++i) recs.push_back(find_or_create_repository(m, "repo." + std::to_string(i)));
  for (int i = 0; i < kN; ++i) REQUIRE(find_repository(m, "repo." + std::to_string(i)) == recs[i]);
  std::set<RepositoryRecord*> seen;
  int visits = 0;
  for_each_repository(m, [&](RepositoryRecord* r) {
    seen.insert(r);
    ++visits;
  });
  CHECK(visits == kN);
  CHECK(seen.size() == static_cast<std::size_t>(kN));
}

TEST_CASE("repository: racing creators agree on one record", "[repository]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  constexpr int kThreads = 4, kNames = 200;
  std::vector<std::vector<RepositoryRecord*>> got(kThreads, std::vector<RepositoryRecord*>(kNames));
  std::atomic<bool> go{false};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      while (!go) std::this_thread::yield();
      for (int i = 0; i < kNames; ++i) got[t][i] = find_or_create_repository(m, "race." + std::to_string(i));
    });
  }
  go = true;
  for (auto& t : ts) t.join();
  for (int t = 1; t < kThreads; ++t) CHECK(got[t] == got[0]);
  int visits = 0;
  for_each_repository(m, [&](RepositoryRecord*) { ++visits; });
  CHECK(visits == kNames);
}

TEST_CASE("repository: delete drops the value, makes handles stale, and a re-created name starts empty",
          "[repository][delete]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  CHECK_FALSE(delete_repository(m, "gone"));
  RepoRef r = open_repository(m, "gone");
  Rooted o = new_string(m, "payload");
  repository_store(r, o.word());
  CHECK(repository_load(r).word() == o.word());
  REQUIRE(delete_repository(m, "gone"));
  CHECK(pending_bit(g_pending_bits, o.word()));  // the dropped value went through the barrier
  CHECK(find_repository(m, "gone") == nullptr);
  CHECK_FALSE(delete_repository(m, "gone"));
  std::string msg;
  try {
    repository_load(r);
  } catch (const KeyError& e) {
    msg = e.what();
  }
  CHECK(msg.find("repository 'gone' was deleted") != std::string::npos);
  CHECK_THROWS_AS(repository_store(r, make_small(1)), KeyError);
  CHECK_THROWS_AS(repository_set(r.rec, make_small(1)), KeyError);  // a tombstone takes no value
  // Re-created: the same record, a new generation, empty; the old handle stays stale.
  RepoRef r2 = open_repository(m, "gone");
  CHECK(r2.rec == r.rec);
  CHECK(r2.generation != r.generation);
  CHECK(repository_load(r2).word() == kNull);
  CHECK_THROWS_AS(repository_load(r), KeyError);
  repository_store(r2, make_small(7));
  CHECK(repository_load(r2).word() == make_small(7));
  CHECK_THROWS_AS(repository_store(r, make_small(8)), KeyError);
  CHECK(repository_load(r2).word() == make_small(7));
}

TEST_CASE("repository: create and delete in a loop reuses the records", "[repository][delete]") {
  test::TestSegment seg(1 << 20, 1 << 20);
  Metadata* m = seg.meta();
  for (int i = 0; i < 16; ++i) open_repository(m, "loop." + std::to_string(i));
  const std::uint64_t top = m->classes_top.load();
  // Far more repositories over time than 1 MiB of classes space could hold without reuse.
  for (int round = 0; round < 20000; ++round) {
    const std::string name = "loop." + std::to_string(round % 16);
    RepoRef r = open_repository(m, name);
    repository_store(r, make_small(round));
    REQUIRE(delete_repository(m, name));
  }
  CHECK(m->classes_top.load() == top);
}

TEST_CASE("repository and channel deletion through the public C++ API", "[repository][channel][delete]") {
  test::TestSegment seg(1 << 20);
  colors::Repository r = colors::repository("api.repo");
  r.set(colors::Value("kept"));
  colors::Channel c = colors::channel("api.chan", 4);
  REQUIRE(c.try_send(colors::Value(1LL)));
  CHECK_FALSE(r.deleted());
  CHECK_FALSE(c.deleted());
  CHECK(colors::delete_repository("api.repo"));
  CHECK(colors::delete_channel("api.chan"));
  CHECK_FALSE(colors::delete_channel("api.chan"));
  CHECK(r.deleted());
  CHECK(c.deleted());
  std::string msg;
  try {
    r.get();
  } catch (const colors::KeyError& e) {
    msg = e.what();
  }
  CHECK(msg.find("repository 'api.repo' was deleted") != std::string::npos);
  CHECK_THROWS_AS(c.try_receive(), colors::KeyError);
  CHECK_THROWS_AS(c.capacity(), colors::KeyError);
  colors::Repository r2 = colors::repository("api.repo");
  CHECK(r2.get().is_null());
  CHECK_FALSE(r2.deleted());
  CHECK(r.deleted());  // stays stale after the name is re-created
  msg.clear();
  try {
    colors::channel("api.huge", colors::Channel::kMaxCapacity + 1);
  } catch (const colors::InvalidArgumentError& e) {
    msg = e.what();
  }
  CHECK(msg.find("between 1 and 65536 (the maximum)") != std::string::npos);
}
