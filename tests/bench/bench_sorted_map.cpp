// The shared ordered map (SortedMap) against a mutex-guarded std::map<long long, Value> (what one
// process needs for the same per-call atomicity between its threads): 10,000 integer keys, point
// lookups, and 1% / 10% range scans returning the entries. Rounds interleave the two; each row
// is the median over rounds of the per-round ratio (issue 18's target: within 2x, i.e. a
// speedup >= 0.5).
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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

void bench_sorted_map(std::ostream& out) {
  test::TestSegment seg(256 << 20);
  SortedMap sm = new_sorted_map();
  std::map<long long, Value> ref;
  std::mutex mu;
  for (long long k = 0; k < kKeys; ++k) {
    sm.put(Value(k * 3), Value(k * 3));
    ref.emplace(k * 3, Value(k * 3));
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
  }
  for (Case* c : {&lookup, &r1, &r10}) {
    const double ours = median(c->ours_ns), ratio = median(c->ratio);
    bench::row(out, c->what, ours, ours / ratio, "base: mutex-guarded std::map; median of per-round ratios; target speedup >= 0.5");
  }
  if (sink == 42) out << "";
}
