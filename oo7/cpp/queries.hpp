// Q1, Q2, Q3 (oo7/README.md "Indexes and queries"), each written once over an index accessor:
// SharedIndexAccess reads the shared sorted maps in read scopes (SortedMapView), PrivateIndexAccess
// the std::unordered_map / std::map baselines.
#pragma once
#include <colors/colors.hpp>
#include <cstdint>
#include <optional>
#include <string_view>

#include "indexes.hpp"
#include "operations.hpp"
#include "params.hpp"
#include "shared_access.hpp"
#include "splitmix64.hpp"

namespace oo7 {

enum class Query { kQ1, kQ2, kQ3 };
// nullopt for a name that is not a query (it may be an operation).
std::optional<Query> query_from_name(std::string_view name);
const char* query_name(Query q);

// Q2 covers 1% of the buildDate range [1000, 2000), Q3 10%.
inline constexpr std::int64_t kQ2Lo = 1000, kQ2Hi = 1010, kQ3Lo = 1000, kQ3Hi = 1100;
inline constexpr int kQ1Lookups = 10;

inline std::uint64_t atomic_parts(const Params& p) {
  return static_cast<std::uint64_t>(p.atomic_per_comp) * static_cast<std::uint64_t>(p.comp_per_module);
}

class PrivateIndexAccess {
 public:
  explicit PrivateIndexAccess(const PrivateIndexes& ix) : ix_(ix) {}
  // Calls fn(x) for the part with this id, if any.
  template <class F>
  void find(std::int64_t id, F&& fn) const {
    auto it = ix_.by_id.find(id);
    if (it != ix_.by_id.end()) fn(it->second->x);
  }
  // Calls fn(x) for each part with lo <= buildDate < hi, in date then id order.
  template <class F>
  void dates(std::int64_t lo, std::int64_t hi, F&& fn) const {
    for (auto it = ix_.by_date.lower_bound(lo); it != ix_.by_date.end() && it->first < hi; ++it)
      for (const priv::AtomicPart* p : it->second) fn(p->x);
  }

 private:
  const PrivateIndexes& ix_;
};

class SharedIndexAccess {
 public:
  SharedIndexAccess(const SharedAccess& a, const SharedIndexes& ix) : a_(a), ix_(ix) {}
  // Each query reads in one read scope: the sorted maps through SortedMapView (no lock, no root
  // per entry), each date's list in chunks and each part's `x` through views.
  template <class F>
  void find(std::int64_t id, F&& fn) const {
    colors::ReadScope scope;
    const std::optional<colors::ValueView> v = colors::SortedMapView(ix_.by_id).get(colors::ValueView::integer(id));
    if (v) fn(v->as_object().get(a_.schema().part.x).as_int());
  }
  template <class F>
  void dates(std::int64_t lo, std::int64_t hi, F&& fn) const {
    using B = colors::SortedMapView::Bound;
    colors::ReadScope scope;
    const colors::SortedMapView by_date(ix_.by_date);
    const colors::Field& x = a_.schema().part.x;
    colors::SortedMapView::Entry entries[32];
    colors::ValueView chunk[16];
    B from = B::at(colors::ValueView::integer(lo));
    const B to = B::at(colors::ValueView::integer(hi), false);
    for (;;) {
      const std::size_t n = by_date.read(from, to, entries, 32);
      for (std::size_t e = 0; e < n; ++e) {
        const colors::ListView same = entries[e].second.as_list();
        for (std::size_t at = 0, k; (k = same.read(at, chunk, 16)) > 0; at += k)
          for (std::size_t i = 0; i < k; ++i) fn(chunk[i].as_object().get(x).as_int());
      }
      if (n < 32) return;
      from = B::at(entries[n - 1].first, false);
    }
  }

 private:
  const SharedAccess& a_;
  const SharedIndexes& ix_;
};

// Q1: kQ1Lookups lookups of ids 1 + rand(parts) drawn by SplitMix64(seed + 1); (found, sum of x).
template <class I>
OpResult q1(const I& ix, std::uint64_t seed, std::uint64_t parts) {
  SplitMix64 rng(seed + 1);
  OpResult r{};
  for (int i = 0; i < kQ1Lookups; ++i) {
    auto id = static_cast<std::int64_t>(1 + rng.rand(parts));
    ix.find(id, [&](std::int64_t x) {
      ++r.count;
      r.sum += x;
    });
  }
  return r;
}

// Q2 / Q3: the parts with buildDate in [lo, hi): (count, sum of x).
template <class I>
OpResult date_range(const I& ix, std::int64_t lo, std::int64_t hi) {
  OpResult r{};
  ix.dates(lo, hi, [&](std::int64_t x) {
    ++r.count;
    r.sum += x;
  });
  return r;
}

template <class I>
OpResult run_query(const I& ix, Query q, std::uint64_t seed, std::uint64_t parts) {
  switch (q) {
    case Query::kQ1: return q1(ix, seed, parts);
    case Query::kQ2: return date_range(ix, kQ2Lo, kQ2Hi);
    case Query::kQ3: return date_range(ix, kQ3Lo, kQ3Hi);
  }
  return {};
}

}  // namespace oo7
