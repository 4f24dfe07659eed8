// Module tests of the ordered map (SortedMap) against std::map: random operations deep enough to
// split and merge nodes on several levels, ranges both ways, navigation, key categories and
// their errors, cursors across changes, and the repair after a dead lock holder.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>

#include "colors/colors.hpp"
#include "container_lock.hpp"
#include "layout.hpp"
#include "test_segment.hpp"

using namespace colors;

namespace {

using Ref = std::map<long long, long long>;

long long key_of(const Value& v) { return v.as_int(); }

// The entries of `ref` in [lo, hi) (or as the bounds say), in order, reversed if asked.
std::vector<std::pair<long long, long long>> ref_range(const Ref& ref, std::optional<long long> lo, bool lo_in,
                                                       std::optional<long long> hi, bool hi_in, bool reverse) {
  std::vector<std::pair<long long, long long>> out;
  for (auto& [k, v] : ref) {
    if (lo && (k < *lo || (k == *lo && !lo_in))) continue;
    if (hi && (k > *hi || (k == *hi && !hi_in))) continue;
    out.emplace_back(k, v);
  }
  if (reverse) std::reverse(out.begin(), out.end());
  return out;
}

void require_same(const SortedMap& sm, const Ref& ref) {
  REQUIRE(sm.size() == ref.size());
  auto items = sm.items();
  REQUIRE(items.size() == ref.size());
  auto it = ref.begin();
  for (auto& [k, v] : items) {
    REQUIRE(key_of(k) == it->first);
    REQUIRE(v.as_int() == it->second);
    ++it;
  }
}

SortedMap::Bound bound(std::optional<long long> k, bool in) {
  if (!k) return {};
  return SortedMap::Bound::at(Value(*k), in);
}

}  // namespace

TEST_CASE("sorted map behaves like std::map under random puts, removes and range reads") {
  test::TestSegment seg(64 << 20);
  SortedMap sm = new_sorted_map();
  Ref ref;
  std::mt19937_64 rng(42);
  // Several growth and shrink phases: the tree gains and loses levels.
  for (int phase = 0; phase < 4; ++phase) {
    const long long span = phase % 2 == 0 ? 6000 : 300;
    const int put_share = phase % 2 == 0 ? 70 : 25;
    for (int i = 0; i < 12000; ++i) {
      long long k = static_cast<long long>(rng() % static_cast<unsigned long long>(span)) * 3 - 900;
      int op = static_cast<int>(rng() % 100);
      if (op < put_share) {
        long long v = static_cast<long long>(rng() % 1000000);
        bool fresh = ref.find(k) == ref.end();
        REQUIRE(sm.put(Value(k), Value(v)) == fresh);
        ref[k] = v;
      } else if (op < 90) {
        REQUIRE(sm.remove(Value(k)) == (ref.erase(k) == 1));
      } else {
        auto got = sm.get(Value(k));
        auto it = ref.find(k);
        REQUIRE(got.has_value() == (it != ref.end()));
        if (got) REQUIRE(got->as_int() == it->second);
      }
      if (i % 2000 == 0) {
        // A random range, every bound form, both directions.
        std::optional<long long> lo, hi;
        if (rng() % 4 != 0) lo = static_cast<long long>(rng() % 20000) - 1000;
        if (rng() % 4 != 0) hi = static_cast<long long>(rng() % 20000) - 1000;
        bool lo_in = rng() % 2 == 0, hi_in = rng() % 2 == 0, rev = rng() % 2 == 0;
        auto want = ref_range(ref, lo, lo_in, hi, hi_in, rev);
        auto got = sm.range(bound(lo, lo_in), bound(hi, hi_in), rev);
        REQUIRE(got.size() == want.size());
        for (std::size_t j = 0; j < got.size(); ++j) {
          REQUIRE(key_of(got[j].first) == want[j].first);
          REQUIRE(got[j].second.as_int() == want[j].second);
        }
        auto keys = sm.keys(bound(lo, lo_in), bound(hi, hi_in), rev, 7);
        REQUIRE(keys.size() == std::min<std::size_t>(7, want.size()));
        for (std::size_t j = 0; j < keys.size(); ++j) REQUIRE(key_of(keys[j]) == want[j].first);
      }
    }
    require_same(sm, ref);
    auto v = verify_heap();  // includes the tree's structure check
    INFO(v.report);
    REQUIRE(v.ok);
  }
  // Remove everything: the tree shrinks back to nothing.
  std::vector<long long> ks;
  for (auto& kv : ref) ks.push_back(kv.first);
  std::shuffle(ks.begin(), ks.end(), rng);
  for (long long k : ks) REQUIRE(sm.remove(Value(k)));
  REQUIRE(sm.size() == 0);
  REQUIRE_FALSE(sm.first().has_value());
  REQUIRE(verify_heap().ok);
}

TEST_CASE("sorted map navigation: first, last, floor, ceiling, lower, higher, rank, entry_at") {
  test::TestSegment seg;
  SortedMap sm = new_sorted_map();
  Ref ref;
  for (long long k = 0; k < 3000; k += 5) {
    sm.put(Value(k), Value(k * 2));
    ref[k] = k * 2;
  }
  REQUIRE(key_of(sm.first()->first) == 0);
  REQUIRE(key_of(sm.last()->first) == 2995);
  for (long long q = -7; q < 3010; q += 3) {
    auto fl = sm.floor(Value(q));
    auto ce = sm.ceiling(Value(q));
    auto lo = sm.lower(Value(q));
    auto hi = sm.higher(Value(q));
    auto r_ce = ref.lower_bound(q), r_hi = ref.upper_bound(q);
    REQUIRE(ce.has_value() == (r_ce != ref.end()));
    if (ce) REQUIRE(key_of(ce->first) == r_ce->first);
    REQUIRE(hi.has_value() == (r_hi != ref.end()));
    if (hi) REQUIRE(key_of(hi->first) == r_hi->first);
    REQUIRE(fl.has_value() == (r_hi != ref.begin()));
    if (fl) REQUIRE(key_of(fl->first) == std::prev(r_hi)->first);
    REQUIRE(lo.has_value() == (r_ce != ref.begin()));
    if (lo) REQUIRE(key_of(lo->first) == std::prev(r_ce)->first);
    REQUIRE(sm.rank(Value(q)) == static_cast<std::size_t>(std::distance(ref.begin(), r_ce)));
    REQUIRE(sm.rank(Value(q), true) == static_cast<std::size_t>(std::distance(ref.begin(), r_hi)));
  }
  for (std::int64_t i = 0; i < 600; i += 7) REQUIRE(key_of(sm.entry_at(i).first) == std::next(ref.begin(), i)->first);
  REQUIRE(key_of(sm.entry_at(-1).first) == 2995);
  REQUIRE_THROWS_AS(sm.entry_at(600), IndexError);
  REQUIRE_THROWS_AS(sm.entry_at(-601), IndexError);
  REQUIRE(sm.at(Value(10)).as_int() == 20);
  REQUIRE_THROWS_AS(sm.at(Value(11)), KeyError);
}

TEST_CASE("sorted map keys: integers and floats compare numerically, as in Python") {
  test::TestSegment seg;
  SortedMap sm = new_sorted_map();
  const long long big = std::numeric_limits<long long>::max();
  sm.put(Value(2.5), Value("2.5"));
  sm.put(Value(1LL), Value("1"));
  sm.put(Value(-0.5), Value("-0.5"));
  sm.put(Value(big), Value("max"));                      // boxed integer
  sm.put(Value(9.3e18), Value("9.3e18"));                // above every int64
  sm.put(Value(9.2e18), Value("9.2e18"));                // below 2^63 - 1
  sm.put(Value(-std::numeric_limits<double>::infinity()), Value("-inf"));
  sm.put(Value(1LL << 62), Value("2^62"));
  REQUIRE_FALSE(sm.put(Value(1.0), Value("one")));       // equal to the integer 1: replaces its value
  REQUIRE_FALSE(sm.put(Value(2.5), Value("2.5b")));
  std::vector<std::string> order;
  for (auto& [k, v] : sm.items()) order.push_back(v.as_string());
  REQUIRE(order == std::vector<std::string>{"-inf", "-0.5", "one", "2.5b", "2^62", "9.2e18", "max", "9.3e18"});
  REQUIRE(sm.get(Value(1LL))->as_string() == "one");
  REQUIRE(sm.first()->first.kind() == TypeKind::kFloat);
  REQUIRE(sm.range({}, {}, false, 3)[2].first.kind() == TypeKind::kInteger);  // the key put first stays
  REQUIRE(sm.contains(Value(0.0 + (1LL << 62))));
  REQUIRE_FALSE(sm.contains(Value(0.75)));
  REQUIRE(verify_heap().ok);
}

TEST_CASE("sorted map keys: strings by code point, binaries by bytes") {
  test::TestSegment seg;
  SortedMap s = new_sorted_map();
  std::map<std::string, int> ref;  // std::string compares bytes: UTF-8 byte order is code point order
  std::mt19937 rng(3);
  const char* alphabet[] = {"a", "b", "Z", "\xc3\xa9" /* é */, "\xe2\x82\xac" /* € */, "\xf0\x9f\x98\x80" /* 😀 */, ""};
  for (int i = 0; i < 3000; ++i) {
    std::string k;
    for (int j = 0, n = static_cast<int>(rng() % 5); j < n; ++j) k += alphabet[rng() % 7];
    s.put(Value(k), Value(i));
    ref[k] = i;
  }
  auto items = s.items();
  REQUIRE(items.size() == ref.size());
  auto it = ref.begin();
  for (auto& [k, v] : items) {
    REQUIRE(k.as_string() == it->first);
    REQUIRE(v.as_int() == it->second);
    ++it;
  }
  SortedMap b = new_sorted_map();
  std::map<std::vector<std::uint8_t>, int> bref;
  for (int i = 0; i < 2000; ++i) {
    std::vector<std::uint8_t> k(rng() % 4);
    for (auto& c : k) c = static_cast<std::uint8_t>(rng() % 3 == 0 ? 0xff : rng() % 3);
    b.put(new_binary(k), Value(i));
    bref[k] = i;
  }
  auto bitems = b.items();
  REQUIRE(bitems.size() == bref.size());
  auto bit = bref.begin();
  for (auto& [k, v] : bitems) {
    REQUIRE(k.as_bytes() == bit->first);
    REQUIRE(v.as_int() == bit->second);
    ++bit;
  }
  REQUIRE(verify_heap().ok);
}

TEST_CASE("sorted map rejects keys it cannot order and changes nothing") {
  test::TestSegment seg;
  SortedMap sm = new_sorted_map();
  REQUIRE_THROWS_AS(sm.put(Value(), Value(1)), TypeMismatchError);
  REQUIRE_THROWS_AS(sm.put(Value(std::nan("")), Value(1)), TypeMismatchError);
  REQUIRE_THROWS_AS(sm.put(Value(true), Value(1)), TypeMismatchError);
  REQUIRE_THROWS_AS(sm.put(new_list(), Value(1)), TypeMismatchError);
  REQUIRE(sm.size() == 0);
  for (int i = 0; i < 100; ++i) sm.put(Value(i), Value(i));
  try {
    sm.put(Value("x"), Value(1));
    FAIL("a string key went into a map of numbers");
  } catch (const TypeMismatchError& e) {
    std::string what = e.what();
    REQUIRE(what.find("string \"x\"") != std::string::npos);  // names the key
    REQUIRE(what.find("numbers") != std::string::npos);       // and what the map holds
  }
  REQUIRE_THROWS_AS(sm.put(new_binary("ab", 2), Value(1)), TypeMismatchError);
  REQUIRE_THROWS_AS(sm.get(Value("x")), TypeMismatchError);
  REQUIRE_THROWS_AS(sm.remove(Value(std::nan(""))), TypeMismatchError);
  REQUIRE_THROWS_AS(sm.range(SortedMap::Bound::at(Value("a")), {}), TypeMismatchError);
  REQUIRE(sm.size() == 100);
  REQUIRE(key_of(sm.last()->first) == 99);
  // Emptied, the map takes another category.
  sm.clear();
  REQUIRE(sm.put(Value("x"), Value(1)));
  REQUIRE(verify_heap().ok);
}

TEST_CASE("a sorted map cursor sees each key once, in order, while the map changes") {
  test::TestSegment seg;
  SortedMap sm = new_sorted_map();
  for (long long k = 0; k < 2000; k += 2) sm.put(Value(k), Value(k));
  auto c = sm.cursor(SortedMap::Bound::at(Value(100)), SortedMap::Bound::at(Value(1500), false), false, 16);
  long long prev = -1;
  std::size_t seen = 0;
  while (auto e = c.next()) {
    long long k = key_of(e->first);
    REQUIRE(k > prev);
    REQUIRE(k >= 100);
    REQUIRE(k < 1500);
    prev = k;
    ++seen;
    // Changes behind the cursor are not seen, changes ahead are.
    // (Far enough ahead that the cursor's current batch of 16 does not hold them yet.)
    if (k == 400) {
      sm.remove(Value(1002));
      sm.put(Value(1003), Value(1003));
      sm.put(Value(101), Value(101));
    }
  }
  REQUIRE(seen == 700);  // 700 even keys in [100, 1500), -1002 +1003
  auto r = sm.cursor({}, {}, true, 5);
  long long next = 1998;
  REQUIRE(key_of(r.next()->first) == next);
}

TEST_CASE("a field of the sorted map type holds sorted maps only") {
  test::TestSegment seg;
  Class cls = define_class("t.Indexed", {{"by_id", TypeKind::kSortedMap, ""}});
  REQUIRE(cls.fields()[0].type == TypeKind::kSortedMap);
  Object o = new_object(cls);
  SortedMap sm = new_sorted_map();
  sm.put(Value(1), Value("one"));
  o.set("by_id", sm);
  REQUIRE(SortedMap(o.get("by_id")).at(Value(1)).as_string() == "one");
  REQUIRE_THROWS_AS(o.set("by_id", new_map()), TypeMismatchError);
  REQUIRE(verify_heap().ok);
}

namespace {

std::uint64_t held_by(std::uint32_t id, std::uint32_t slot) {
  return std::uint64_t{id} << 32 | std::uint64_t{slot} << 8 | detail::kLockHeld;
}

}  // namespace

TEST_CASE("a sorted map whose lock holder died before counting its change is re-counted") {
  test::TestSegment seg;
  seg.register_client(3, 7);
  SortedMap sm = new_sorted_map();
  for (int i = 0; i < 500; ++i) sm.put(Value(i), Value(i));
  auto* mo = reinterpret_cast<detail::SortedMapObject*>(sm.raw());
  // As if client 7 died after publishing an insert but before storing the size.
  mo->size.store(499);
  mo->lock.store(held_by(7, 3));
  seg.meta()->clients[3].state.store(static_cast<std::uint32_t>(detail::ClientState::kFree));
  REQUIRE(sm.size() == 500);
  REQUIRE(mo->lock.load() == 0);
  REQUIRE(sm.at(Value(250)).as_int() == 250);
  REQUIRE(verify_heap().ok);
}

TEST_CASE("the verifier reports a sorted map whose keys are out of order") {
  test::TestSegment seg;
  SortedMap sm = new_sorted_map();
  for (int i = 0; i < 10; ++i) sm.put(Value(i), Value(i));
  auto* mo = reinterpret_cast<detail::SortedMapObject*>(sm.raw());
  auto* leaf = reinterpret_cast<detail::ArrayObject*>(mo->root.load());
  leaf->slots[1].store(detail::make_small(5));  // key 0 becomes 5: 5, 1, 2, ...
  auto v = verify_heap();
  REQUIRE_FALSE(v.ok);
  REQUIRE(v.report.find("out of order") != std::string::npos);
  leaf->slots[1].store(detail::make_small(0));
  mo->size.store(11);
  v = verify_heap();
  REQUIRE_FALSE(v.ok);
  REQUIRE(v.report.find("size 11 but 10 entries") != std::string::npos);
  mo->size.store(10);
  REQUIRE(verify_heap().ok);
}
