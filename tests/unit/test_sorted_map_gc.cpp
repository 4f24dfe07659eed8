// The ordered map under a concurrent collector: splits, merges and value replacements move
// references between B+tree nodes while cycles mark back to back (poisoning what they free); the
// map must keep exactly what a private std::map model says, the concurrent heap verifier must
// pass between cycles, and a final cycle must pass the checkmark and the full verifier (which
// checks the tree's structure).
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
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

// SortedMapView's reads without the lock (gc/README.md, "Sorted maps read without their lock"):
// two reader threads in short read scopes against a writer that splits, merges, replaces values
// in place and rolls transactions back, while the collector cycles back to back and poisons what
// it frees. Values are strings naming their key, so a value or node read after it was freed (or
// an entry of another key) shows. Every get of an always-present key finds it; every read holds
// each always-present key of its range, in ascending order.
TEST_CASE("sorted map views read a map a writer and the collector change, without its lock") {
  test::TestSegment seg(48 << 20);
  Metadata* m = seg.meta();
  gc::Options o;
  o.threads = 1;
  o.poison = true;
  gc::Collector c(m, o);
  std::atomic<bool> stop{false};
  std::atomic<int> cycles{0};
  m->gc_running.store(1);
  std::thread gc_thread([&] {
    while (!stop.load()) {
      c.run_cycle();
      cycles.fetch_add(1);
    }
  });
  constexpr long long kKeys = 6000;  // keys 0, 10, 20, ... are always present
  SortedMap sm = new_sorted_map();
  auto value = [](long long k, unsigned long long serial) { return Value("k" + std::to_string(k) + ":" + std::to_string(serial)); };
  for (long long k = 0; k < kKeys; k += 10) sm.put(Value(k), value(k, 0));
  auto key_of = [](std::string_view v) { return std::stoll(std::string(v.substr(1, v.find(':') - 1))); };

  std::atomic<long> reads{0}, gets{0};
  std::string error;
  std::mutex error_mu;
  auto fail = [&](const std::string& e) {
    std::lock_guard<std::mutex> g(error_mu);
    if (error.empty()) error = e;
    stop = true;
  };
  auto reader = [&](unsigned seed) {
    std::mt19937_64 rng(seed);
    SortedMapView::Entry buf[100];
    try {
      while (!stop.load()) {
        ReadScope scope;
        const SortedMapView view(sm);
        for (int i = 0; i < 20; ++i) {
          const long long k = static_cast<long long>(rng() % kKeys);
          const std::optional<ValueView> v = view.get(ValueView::integer(k));
          if (v && key_of(v->string_view()) != k) fail("get " + std::to_string(k) + " gave " + std::string(v->string_view()));
          if (k % 10 == 0 && !v) fail("always-present key " + std::to_string(k) + " missing");
          gets.fetch_add(1);
        }
        const long long lo = static_cast<long long>(rng() % kKeys);
        const std::size_t n = view.read(SortedMapView::Bound::at(ValueView::integer(lo)),
                                        SortedMapView::Bound::at(ValueView::integer(lo + 400), false), buf, 100);
        long long expect = (lo + 9) / 10 * 10;  // the next always-present key
        long long prev = lo - 1;
        for (std::size_t i = 0; i < n; ++i) {
          const long long k = buf[i].first.as_int();
          if (k <= prev || k >= lo + 400) fail("read from " + std::to_string(lo) + ": key " + std::to_string(k) + " after " + std::to_string(prev));
          if (key_of(buf[i].second.string_view()) != k) fail("read: key " + std::to_string(k) + " holds " + std::string(buf[i].second.string_view()));
          if (k > expect && expect < kKeys) fail("read from " + std::to_string(lo) + " skipped " + std::to_string(expect));
          if (k == expect) expect += 10;
          prev = k;
        }
        if (n < 100 && expect < std::min(lo + 400, kKeys)) fail("read from " + std::to_string(lo) + " ended before " + std::to_string(expect));
        reads.fetch_add(1);
      }
    } catch (const std::exception& e) {
      fail(std::string("reader: ") + e.what());
    }
  };
  std::thread r1(reader, 1), r2(reader, 2);
  std::mt19937_64 rng(3);
  unsigned long long serial = 0, ops = 0;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    while (!stop.load() && (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(4) || cycles.load() < 5 || reads.load() < 100)) {
      if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(30)) break;
      const bool tx = rng() % 8 == 0;
      std::optional<Transaction> t;
      if (tx) t.emplace();
      for (int i = 0; i < 50; ++i, ++ops) {
        const long long k = static_cast<long long>(rng() % kKeys);
        // Always-present keys only get new values; the others come and go (splits and merges).
        if (k % 10 == 0 || rng() % 2 == 0) sm.put(Value(k), value(k, ++serial));
        else sm.remove(Value(k));
      }
      if (tx) (rng() % 2 == 0 ? t->rollback() : t->commit());
    }
  } catch (const std::exception& e) {
    fail(std::string("writer: ") + e.what());
  }
  stop = true;
  r1.join();
  r2.join();
  gc_thread.join();
  m->gc_running.store(0);
  INFO("cycles " << cycles.load() << ", writer operations " << ops << ", reads " << reads.load() << ", gets " << gets.load());
  REQUIRE(error == "");
  REQUIRE(cycles.load() >= 5);
  REQUIRE(reads.load() >= 100);
  VerifyReport r = verify_heap(m);
  INFO(r.summary());
  REQUIRE(r.ok());
}
