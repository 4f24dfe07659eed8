// copy_to of standard vectors, sets and maps: built inside a read scope (colors.hpp, "deep copies
// of builtins": containers, strings and boxed numbers without a root each, each container's array
// or table filled before it is published) against the rooted copy it replaced for these shapes (a
// List appended to, a Set added to, a Map put into element by element, each string and boxed
// number rooted), measured in the same run, interleaved, with a
// collector running; medians of the per-round ratios. This thread's CPU time, so the collector's
// work on its own threads is in neither column.
#include <algorithm>
#include <ctime>
#include <map>
#include <set>
#include <ostream>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "collector.hpp"
#include "collector_barrier.hpp"
#include "colors/colors.hpp"
#include "test_segment.hpp"

using namespace colors;

namespace {

using bench::median;
using bench::thread_ns;

// The rooted copy: what copy_to did for these containers, and still does where a scope cannot be used.
template <class T>
Value rooted_copy(const T& v) {
  return copy_to(v);
}
template <class T>
Value rooted_copy(const std::vector<T>& v) {
  List l = new_list(v.size());
  for (const T& x : v) l.append(rooted_copy(x));
  return l;
}
template <class T>
Value rooted_copy(const std::set<T>& v) {
  Set s = new_set(v.size());
  for (const T& x : v) s.add(rooted_copy(x));
  return s;
}
template <class K, class V>
Value rooted_copy(const std::map<K, V>& v) {
  Map m = new_map(v.size());
  for (const auto& [k, x] : v) m.put(rooted_copy(k), rooted_copy(x));
  return m;
}

// ns per copied element of `v`, scoped (copy_to) and rooted, `reps` copies per timing.
template <class C>
void compare(std::ostream& out, const std::string& what, const C& v, std::size_t elements, int rounds) {
  const int reps = 20;
  std::vector<double> ours, base, ratio;
  for (int r = 0; r < rounds; ++r) {
    double o = 0, b = 0;
    for (int order = 0; order < 2; ++order) {
      const bool scoped_first = (r % 2 == 0);
      const bool scoped = (order == 0) == scoped_first;
      const double t0 = thread_ns();
      for (int k = 0; k < reps; ++k) {
        Value c = scoped ? copy_to(v) : rooted_copy(v);
        (void)c;
      }
      const double ns = (thread_ns() - t0) / (static_cast<double>(reps) * static_cast<double>(elements));
      (scoped ? o : b) = ns;
    }
    ours.push_back(o);
    base.push_back(b);
    ratio.push_back(b / o);
  }
  char note[96];
  std::snprintf(note, sizeof note, "base: rooted copy; median per-round speedup %.2fx", median(ratio));
  bench::row(out, what, median(ours), median(base), note);
}

}  // namespace

void bench_copy(std::ostream& out) {
  test::TestSegment seg(256 << 20);
  seg.meta()->collector_barrier.store(1, std::memory_order_release);
  detail::use_collector_barrier(seg.meta());
  gc::Options go;
  go.threads = 1;
  gc::Collector collector(seg.meta(), go);
  collector.start();
  const int rounds = std::getenv("COLORS_BENCH_QUICK") ? 5 : 15;
  std::vector<long long> ints(1000);
  for (std::size_t i = 0; i < ints.size(); ++i) ints[i] = static_cast<long long>(i) * 7;
  std::vector<std::string> strings;
  for (int i = 0; i < 1000; ++i) strings.push_back("node-" + std::to_string(100000 + i));
  std::vector<std::vector<double>> rows(100, std::vector<double>(10));
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t j = 0; j < 10; ++j) rows[i][j] = static_cast<double>(i) + 0.25 * static_cast<double>(j);
  compare(out, "copy_to(vector<long long>) of 1000, per element", ints, ints.size(), rounds);
  compare(out, "copy_to(vector<string>) of 1000 (11 chars), per element", strings, strings.size(), rounds);
  compare(out, "copy_to(vector<vector<double>>) 100 x 10, per element", rows, 1000, rounds);
  std::set<std::string> names(strings.begin(), strings.end());
  std::map<std::string, long long> by_name;
  for (std::size_t i = 0; i < strings.size(); ++i) by_name[strings[i]] = static_cast<long long>(i);
  compare(out, "copy_to(set<string>) of 1000 (11 chars), per element", names, names.size(), rounds);
  compare(out, "copy_to(map<string, long long>) of 1000, per entry", by_name, by_name.size(), rounds);
  collector.stop();
  detail::stop_using_collector_barrier();
}
