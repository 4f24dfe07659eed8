// Lists read without their lock word (libshared/src/list_seqlock.hpp): size(), get() and items()
// outside a transaction see each change whole, under concurrent writers and collector cycles, and a list
// whose writer died inside a change is read through its lock until the change is repaired.
#include <catch2/catch.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "collector.hpp"
#include "colors/colors.hpp"
#include "container_lock.hpp"
#include "containers.hpp"
#include "layout.hpp"
#include "list_seqlock.hpp"
#include "test_segment.hpp"
#include "verifier.hpp"

using namespace colors;
using namespace colors::detail;

namespace {

ListObject* list_object(const List& l) { return reinterpret_cast<ListObject*>(l.raw()); }

std::uint64_t held_by(std::uint32_t id, std::uint32_t slot) {
  return std::uint64_t{id} << 32 | std::uint64_t{slot} << 8 | kLockHeld;
}

constexpr std::size_t kBase = 8;       // the churned list's elements that are always there
constexpr std::size_t kMaxExtra = 40;  // how far past kBase it grows

// kBase strings, "element k" at index k.
List base_list() {
  List l = new_list();
  for (std::size_t i = 0; i < kBase; ++i) l.append(Value("element " + std::to_string(i)));
  return l;
}

// While it lives, every `every`-th lock-free read pauses 20 us between the list's state and its
// elements (g_list_read_pause, list_seqlock.hpp), widening the window a change can come into.
class ReadPauses {
 public:
  explicit ReadPauses(unsigned every) {
    every_ = every;
    g_list_read_pause = [] {
      if (calls_.fetch_add(1, std::memory_order_relaxed) % every_ == 0) std::this_thread::sleep_for(std::chrono::microseconds(20));
    };
  }
  ~ReadPauses() { g_list_read_pause = nullptr; }

 private:
  static inline std::atomic<unsigned> calls_{0};
  static inline unsigned every_ = 1;
};

// Until stop(): a writer grows a base_list() by 1..kMaxExtra strings "element k" each round (its
// first rounds publish larger arrays, the old ones left to the collector) and pops them from the
// end again, and a collector runs cycles meanwhile. The collector serves the segment while it
// runs (gc_running): a writer that finds the heap full waits for its next cycle, as it would for
// the server's, instead of failing at once because no collector would answer; on a loaded
// machine the writer can fill the heap before the collector thread is scheduled.
class Churn {
 public:
  Churn(Metadata* m, List& l, gc::Collector& c)
      : m_((m->gc_running.store(1, std::memory_order_release), m)),
        writer_([this, &l] {
          for (std::size_t round = 0; !stopped(); ++round) {
            const std::size_t extra = 1 + round % kMaxExtra;
            for (std::size_t k = 0; k < extra; ++k) l.append(Value("element " + std::to_string(kBase + k)));
            for (std::size_t k = 0; k < extra; ++k) l.erase(l.size() - 1);
          }
        }),
        collector_([this, &c] {
          // Runs until the writer has ended: a writer waiting for a cycle gets one.
          while (!writer_done_.load(std::memory_order_acquire)) {
            c.run_cycle();
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
          }
        }) {}
  ~Churn() { stop(); }
  bool stopped() const { return stop_.load(std::memory_order_relaxed); }
  void stop() {
    stop_ = true;
    if (writer_.joinable()) writer_.join();
    writer_done_.store(true, std::memory_order_release);
    if (collector_.joinable()) collector_.join();
    m_->gc_running.store(0, std::memory_order_release);
  }

 private:
  Metadata* m_;
  std::atomic<bool> stop_{false}, writer_done_{false};
  std::thread writer_, collector_;
};

}  // namespace

// A pop lowers the size and then clears the slot it freed; a reader that took the old size and
// then read that slot without checking the version would return a null nobody stored. The
// writer's first rounds grow the list's array (a new one published, the old ones left to the
// collector, which runs meanwhile), and every append stores a fresh string, which the readers
// root while the writer's pops drop it.
TEST_CASE("lists read without their lock see every change whole, under writers and collections") {
  test::TestSegment seg(32 << 20);
  gc::Collector c(seg.meta(), gc::Options{});
  List l = base_list();
  ReadPauses pauses(16);
  std::atomic<long> nulls{0}, reads{0}, out_of_range{0}, wrong{0}, snapshots{0};
  Churn churn(seg.meta(), l, c);
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&, t] {
      std::size_t i = 0;
      while (!churn.stopped()) {
        // Indexes past kBase come and go; below it they are always there.
        const std::size_t at = (i++ * 7 + static_cast<std::size_t>(t)) % (kBase + kMaxExtra);
        try {
          Value v = l.get(at);
          reads.fetch_add(1, std::memory_order_relaxed);
          if (v.is_null()) {
            nulls.fetch_add(1, std::memory_order_relaxed);
          } else if (v.as_string() != "element " + std::to_string(at)) {
            wrong.fetch_add(1, std::memory_order_relaxed);
          }
        } catch (const IndexError&) {
          out_of_range.fetch_add(1, std::memory_order_relaxed);
          if (at < kBase) wrong.fetch_add(1, std::memory_order_relaxed);
        }
        const std::size_t n = l.size();
        if (n < kBase || n > kBase + kMaxExtra) wrong.fetch_add(1, std::memory_order_relaxed);
        if (i % 8 == 0) {  // a whole snapshot (list_snapshot): element k is "element k"
          std::vector<Value> all = l.items();
          snapshots.fetch_add(1, std::memory_order_relaxed);
          if (all.size() < kBase || all.size() > kBase + kMaxExtra) wrong.fetch_add(1, std::memory_order_relaxed);
          for (std::size_t k = 0; k < all.size(); ++k) {
            if (all[k].is_null()) nulls.fetch_add(1, std::memory_order_relaxed);
            else if (all[k].as_string() != "element " + std::to_string(k)) wrong.fetch_add(1, std::memory_order_relaxed);
          }
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));
  churn.stop();
  for (auto& r : readers) r.join();
  INFO("reads " << reads << ", snapshots " << snapshots << ", out of range " << out_of_range << ", nulls " << nulls
                 << ", wrong " << wrong);
  CHECK(nulls == 0);
  CHECK(wrong == 0);
  REQUIRE(reads > 1000);
  REQUIRE(snapshots > 100);
  REQUIRE(out_of_range > 0);  // the readers did race the writer's changes
  REQUIRE(l.size() == kBase);
  for (std::size_t i = 0; i < kBase; ++i) REQUIRE(l.get(i).as_string() == "element " + std::to_string(i));
  REQUIRE(verify_heap(seg.meta()).ok());
}

// ListView::read (list_read_borrowed): a chunk of the list read inside a read scope, every element
// of it in the list at one instant, with the same writer (appends that grow the array, pops from
// the end that clear the slots they free) and collections between the scopes.
TEST_CASE("lists read in chunks inside read scopes see each chunk whole, under writers and collections") {
  test::TestSegment seg(32 << 20);
  gc::Collector c(seg.meta(), gc::Options{});
  constexpr std::size_t kMax = kBase + kMaxExtra;
  List l = base_list();
  ReadPauses pauses(4);
  std::atomic<long> chunks{0}, short_chunks{0}, nulls{0}, wrong{0};
  Churn churn(seg.meta(), l, c);
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&, t] {
      std::size_t i = 0;
      while (!churn.stopped()) {
        ReadScope scope;  // one per chunk: the collector waits for each to end
        const std::size_t from = (i++ * 5 + static_cast<std::size_t>(t)) % kMax;
        ValueView out[16];
        std::size_t size = 0;
        const std::size_t k = ListView(l).read(from, out, 16, &size);
        chunks.fetch_add(1, std::memory_order_relaxed);
        if (size < kBase || size > kMax) wrong.fetch_add(1, std::memory_order_relaxed);
        if (k != (from >= size ? 0 : std::min<std::size_t>(16, size - from))) wrong.fetch_add(1, std::memory_order_relaxed);
        if (k < 16) short_chunks.fetch_add(1, std::memory_order_relaxed);
        for (std::size_t j = 0; j < k; ++j) {
          if (out[j].is_null()) nulls.fetch_add(1, std::memory_order_relaxed);
          else if (out[j].string_view() != "element " + std::to_string(from + j)) wrong.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));
  churn.stop();
  for (auto& r : readers) r.join();
  INFO("chunks " << chunks << ", short " << short_chunks << ", nulls " << nulls << ", wrong " << wrong);
  CHECK(nulls == 0);
  CHECK(wrong == 0);
  REQUIRE(chunks > 1000);
  REQUIRE(short_chunks > 0);
  {
    ReadScope scope;
    ValueView out[4];
    std::size_t size = 0;
    REQUIRE(ListView(l).read(kBase - 2, out, 4, &size) == 2);  // the end cuts the chunk short
    REQUIRE(size == kBase);
    REQUIRE(out[1].string_view() == "element 7");
    REQUIRE(ListView(l).read(kBase, out, 4) == 0);
    REQUIRE(ListView(l).read(0, out, 0) == 0);
  }
  REQUIRE_THROWS_AS(ListView(l).read(0, nullptr, 0), InvalidArgumentError);  // outside a scope
  REQUIRE(verify_heap(seg.meta()).ok());
}

TEST_CASE("every change of a list moves its version by two, and leaves it even") {
  test::TestSegment seg;
  List l = new_list();
  ListObject* lo = list_object(l);
  std::uint64_t v = lo->version.load();
  REQUIRE(v % 2 == 0);
  auto changed = [&] {
    const std::uint64_t now = lo->version.load();
    CHECK(now == v + 2);
    v = now;
  };
  l.append(Value(1));
  changed();
  l.insert(0, Value(0));
  changed();
  l.set(1, Value(5));
  changed();
  (void)l.erase(0);
  changed();
  l.clear();
  changed();
  (void)l.size();  // reads leave it
  REQUIRE(lo->version.load() == v);
  REQUIRE_THROWS_AS(l.erase(3), IndexError);  // a change that changed nothing still ends
  REQUIRE(lo->version.load() % 2 == 0);
}

TEST_CASE("a list rolled back by its transaction is readable without its lock again") {
  test::TestSegment seg;
  List l(copy_to(std::vector<long long>{1, 2, 3}));
  ListObject* lo = list_object(l);
  {
    Transaction t;
    l.append(Value(4));
    (void)l.erase(0);
    t.rollback();
  }
  REQUIRE(lo->version.load() % 2 == 0);
  REQUIRE(l.size() == 3);
  REQUIRE(l.get(0).as_int() == 1);
  REQUIRE(l.get(2).as_int() == 3);
}

// A writer killed inside a change leaves the version odd: readers must not trust what they read,
// so they take the lock, which takes it over from the dead owner and makes the list readable
// without it again.
TEST_CASE("a list whose writer died inside a change is read through its lock, then without it") {
  test::TestSegment seg;
  seg.register_client(3, 7);
  List l(copy_to(std::vector<long long>{1, 2, 3}));
  ListObject* lo = list_object(l);
  const std::uint64_t v = lo->version.load();
  lo->version.store(v + 1);  // client 7 began a change...
  lo->lock.store(held_by(7, 3));
  std::atomic<bool> done{false};
  std::thread reader([&] {
    CHECK(l.get(1).as_int() == 2);
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE_FALSE(done);  // ...and lives: the reader waits for its lock
  seg.meta()->clients[3].state.store(static_cast<std::uint32_t>(ClientState::kFree));  // it died
  reader.join();
  REQUIRE(lo->lock.load() == 0);
  REQUIRE(lo->version.load() == v + 2);
  REQUIRE(l.size() == 3);
}
