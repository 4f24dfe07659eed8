// The ordered map under a concurrent collector: splits, merges and value replacements move
// references between B+tree nodes while cycles mark back to back (poisoning what they free); the
// map must keep exactly what a private std::map model says, the concurrent heap verifier must
// pass between cycles, and a final cycle must pass the checkmark and the full verifier (which
// checks the tree's structure).
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <random>
#include <thread>

#include "collector.hpp"
#include "colors/colors.hpp"
#include "test_segment.hpp"
#include "verifier.hpp"

using namespace colors;
using namespace colors::detail;

TEST_CASE("sorted maps churned during back-to-back cycles keep their contents and the heap verifies") {
  // Big enough for what survives the churn: the keys and values a map keeps are scattered over
  // the TLABs they were allocated in, which a non-moving heap cannot compact.
  test::TestSegment seg(48 << 20);
  Metadata* m = seg.meta();
  gc::Options o;
  o.threads = 2;
  o.poison = true;
  gc::Collector c(m, o);
  std::atomic<bool> stop{false};
  std::atomic<int> cycles{0};
  std::string gc_error;
  m->gc_running.store(1);  // this test's thread serves the allocator's requests for a cycle
  std::thread gc_thread([&] {
    while (!stop.load()) {
      c.run_cycle();
      cycles.fetch_add(1);
      VerifyReport r = verify_heap(m, VerifyMode::kConcurrent);
      if (!r.ok() && gc_error.empty()) gc_error = r.summary();
    }
  });
  // Four maps with string keys (heap objects, so the collector must keep the keys the nodes
  // hold) and string values; one of them is dropped and rebuilt now and then.
  std::mt19937_64 rng(11);
  std::vector<SortedMap> maps(4);
  std::vector<std::map<std::string, std::string>> refs(4);
  for (auto& sm : maps) sm = new_sorted_map();
  std::string error;
  long mismatches = 0;
  std::size_t ops = 0;
  auto t0 = std::chrono::steady_clock::now();
  auto running = [&] {
    auto t = std::chrono::steady_clock::now() - t0;
    return t < std::chrono::seconds(20) && (t < std::chrono::seconds(3) || cycles.load() < 10);
  };
  auto check = [&](std::size_t i) {
    auto items = maps[i].items();
    if (items.size() != refs[i].size()) return false;
    auto it = refs[i].begin();
    for (auto& [k, v] : items) {
      if (k.as_string() != it->first || v.as_string() != it->second) return false;
      ++it;
    }
    return maps[i].size() == refs[i].size();
  };
  try {
    while (running()) {
      const std::size_t i = rng() % maps.size();
      for (int n = 0; n < 200; ++n, ++ops) {
        std::string k = "key-" + std::to_string(rng() % 3000);
        if (rng() % 3 != 0) {
          std::string v = "value-" + std::to_string(rng());
          maps[i].put(Value(k), Value(v));
          refs[i][k] = v;
        } else {
          maps[i].remove(Value(k));
          refs[i].erase(k);
        }
      }
      if (!check(i)) ++mismatches;
      if (rng() % 50 == 0) {
        maps[i] = new_sorted_map();
        refs[i].clear();
      }
    }
  } catch (const std::exception& e) {
    error = e.what();
    GcStats g = gc_stats();
    error += " [cycles " + std::to_string(cycles.load()) + ", ops " + std::to_string(ops) + ", last cycle marked " +
             std::to_string(g.bytes_marked) + " B, used after " + std::to_string(g.heap_used_after) + "]";
  }
  stop = true;
  gc_thread.join();
  m->gc_running.store(0);
  REQUIRE(error == "");
  REQUIRE(gc_error == "");
  REQUIRE(mismatches == 0);
  INFO("cycles " << cycles.load() << ", operations " << ops);
  REQUIRE(cycles.load() >= 3);
  std::vector<std::string> errors;
  c.set_after_mark_hook([&](std::uint8_t epoch) { errors = gc::checkmark(m, epoch); });
  c.run_cycle();
  c.set_after_mark_hook(nullptr);
  INFO((errors.empty() ? std::string() : errors.front()));
  REQUIRE(errors.empty());
  VerifyReport r = verify_heap(m);
  INFO(r.summary());
  REQUIRE(r.ok());
  for (std::size_t i = 0; i < maps.size(); ++i) REQUIRE(check(i));
}
