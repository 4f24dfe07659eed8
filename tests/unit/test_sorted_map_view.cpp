// SortedMapView, the sorted map's reads in a read scope without its lock: the same answers as the
// locked reads on trees of several levels and every key category, the errors of SortedMap's reads
// and of views outside a scope, and (test_sorted_map_gc.cpp) reads against a concurrent writer
// and collector.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "colors/colors.hpp"
#include "test_segment.hpp"

using namespace colors;

namespace {

using Bound = SortedMapView::Bound;

// Every entry of `view` in [lo, hi) as the bounds say, read `max` at a time, each read going on
// after the last key of the one before.
std::vector<std::pair<long long, long long>> read_all(const SortedMapView& view, Bound lo, const Bound& hi, std::size_t max) {
  std::vector<std::pair<long long, long long>> out;
  std::vector<SortedMapView::Entry> buf(max);
  for (;;) {
    const std::size_t n = view.read(lo, hi, buf.data(), max);
    REQUIRE(n <= max);
    for (std::size_t i = 0; i < n; ++i) out.emplace_back(buf[i].first.as_int(), buf[i].second.as_int());
    if (n < max) return out;
    lo = Bound::at(buf[n - 1].first, false);
  }
}

}  // namespace

TEST_CASE("sorted map views read what the locked reads read, on a tree of three levels") {
  test::TestSegment seg(64 << 20);
  SortedMap sm = new_sorted_map();
  std::map<long long, long long> ref;
  std::mt19937_64 rng(7);
  while (ref.size() < 20000) {
    const long long k = static_cast<long long>(rng() % 60000) - 5000;
    const long long v = static_cast<long long>(rng() % 1000000);
    sm.put(Value(k), Value(v));
    ref[k] = v;
  }
  ReadScope scope;
  const SortedMapView view(sm);
  for (int i = 0; i < 20000; ++i) {
    const long long k = static_cast<long long>(rng() % 62000) - 6000;
    const std::optional<ValueView> got = view.get(ValueView::integer(k));
    const auto it = ref.find(k);
    REQUIRE(got.has_value() == (it != ref.end()));
    REQUIRE(view.contains(ValueView::integer(k)) == got.has_value());
    if (got) REQUIRE(got->as_int() == it->second);
  }
  for (int i = 0; i < 300; ++i) {
    std::optional<long long> lo, hi;
    if (rng() % 4 != 0) lo = static_cast<long long>(rng() % 62000) - 6000;
    if (rng() % 4 != 0) hi = static_cast<long long>(rng() % 62000) - 6000;
    const bool lo_in = rng() % 2 == 0, hi_in = rng() % 2 == 0;
    const Bound vlo = lo ? Bound::at(ValueView::integer(*lo), lo_in) : Bound::none();
    const Bound vhi = hi ? Bound::at(ValueView::integer(*hi), hi_in) : Bound::none();
    const SortedMap::Bound llo = lo ? SortedMap::Bound::at(Value(*lo), lo_in) : SortedMap::Bound::none();
    const SortedMap::Bound lhi = hi ? SortedMap::Bound::at(Value(*hi), hi_in) : SortedMap::Bound::none();
    const std::size_t max = 1 + rng() % 300;
    std::vector<std::pair<long long, long long>> want;
    for (auto& [k, v] : sm.range(llo, lhi)) want.emplace_back(k.as_int(), v.as_int());
    REQUIRE(read_all(view, vlo, vhi, max) == want);
  }
  // Keys read from the map serve as bounds; a float key finds its integer (1 == 1.0).
  SortedMapView::Entry first[1];
  REQUIRE(view.read(Bound::none(), Bound::none(), first, 1) == 1);
  REQUIRE(first[0].first.as_int() == ref.begin()->first);
  REQUIRE(view.get(first[0].first)->as_int() == ref.begin()->second);
  REQUIRE(view.get(ValueView::floating(static_cast<double>(ref.begin()->first)))->as_int() == ref.begin()->second);
  REQUIRE_FALSE(view.get(ValueView::floating(static_cast<double>(ref.begin()->first) + 0.5)).has_value());
  REQUIRE(view.read(Bound::none(), Bound::none(), first, 0) == 0);
}

TEST_CASE("sorted map views of string keys, of an empty map, and their errors") {
  test::TestSegment seg(16 << 20);
  SortedMap words = new_sorted_map();
  for (int i = 0; i < 3000; ++i) words.put(Value("w" + std::to_string(i)), Value(i));
  SortedMap empty = new_sorted_map();
  List list = new_list();
  SortedMapView outside(words);
  REQUIRE_THROWS_AS(outside.get(ValueView::integer(1)), InvalidArgumentError);
  SortedMapView::Entry buf[8];
  REQUIRE_THROWS_AS(outside.read(Bound::none(), Bound::none(), buf, 8), InvalidArgumentError);
  {
    ReadScope scope;
    const SortedMapView view(words);
    REQUIRE(view.get(new_string_view("w1234"))->as_int() == 1234);
    REQUIRE_FALSE(view.get(new_string_view("w")).has_value());
    // The string keys in code-point order from "w2999" on: "w2999", "w3", "w30", ...
    REQUIRE(view.read(Bound::at(new_string_view("w2999")), Bound::none(), buf, 3) == 3);
    REQUIRE(buf[0].first.string_view() == "w2999");
    REQUIRE(buf[1].first.string_view() == "w3");
    REQUIRE(buf[2].first.string_view() == "w30");
    // A key of another category: SortedMap::get's error, also for bounds.
    try {
      view.get(ValueView::integer(3));
      FAIL("an integer key was compared with string keys");
    } catch (const TypeMismatchError& e) {
      REQUIRE(std::string(e.what()).find("strings") != std::string::npos);
    }
    REQUIRE_THROWS_AS(view.read(Bound::none(), Bound::at(ValueView::integer(3)), buf, 8), TypeMismatchError);
    REQUIRE_THROWS_AS(view.get(ValueView::boolean(true)), TypeMismatchError);
    REQUIRE_THROWS_AS(view.get(ValueView::floating(std::nan(""))), TypeMismatchError);
    // An empty map has no entries for a key of any category, and refuses what is no key.
    const SortedMapView none = ValueView(empty).as_sorted_map();
    REQUIRE_FALSE(none.get(ValueView::integer(3)).has_value());
    REQUIRE_FALSE(none.get(new_string_view("w1")).has_value());
    REQUIRE(none.read(Bound::none(), Bound::none(), buf, 8) == 0);
    REQUIRE_THROWS_AS(none.get(ValueView::boolean(false)), TypeMismatchError);
    REQUIRE_THROWS_AS(ValueView(list).as_sorted_map(), TypeMismatchError);
    REQUIRE_THROWS_AS(ValueView::integer(4).as_sorted_map(), TypeMismatchError);
  }
  REQUIRE_THROWS_AS(outside.get(ValueView::integer(1)), InvalidArgumentError);
}
