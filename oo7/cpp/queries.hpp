// Q1, Q2, Q3 (oo7/README.md "Indexes and queries"), each written once over an index accessor:
// SharedIndexAccess reads the shared sorted maps (every call goes to the heap), PrivateIndexAccess
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
  template <class F>
  void find(std::int64_t id, F&& fn) const {
    std::optional<colors::Value> v = ix_.by_id.get(colors::Value(static_cast<long long>(id)));
    if (v) fn(a_.x({SharedAccess::object(std::move(*v))}));
  }
  // One locked range read of the date map, then each list and part read through views in a read
  // scope (no root per element).
  template <class F>
  void dates(std::int64_t lo, std::int64_t hi, F&& fn) const {
    using B = colors::SortedMap::Bound;
    auto entries = ix_.by_date.range(B::at(colors::Value(static_cast<long long>(lo))),
                                     B::at(colors::Value(static_cast<long long>(hi)), false));
    colors::ReadScope scope;
    const colors::Field& x = a_.schema().part.x;
    colors::ValueView chunk[16];
    for (auto& [date, value] : entries) {
      const colors::ListView same = colors::ValueView(value).as_list();
      for (std::size_t from = 0, k; (k = same.read(from, chunk, 16)) > 0; from += k)
        for (std::size_t i = 0; i < k; ++i) fn(chunk[i].as_object().get(x).as_int());
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
