// Uncontended single operations on a shared List and Map, each one atomic across processes under
// the container's lock word (libshared/src/containers.hpp), against the same operation on a
// std::vector<Value> / std::unordered_map<long long, Value> guarded by a std::mutex, what one
// process needs for the same atomicity between its own threads.
#include <algorithm>
#include <mutex>
#include <ostream>
#include <unordered_map>
#include <vector>

#include "bench_util.hpp"
#include "colors/colors.hpp"
#include "test_segment.hpp"

using namespace colors;

namespace {

template <class Ours, class Base>
void compare(std::ostream& out, const char* what, Ours ours, Base base) {
  const std::size_t n = std::getenv("COLORS_BENCH_QUICK") ? 200000 : 1000000;
  double ours_best = 1e18, base_best = 1e18;
  for (int r = 0; r < 5; ++r) {
    auto t0 = bench::now();
    for (std::size_t i = 0; i < n; ++i) ours(static_cast<long long>(i));
    ours_best = std::min(ours_best, bench::ns_since(t0) / n);
    t0 = bench::now();
    for (std::size_t i = 0; i < n; ++i) base(static_cast<long long>(i));
    base_best = std::min(base_best, bench::ns_since(t0) / n);
  }
  bench::row(out, what, ours_best, base_best, "base: mutex-guarded std container of Value");
}

}  // namespace

void bench_containers(std::ostream& out) {
  test::TestSegment seg(64 << 20);
  List l = new_list();
  std::vector<Value> v;
  std::mutex mu;
  for (int i = 0; i < 10; ++i) {
    l.append(Value(i));
    v.emplace_back(i);
  }
  long long sink = 0;
  compare(
      out, "shared List::get (uncontended)", [&](long long) { sink += l.get(5).as_int(); },
      [&](long long) {
        std::lock_guard<std::mutex> g(mu);
        sink += v[5].as_int();
      });
  compare(
      out, "shared List::set (uncontended)", [&](long long i) { l.set(5, Value(i)); },
      [&](long long i) {
        std::lock_guard<std::mutex> g(mu);
        v[5] = Value(i);
      });
  compare(
      out, "shared List::append + erase of the last (uncontended)",
      [&](long long i) {
        l.append(Value(i));
        sink += l.erase(10).as_int();
      },
      [&](long long i) {
        {
          std::lock_guard<std::mutex> g(mu);
          v.emplace_back(i);
        }
        std::lock_guard<std::mutex> g(mu);
        sink += v.back().as_int();
        v.pop_back();
      });
  Map m = new_map();
  std::unordered_map<long long, Value> um;
  for (int i = 0; i < 10; ++i) {
    m.put(Value(i), Value(i));
    um.emplace(i, Value(i));
  }
  compare(
      out, "shared Map::get (uncontended)", [&](long long) { sink += m.get(Value(5))->as_int(); },
      [&](long long) {
        std::lock_guard<std::mutex> g(mu);
        sink += um.find(5)->second.as_int();
      });
  compare(
      out, "shared Map::put of an existing key (uncontended)", [&](long long i) { m.put(Value(5), Value(i)); },
      [&](long long i) {
        std::lock_guard<std::mutex> g(mu);
        um.insert_or_assign(5, Value(i));
      });
  if (sink == 42) out << "";  // keeps the reads
}
