// The shared ordered map (SortedMap) against a mutex-guarded std::map<long long, Value> (what one
// process needs for the same per-call atomicity between its threads): 10,000 integer keys, point
// lookups, and 1% / 10% range scans returning the entries. Then the same through SortedMapView in
// a read scope (no lock, no root per entry) against a mutex-guarded std::map<long long, long long>
// (plain values, as the view's are borrowed words). Rounds interleave each pair; each row is the
// median over rounds of the per-round ratio (issue 18's target: within 2x, i.e. a speedup >= 0.5).
#include <algorithm>
#include <map>
#include <mutex>
#include <ostream>
#include <random>
#include <vector>

#include "bench_util.hpp"
#include "colors/colors.hpp"
#include "test_segment.hpp"

using namespace colors;

namespace {

constexpr long long kKeys = 10000;

using bench::median;

}  // namespace

void bench_sorted_map(std::ostream& out) {
  test::TestSegment seg(256 << 20);
  SortedMap sm = new_sorted_map();
  std::map<long long, Value> ref;
  std::map<long long, long long> plain;
  std::mutex mu;
  for (long long k = 0; k < kKeys; ++k) {
    sm.put(Value(k * 3), Value(k * 3));
    ref.emplace(k * 3, Value(k * 3));
    plain.emplace(k * 3, k * 3);
  }
  const int rounds = std::getenv("COLORS_BENCH_QUICK") ? 5 : 15;
  std::mt19937_64 rng(1);
  struct Case {
    const char* what;
    std::vector<double> ours_ns, ratio;
  };
  Case lookup{"SortedMap::get, 10,000 int keys", {}, {}};
  Case r1{"SortedMap::range of 1% (100 entries) of 10,000", {}, {}};
  Case r10{"SortedMap::range of 10% (1,000 entries) of 10,000", {}, {}};
  Case view_lookup{"SortedMapView::get in a read scope", {}, {}};
  Case view_r1{"SortedMapView::read of 1% (100 entries), 128 per read", {}, {}};
  Case view_r10{"SortedMapView::read of 10% (1,000 entries), 128 per read", {}, {}};
  std::vector<SortedMapView::Entry> buf(128);
  long long sink = 0;
  for (int r = 0; r < rounds; ++r) {
    std::vector<long long> keys(20000);
    for (auto& k : keys) k = static_cast<long long>(rng() % kKeys) * 3;
    auto t0 = bench::now();
    for (long long k : keys) sink += sm.get(Value(k))->as_int();
    double ours = bench::ns_since(t0) / keys.size();
    t0 = bench::now();
    for (long long k : keys) {
      std::lock_guard<std::mutex> g(mu);
      sink += ref.find(k)->second.as_int();
    }
    double base = bench::ns_since(t0) / keys.size();
    lookup.ours_ns.push_back(ours);
    lookup.ratio.push_back(ours / base);
    for (Case* c : {&r1, &r10}) {
      const long long span = c == &r1 ? kKeys / 100 : kKeys / 10;
      std::vector<long long> los(c == &r1 ? 400 : 40);
      for (auto& lo : los) lo = static_cast<long long>(rng() % (kKeys - span)) * 3;
      t0 = bench::now();
      for (long long lo : los) {
        auto e = sm.range(SortedMap::Bound::at(Value(lo)), SortedMap::Bound::at(Value(lo + 3 * span), false));
        sink += static_cast<long long>(e.size());
      }
      ours = bench::ns_since(t0) / los.size();
      t0 = bench::now();
      for (long long lo : los) {
        std::vector<std::pair<Value, Value>> e;
        std::lock_guard<std::mutex> g(mu);
        for (auto it = ref.lower_bound(lo), end = ref.lower_bound(lo + 3 * span); it != end; ++it)
          e.emplace_back(Value(it->first), it->second);
        sink += static_cast<long long>(e.size());
      }
      base = bench::ns_since(t0) / los.size();
      c->ours_ns.push_back(ours);
      c->ratio.push_back(ours / base);
    }
    {
      ReadScope scope;
      const SortedMapView view(sm);
      t0 = bench::now();
      for (long long k : keys) sink += view.get(ValueView::integer(k))->as_int();
      ours = bench::ns_since(t0) / keys.size();
    }
    t0 = bench::now();
    for (long long k : keys) {
      std::lock_guard<std::mutex> g(mu);
      sink += plain.find(k)->second;
    }
    base = bench::ns_since(t0) / keys.size();
    view_lookup.ours_ns.push_back(ours);
    view_lookup.ratio.push_back(ours / base);
    for (Case* c : {&view_r1, &view_r10}) {
      const long long span = c == &view_r1 ? kKeys / 100 : kKeys / 10;
      std::vector<long long> los(c == &view_r1 ? 400 : 40);
      for (auto& lo : los) lo = static_cast<long long>(rng() % (kKeys - span)) * 3;
      t0 = bench::now();
      for (long long lo : los) {
        ReadScope scope;
        const SortedMapView view(sm);
        using B = SortedMapView::Bound;
        B from = B::at(ValueView::integer(lo));
        const B to = B::at(ValueView::integer(lo + 3 * span), false);
        for (;;) {
          const std::size_t n = view.read(from, to, buf.data(), buf.size());
          for (std::size_t i = 0; i < n; ++i) sink += buf[i].second.as_int();
          if (n < buf.size()) break;
          from = B::at(buf[n - 1].first, false);
        }
      }
      ours = bench::ns_since(t0) / los.size();
      t0 = bench::now();
      for (long long lo : los) {
        std::lock_guard<std::mutex> g(mu);
        for (auto it = plain.lower_bound(lo), end = plain.lower_bound(lo + 3 * span); it != end; ++it) sink += it->second;
      }
      base = bench::ns_since(t0) / los.size();
      c->ours_ns.push_back(ours);
      c->ratio.push_back(ours / base);
    }
  }
  for (Case* c : {&lookup, &r1, &r10, &view_lookup, &view_r1, &view_r10}) {
    const double ours = median(c->ours_ns), ratio = median(c->ratio);
    bench::row(out, c->what, ours, ours / ratio,
               c == &lookup || c == &r1 || c == &r10 ? "base: mutex-guarded std::map<long long, Value>; median of per-round ratios"
                                                      : "base: mutex-guarded std::map<long long, long long>; median of per-round ratios");
  }
  if (sink == 42) out << "";
}
