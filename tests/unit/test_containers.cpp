// Module tests of list, set and map against the standard containers.
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "colors/colors.hpp"
#include "container_lock.hpp"
#include "containers.hpp"
#include "layout.hpp"
#include "test_segment.hpp"

using namespace colors;

TEST_CASE("list behaves like a vector") {
  test::TestSegment seg;
  List l = new_list();
  std::vector<long long> ref;
  std::mt19937 rng(1);
  for (int i = 0; i < 2000; ++i) {
    int op = rng() % 4;
    if (op <= 1 || ref.empty()) {
      l.append(Value(static_cast<long long>(i)));
      ref.push_back(i);
    } else if (op == 2) {
      std::size_t at = rng() % (ref.size() + 1);
      l.insert(at, Value(static_cast<long long>(-i)));
      ref.insert(ref.begin() + static_cast<long>(at), -i);
    } else {
      std::size_t at = rng() % ref.size();
      REQUIRE(l.erase(at).as_int() == ref[at]);
      ref.erase(ref.begin() + static_cast<long>(at));
    }
  }
  REQUIRE(l.size() == ref.size());
  for (std::size_t i = 0; i < ref.size(); ++i) REQUIRE(l[i].as_int() == ref[i]);
  REQUIRE_THROWS_AS(l.get(ref.size()), IndexError);
  REQUIRE_THROWS_AS(l.set(ref.size() + 5, Value(1)), IndexError);
  l.clear();
  REQUIRE(l.size() == 0);
  REQUIRE(verify_heap().ok);
}

TEST_CASE("lists hold any value, including nested containers") {
  test::TestSegment seg;
  List l = new_list(2);
  l.append(Value("s"));
  l.append(Value(1.5));
  l.append(Value());
  l.append(new_list());
  REQUIRE(l[0].as_string() == "s");
  REQUIRE(l[1].as_float() == 1.5);
  REQUIRE(l[2].is_null());
  REQUIRE(l[3].kind() == TypeKind::kList);
}

TEST_CASE("map behaves like std::map with neutral keys") {
  test::TestSegment seg;
  Map m = new_map();
  std::map<std::string, long long> ref;
  std::mt19937 rng(2);
  for (int i = 0; i < 5000; ++i) {
    std::string k = "k" + std::to_string(rng() % 700);
    if (rng() % 3 == 0) {
      REQUIRE(m.remove(Value(k)) == (ref.erase(k) == 1));
    } else {
      bool fresh = ref.find(k) == ref.end();
      REQUIRE(m.put(Value(k), Value(static_cast<long long>(i))) == fresh);
      ref[k] = i;
    }
  }
  REQUIRE(m.size() == ref.size());
  for (auto& [k, v] : ref) REQUIRE(m.at(Value(k)).as_int() == v);
  REQUIRE_FALSE(m.get(Value("absent")).has_value());
  REQUIRE_THROWS_AS(m.at(Value("absent")), KeyError);
  REQUIRE(m.items().size() == ref.size());
  // Numeric keys: 3 and 3.0 are one key; null is a key too.
  m.put(Value(3), Value("three"));
  REQUIRE(m.at(Value(3.0)).as_string() == "three");
  m.put(Value(), Value("null"));
  REQUIRE(m.at(Value()).as_string() == "null");
  REQUIRE(verify_heap().ok);
}

TEST_CASE("a set or map of a capacity hint too large for any heap is refused, the heap intact") {
  test::TestSegment seg;
  // 2^61 used to wrap the table's byte size to nothing: a table claiming 2^62 entries in a
  // 48-byte block, whose first put wrote far outside it.
  for (std::size_t hint : {std::size_t{1} << 61, ~std::size_t{0}, (std::size_t{1} << 35) + 1}) {
    REQUIRE_THROWS_AS(new_map(hint), OutOfMemoryError);
    REQUIRE_THROWS_AS(new_set(hint), OutOfMemoryError);
  }
  Map m = new_map(1000);
  m.put(Value(1LL), Value(2LL));
  REQUIRE(m.size() == 1);
  REQUIRE(verify_heap().ok);
}

TEST_CASE("set behaves like std::set") {
  test::TestSegment seg;
  Set s = new_set();
  std::set<long long> ref;
  std::mt19937 rng(3);
  for (int i = 0; i < 5000; ++i) {
    long long k = rng() % 500;
    if (rng() % 2) REQUIRE(s.add(Value(k)) == ref.insert(k).second);
    else REQUIRE(s.remove(Value(k)) == (ref.erase(k) == 1));
  }
  REQUIRE(s.size() == ref.size());
  for (long long k : ref) REQUIRE(s.contains(Value(k)));
  // User objects and lists are keys by identity.
  List a = new_list(), b = new_list();
  s.add(a);
  REQUIRE(s.contains(a));
  REQUIRE_FALSE(s.contains(b));
}

TEST_CASE("deep copies of builtins") {
  test::TestSegment seg;
  std::map<std::string, std::vector<long long>> src{{"a", {1, 2, 3}}, {"b", {}}};
  Map m(copy_to(src));
  REQUIRE(m.size() == 2);
  List a(m.at(Value("a")));
  REQUIRE(a.size() == 3);
  REQUIRE(a[2].as_int() == 3);
  Set s(copy_to(std::set<std::string>{"x", "y"}));
  REQUIRE(s.contains(Value("y")));
}

TEST_CASE("racing container operations from threads are each atomic") {
  test::TestSegment seg(32 << 20);
  List l = new_list();
  Map m = new_map();
  std::atomic<long> appended{0}, erased{0}, bad{0};  // Catch2 asserts only on the main thread
  std::vector<std::thread> ts;
  for (int t = 0; t < 3; ++t) {
    ts.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int i = 0; i < 20000; ++i) {
        switch (rng() % 5) {
          case 0: l.append(Value(i)); ++appended; break;
          case 1: try { if (l.erase(0).kind() != TypeKind::kInteger) ++bad; ++erased; } catch (const IndexError&) {} break;
          case 2: m.put(Value(static_cast<long long>(rng() % 300)), Value(i)); break;
          case 3: m.remove(Value(static_cast<long long>(rng() % 300))); break;
          default: try { (void)l.get(rng() % 50); } catch (const IndexError&) {} break;
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  REQUIRE(bad == 0);
  REQUIRE(static_cast<long>(l.size()) == appended - erased);  // no update lost, nothing erased twice
  for (const Value& x : l.items()) REQUIRE(x.kind() == TypeKind::kInteger);  // nothing invented
  auto v = verify_heap();
  INFO(v.report);
  REQUIRE(v.ok);
}

namespace {

// The lock word a client (id, slot) leaves in a container it held when it was killed.
std::uint64_t held_by(std::uint32_t id, std::uint32_t slot) {
  return std::uint64_t{id} << 32 | std::uint64_t{slot} << 8 | detail::kLockHeld;
}

void kill_client(detail::Metadata* m, std::uint32_t slot) {
  m->clients[slot].state.store(static_cast<std::uint32_t>(detail::ClientState::kFree), std::memory_order_release);
}

}  // namespace

TEST_CASE("a container lock held by a live client waits, and is taken over once that client is dead") {
  test::TestSegment seg;
  seg.register_client(3, 7);
  List l(copy_to(std::vector<long long>{1, 2, 3}));
  auto* lo = reinterpret_cast<detail::ListObject*>(l.raw());
  lo->lock.store(held_by(7, 3));  // client 7 holds the list...
  std::atomic<bool> done{false};
  std::thread t([&] {
    l.append(Value(4));
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE_FALSE(done);  // ...and lives: the append waits
  kill_client(seg.meta(), 3);  // the server reclaimed it: it died holding the lock
  t.join();
  REQUIRE(l.size() == 4);
  REQUIRE(l.get(3).as_int() == 4);
  REQUIRE(lo->lock.load() == 0);
  REQUIRE(verify_heap().ok);
}

TEST_CASE("a list left torn by a dead owner raises OwnerDiedError once, then works") {
  test::TestSegment seg;
  seg.register_client(3, 7);
  List l(copy_to(std::vector<long long>{1, 2, 3}));
  auto* lo = reinterpret_cast<detail::ListObject*>(l.raw());
  lo->lock.store(held_by(7, 3) | detail::kLockTorn);  // died moving elements
  kill_client(seg.meta(), 3);
  REQUIRE_THROWS_AS(l.append(Value(4)), OwnerDiedError);
  REQUIRE(lo->lock.load() == 0);
  l.append(Value(4));  // the operation was not performed; the next one is
  REQUIRE(l.size() == 4);
  REQUIRE(verify_heap().ok);
}

TEST_CASE("a map whose owner died between an entry and its count is re-counted") {
  test::TestSegment seg;
  seg.register_client(3, 7);
  Map m = new_map();
  for (int i = 0; i < 20; ++i) m.put(Value(i), Value(i * 10));
  REQUIRE(m.remove(Value(5)));
  auto* ho = reinterpret_cast<detail::HashObject*>(m.raw());
  // As if client 7 died after publishing two keys but before counting them.
  ho->size.store(17);
  ho->lock.store(held_by(7, 3));
  kill_client(seg.meta(), 3);
  REQUIRE(m.size() == 19);
  REQUIRE(m.at(Value(7)).as_int() == 70);
  REQUIRE_FALSE(m.contains(Value(5)));
  REQUIRE(verify_heap().ok);
}

// A set or map whose table has no room for one more key allocates the rehashed table before it
// takes its lock, but only for a key it does not hold: a put of a key it holds (or an add of a
// member) changes an entry in place and allocates nothing, however full the table.
TEST_CASE("updating a key of a set or map whose table is full allocates nothing") {
  test::TestSegment seg;
  auto full = [](const Value& h) {
    const auto* ho = reinterpret_cast<const detail::HashObject*>(h.raw());
    const auto* t = reinterpret_cast<const detail::TableObject*>(ho->table.load());
    return t != nullptr && (t->used.load() + 1) * 4 > t->capacity * 3;
  };
  Map map = new_map();
  Set set = new_set();
  long long n = 0;
  while (n < 5 || !full(map)) map.put(Value(n), Value(n)), ++n;
  long long k = 0;
  while (k < 5 || !full(set)) set.add(Value(k++));
  const std::size_t before = heap_stats().allocated_bytes_total;
  for (long long i = 0; i < 100; ++i) {
    REQUIRE_FALSE(map.put(Value(i % n), Value(i)));
    REQUIRE_FALSE(set.add(Value(i % k)));
  }
  REQUIRE(heap_stats().allocated_bytes_total == before);
  REQUIRE(map.at(Value((99 % n))).as_int() == 99);
  REQUIRE(map.put(Value(-1), Value(-1)));  // a new key: the table grows
  REQUIRE_FALSE(full(map));
  REQUIRE(map.size() == static_cast<std::size_t>(n) + 1);
}

TEST_CASE("a whole-list rewrite replaces only the list it read") {
  test::TestSegment seg;
  List l(copy_to(std::vector<long long>{1, 2, 3}));
  detail::Metadata* m = seg.meta();
  std::uint64_t v = 0;
  std::vector<detail::Word> w;
  for (detail::Rooted& r : detail::list_snapshot(l.raw(), detail::TxAccess::kReadForUpdate, &v)) w.push_back(r.word());
  std::vector<detail::Word> reversed(w.rbegin(), w.rend());

  SECTION("unchanged since the snapshot: replaced") {
    REQUIRE(detail::list_replace_if(m, l.raw(), v, reversed.data(), reversed.size()));
    REQUIRE((l[0].as_int() == 3 && l[1].as_int() == 2 && l[2].as_int() == 1 && l.size() == 3));
  }
  SECTION("an append since the snapshot: nothing replaced, the append kept") {
    l.append(Value(4LL));
    REQUIRE_FALSE(detail::list_replace_if(m, l.raw(), v, reversed.data(), reversed.size()));
    REQUIRE(l.size() == 4);
    REQUIRE((l[0].as_int() == 1 && l[3].as_int() == 4));
    // A refused replacement is no change: a snapshot taken after it still replaces.
    std::uint64_t v2 = 0;
    detail::list_snapshot(l.raw(), detail::TxAccess::kRead, &v2);
    REQUIRE(detail::list_replace_if(m, l.raw(), v2, reversed.data(), reversed.size()));
    REQUIRE(l.size() == 3);
  }
  SECTION("a change undone since the snapshot still counts as a change") {
    l.append(Value(4LL));
    l.erase(3);
    REQUIRE_FALSE(detail::list_replace_if(m, l.raw(), v, reversed.data(), reversed.size()));
  }
  REQUIRE(verify_heap().ok);
}

TEST_CASE("hash_remove_all removes the keys present in one operation") {
  test::TestSegment seg;
  Set s = new_set();
  for (long long i = 0; i < 10; ++i) s.add(Value(i));
  std::vector<Value> keys{Value(2LL), Value(4LL), Value(40LL), Value("x")};
  std::vector<detail::Word> w;
  for (const Value& k : keys) w.push_back(k.raw());
  REQUIRE(detail::hash_remove_all(s.raw(), w.data(), w.size()) == 2);
  REQUIRE(s.size() == 8);
  REQUIRE_FALSE(s.contains(Value(2LL)));
  REQUIRE_FALSE(s.contains(Value(4LL)));
  REQUIRE(s.contains(Value(3LL)));
  REQUIRE(verify_heap().ok);
}

TEST_CASE("list_insert_all inserts many values at a position in one operation") {
  test::TestSegment seg;
  List l(copy_to(std::vector<long long>{1, 2, 3}));
  std::vector<Value> vals{Value(10LL), Value(11LL)};
  std::vector<detail::Word> w{vals[0].raw(), vals[1].raw()};
  detail::list_insert_all(seg.meta(), l.raw(), 1, w.data(), w.size());
  std::vector<long long> got;
  for (std::size_t i = 0; i < l.size(); ++i) got.push_back(l[i].as_int());
  REQUIRE(got == std::vector<long long>{1, 10, 11, 2, 3});
  detail::list_insert_all(seg.meta(), l.raw(), 5, w.data(), w.size());  // at the end
  REQUIRE((l.size() == 7 && l[6].as_int() == 11));
  REQUIRE_THROWS_AS(detail::list_insert_all(seg.meta(), l.raw(), 8, w.data(), w.size()), IndexError);
  REQUIRE(l.size() == 7);
  REQUIRE(verify_heap().ok);
}
