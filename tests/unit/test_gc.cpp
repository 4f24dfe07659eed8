// Module tests of the collector, in-process: this test thread is the mutator (client 1), the
// collector runs its cycles on its own threads against the same segment.
#include <catch2/catch.hpp>
#include <chrono>
#include <random>
#include <thread>

#include "classes.hpp"
#include "collector.hpp"
#include "colors/colors.hpp"
#include "containers.hpp"
#include "heap.hpp"
#include "monitor.hpp"
#include "objects.hpp"
#include "pending_bits.hpp"
#include "test_segment.hpp"
#include "verifier.hpp"

using namespace colors;
using namespace colors::detail;

namespace {

gc::Options opts(unsigned threads = 2) {
  gc::Options o;
  o.threads = threads;
  o.poison = true;
  return o;
}

// Runs one cycle with the checkmark verifier between marking and sweeping. REQUIRES: no
// mutator is running.
GcCycleStats checked_cycle(gc::Collector& c, Metadata* m) {
  std::vector<std::string> errors;
  c.set_after_mark_hook([&](std::uint8_t epoch) { errors = gc::checkmark(m, epoch); });
  GcCycleStats s = c.run_cycle();
  c.set_after_mark_hook(nullptr);
  INFO((errors.empty() ? std::string() : errors.front()));
  REQUIRE(errors.empty());
  VerifyReport r = verify_heap(m);
  INFO(r.summary());
  REQUIRE(r.ok());
  return s;
}

}  // namespace

TEST_CASE("garbage is freed - what values, repositories and channels hold survives") {
  test::TestSegment seg(16 << 20);
  Metadata* m = seg.meta();
  gc::Collector c(m, opts());
  List kept = new_list();
  for (int i = 0; i < 1000; ++i) kept.append(Value("kept " + std::to_string(i)));
  repository("r").set(copy_to(std::vector<std::string>{"in", "repository"}));
  channel("ch", 4).send(copy_to(std::map<std::string, long long>{{"queued", 1}}));
  for (int i = 0; i < 20000; ++i) Value garbage("garbage " + std::to_string(i));  // dropped at once
  // Dropping a root flags its object pending, and pending flags set before a cycle are honoured
  // by it (gc/README.md), so garbage dropped before a cycle is freed by the cycle after it.
  GcCycleStats s1 = checked_cycle(c, m);
  GcCycleStats s2 = checked_cycle(c, m);
  REQUIRE(s1.objects_freed + s2.objects_freed >= 20000);
  REQUIRE(s1.bytes_freed + s2.bytes_freed > 20000 * 32);
  GcCycleStats s3 = checked_cycle(c, m);
  REQUIRE(s3.objects_freed < 10);
  for (int i = 0; i < 1000; ++i) REQUIRE(kept[i].as_string() == "kept " + std::to_string(i));
  REQUIRE(List(repository("r").get())[1].as_string() == "repository");
  REQUIRE(Map(*channel("ch").try_receive()).at(Value("queued")).as_int() == 1);
  REQUIRE(gc::last_cycle_stats(m).cycle == 3);
}

TEST_CASE("the sweep coalesces free space across its partitions: an emptied heap is one free chunk") {
  test::TestSegment seg(16 << 20);
  Metadata* m = seg.meta();
  gc::Collector c(m, opts(2));  // 16 partitions
  {
    // Fill most of the heap with small and medium objects, so the partitions are cut across it.
    List keep = new_list(100000);
    for (int i = 0; i < 100000 && heap_usage(m).free_bytes > (2u << 20); ++i) {
      keep.append(i % 10 == 0 ? new_binary(std::vector<std::uint8_t>(20000, 1)) : Value("object " + std::to_string(i)));
    }
    checked_cycle(c, m);  // the cycle walks the full heap into partitions
  }
  retire_thread_tlab();
  checked_cycle(c, m);
  checked_cycle(c, m);
  HeapUsage u = heap_usage(m);
  INFO(u.free_chunks << " free chunks, largest " << u.largest_free << " of " << u.free_bytes);
  // All that stays is this process's root-table chunk (one object); the free space on both of its
  // sides is one chunk each at most.
  REQUIRE(u.free_chunks <= 2);
  REQUIRE(u.largest_free >= u.capacity / 2);
  REQUIRE(u.free_bytes >= u.capacity - (64u << 10));
}

TEST_CASE("cycles, DAGs and evolved objects are collected as a whole when dropped") {
  test::TestSegment seg(16 << 20);
  Metadata* m = seg.meta();
  gc::Collector c(m, opts());
  Class node = define_class("t.Node", {{"next", TypeKind::kAny, ""}, {"v", TypeKind::kInteger, ""}});
  std::size_t used0;
  {
    Object first = new_object(node);
    Object prev = first;
    for (int i = 0; i < 5000; ++i) {
      Object n = new_object(node);
      n.set("v", Value(i));
      prev.set("next", n);
      prev = n;
    }
    prev.set("next", first);  // a ring
    first.add_field({"extra", TypeKind::kString, ""});
    first.set("extra", "evolved");
    checked_cycle(c, m);
    // The ring is alive: walk it.
    Value cur = first.get("next");
    for (int i = 0; i < 5000; ++i) {
      REQUIRE(Object(cur).get("v").as_int() == i);
      cur = Object(cur).get("next");
    }
    REQUIRE(cur.same_object(first));
    used0 = heap_stats().capacity - heap_stats().free_bytes;
  }
  // Every handle on the ring is gone: two cycles bring the memory back (the first still honours
  // the pending flags that dropping the handles set).
  GcCycleStats a = checked_cycle(c, m);
  GcCycleStats b = checked_cycle(c, m);
  REQUIRE(a.objects_freed + b.objects_freed >= 5001);
  REQUIRE(b.heap_used_after < used0);
}

TEST_CASE("concurrent mutation during back-to-back cycles loses nothing") {
  test::TestSegment seg(8 << 20);
  Metadata* m = seg.meta();
  gc::Collector c(m, opts());
  std::atomic<bool> stop{false};
  std::atomic<int> cycles{0};
  m->gc_running.store(1);  // this test's thread serves the allocator's requests for a cycle
  std::thread gc_thread([&] {
    while (!stop.load()) {
      c.run_cycle();
      cycles.fetch_add(1);
    }
  });
  // A mutator keeps a window of lists; each list holds a checksum of its contents. Old lists are
  // dropped and new ones built continuously; the heap is small, so the collector must keep up.
  std::mt19937 rng(7);
  std::vector<List> window(64);
  std::vector<long long> sums(64, 0);
  std::size_t allocated = 0;
  int failures = 0;
  std::string error;
  auto t0 = std::chrono::steady_clock::now();
#if defined(__SANITIZE_THREAD__)
  const std::size_t heaps = 1;  // ThreadSanitizer runs the mutator ~10x slower
#else
  const std::size_t heaps = 3;
#endif
  // At least 3 s and more than `heaps` heaps of allocation (so the collector must have reclaimed);
  // the allocation volume, not the time, is what the test needs, so a slow (loaded, sanitized)
  // run goes on longer, up to 60 s.
  auto running = [&] {
    auto t = std::chrono::steady_clock::now() - t0;
    if (t >= std::chrono::seconds(60)) return false;
    return t < std::chrono::seconds(3) || allocated <= heaps * (8u << 20);
  };
  try {
  while (running()) {
    std::size_t k = rng() % window.size();
    if (!window[k].is_null()) {
      long long sum = 0;
      for (const Value& v : window[k].items()) sum += Object(v).get("v").as_int();
      if (sum != sums[k]) {
        ++failures;
        break;
      }
    }
    List l = new_list();
    long long sum = 0;
    Class node = define_class("t.Cell", {{"v", TypeKind::kInteger, ""}, {"s", TypeKind::kString, ""}});
    for (int i = 0; i < 50; ++i) {
      Object o = new_object(node);
      long long v = static_cast<long long>(rng() % 1000);
      o.set("v", Value(v));
      o.set("s", Value("payload " + std::to_string(v)));
      l.append(o);
      sum += v;
    }
    allocated += 50 * 150;
    window[k] = l;
    sums[k] = sum;
  }
  } catch (const std::exception& e) {
    error = e.what();
  }
  stop = true;
  gc_thread.join();
  m->gc_running.store(0);
  REQUIRE(error == "");
  REQUIRE(failures == 0);
  INFO("cycles " << cycles.load() << ", allocated ~" << allocated);
  REQUIRE(cycles.load() > 3);
  REQUIRE(allocated > heaps * (8u << 20));  // more than the heap: the collector reclaimed
  checked_cycle(c, m);
  for (std::size_t k = 0; k < window.size(); ++k) {
    if (window[k].is_null()) continue;
    long long sum = 0;
    for (const Value& v : window[k].items()) sum += Object(v).get("v").as_int();
    REQUIRE(sum == sums[k]);
  }
}

TEST_CASE("a cycle requested before the collector thread first runs is still answered") {
  test::TestSegment seg(2 << 20);
  Metadata* m = seg.meta();
  gc::Options o = opts();
  o.threshold_percent = 99;  // nothing but the request starts a cycle
  o.before_loop = [] { std::this_thread::sleep_for(std::chrono::milliseconds(200)); };
  gc::Collector c(m, o);
  c.start();
  // The thread is still asleep: this request is made after start(), as a client's would be.
  const std::uint32_t done = m->gc_done_seq.load();
  REQUIRE(request_gc_and_wait(m, 5'000'000'000));
  CHECK(m->gc_done_seq.load() != done);
  c.stop();
}

namespace {

// Allocates about `bytes` of garbage in 64 KiB binaries, each dropped at once.
void allocate_garbage(std::size_t bytes) {
  for (std::size_t done = 0; done < bytes; done += 64 << 10) Value b = new_binary(std::vector<std::uint8_t>(64 << 10, 7));
}

std::uint64_t allocated(Metadata* m) { return m->allocated_bytes_total.load(std::memory_order_relaxed); }

// Allocates garbage in 256 KiB steps, 2 ms apart, until the collector thread finishes a cycle;
// returns the bytes allocated since `from` (an earlier allocated(m)) when the step after the
// cycle saw it done (0: no cycle in 10 s).
std::uint64_t allocate_until_cycle(Metadata* m, std::uint64_t from) {
  const std::uint32_t done = m->gc_done_seq.load();
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < until) {
    if (m->gc_done_seq.load() != done) return allocated(m) - from;
    allocate_garbage(256 << 10);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return 0;
}

// A collector paced at 100% of the live estimate and from `min_trigger` bytes on, its occupancy
// threshold out of reach (in the 128 MiB heaps below, until about 128 MiB were allocated).
gc::Options paced(std::uint64_t min_trigger) {
  gc::Options o = opts();
  o.threshold_percent = 99;
  o.pacing_percent = 100;
  o.min_trigger_bytes = min_trigger;
  return o;
}

// A new list of `n` binaries of 64 KiB each.
List binaries(int n) {
  List l = new_list();
  for (int i = 0; i < n; ++i) l.append(new_binary(std::vector<std::uint8_t>(64 << 10, 1)));
  return l;
}

}  // namespace

TEST_CASE("pacing starts a cycle once min_trigger_bytes were allocated, far below the threshold") {
  test::TestSegment seg(128 << 20);
  Metadata* m = seg.meta();
  gc::Options o = paced(4 << 20);
  SECTION("paced") {
    gc::Collector c(m, o);
    c.start();
    std::uint64_t bytes = allocate_until_cycle(m, allocated(m));
    REQUIRE(bytes != 0);
    CHECK(bytes >= std::uint64_t{4} << 20);  // nothing else could start it before the trigger
    // Soon after: well before the heap fills (the collector polls every 10 ms; a step takes 2 ms).
    CHECK(bytes < std::uint64_t{48} << 20);
    c.stop();
  }
  SECTION("pacing off: the same allocation starts nothing") {
    o.pacing_percent = 0;
    gc::Collector c(m, o);
    c.start();
    allocate_garbage(12 << 20);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // ten polls of the collector thread
    CHECK(gc::last_cycle_stats(m).cycle == 0);
    c.stop();
  }
}

TEST_CASE("the pacing trigger grows with the live data the last cycle found") {
  test::TestSegment seg(128 << 20);
  Metadata* m = seg.meta();
  gc::Collector c(m, paced(1 << 20));
  c.start();
  List live = binaries(128);  // 8 MiB
  // Data allocated since the previous cycle started counts as live from the cycle after the next
  // (the estimate leaves out the interval, which may be floating garbage): so two cycles.
  REQUIRE(request_gc_and_wait(m, 10'000'000'000));
  REQUIRE(request_gc_and_wait(m, 10'000'000'000));
  const std::uint64_t after = gc::last_cycle_stats(m).heap_used_after;
  const std::uint64_t from = allocated(m);  // nothing was allocated since that cycle started
  REQUIRE(after >= std::uint64_t{8} << 20);
  // Allocating less than `after` (but well above min_trigger_bytes) starts nothing; the trigger
  // is `after`: 100% of the heap in use after a cycle that followed no allocation.
  const std::uint64_t cycles = gc::last_cycle_stats(m).cycle;
  allocate_garbage(4 << 20);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(gc::last_cycle_stats(m).cycle == cycles);
  std::uint64_t bytes = allocate_until_cycle(m, from);
  REQUIRE(bytes != 0);
  CHECK(bytes >= after);
  CHECK(bytes < after + (std::uint64_t{40} << 20));
  for (int i = 0; i < 128; ++i) REQUIRE(live[i].as_bytes().size() == std::size_t{64} << 10);
  c.stop();
}

TEST_CASE("garbage a cycle still keeps (dropped since the cycle before) does not raise the pacing trigger") {
  test::TestSegment seg(256 << 20);
  Metadata* m = seg.meta();
  // A 40 MiB minimum, so that no paced cycle starts while the 32 MiB list is built (one would see
  // it live, and its garbage would count as live one cycle longer); 400%, so that a trigger paced
  // on the use after the next cycle (32 MiB of floating garbage) would be 128 MiB.
  gc::Options o = paced(40 << 20);
  o.pacing_percent = 400;
  gc::Collector c(m, o);
  c.start();
  binaries(512);  // 32 MiB, dropped at once
  // Dropping the root flagged the list pending before this cycle: it keeps the 32 MiB (floating
  // garbage), which the next cycle frees.
  REQUIRE(request_gc_and_wait(m, 10'000'000'000));
  REQUIRE(gc::last_cycle_stats(m).heap_used_after >= std::uint64_t{32} << 20);
  // The next cycle comes at the minimum trigger (40 MiB), as the heap holds nothing live; the
  // bound leaves the collector thread ~300 ms to notice (256 KiB steps 2 ms apart).
  std::uint64_t bytes = allocate_until_cycle(m, allocated(m));
  REQUIRE(bytes != 0);
  CHECK(bytes >= std::uint64_t{40} << 20);
  CHECK(bytes < std::uint64_t{80} << 20);
  c.stop();
}

TEST_CASE("an allocation that finds the heap full waits for a cycle instead of failing") {
  test::TestSegment seg(2 << 20);
  Metadata* m = seg.meta();
  gc::Options o = opts();
  o.threshold_percent = 99;  // only out-of-memory triggers cycles here
  gc::Collector c(m, o);
  c.start();
  for (int i = 0; i < 200000; ++i) Value s(std::string(100, 'x'));  // ~30 MiB through a 2 MiB heap
  REQUIRE(gc::last_cycle_stats(m).cycle > 3);
  // Live data beyond the heap still fails, with the message naming the fix.
  List hold = new_list();
  REQUIRE_THROWS_AS(
      [&] {
        for (;;) hold.append(new_binary(std::vector<std::uint8_t>(1000, 1)));
      }(),
      OutOfMemoryError);
  c.stop();
}

// ---- the pending set (libshared/src/pending_bits.hpp) ----

TEST_CASE("pending set: an overwritten reference flags its object's start, and a pass takes exactly the flagged objects") {
  test::TestSegment seg(16 << 20);
  Metadata* m = seg.meta();
  gc::Collector c(m, opts());
  List l = new_list();
  for (int i = 0; i < 100; ++i) l.append(Value("element " + std::to_string(i)));
  checked_cycle(c, m);
  checked_cycle(c, m);  // the bits set while building are taken
  GcCycleStats quiet = checked_cycle(c, m);
  CHECK(quiet.pending_objects == 0);
  CHECK(quiet.marking_passes == 2);  // the root pass and one pending pass that found nothing

  // Read without a Value: dropping a Value's root is itself a barriered store that flags it.
  const Word w7 = list_get(l.raw(), 7), w8 = list_get(l.raw(), 8);
  CHECK_FALSE(pending_bit(g_pending_bits, w7));
  l.set(7, Value(7));  // the deletion barrier flags the string that was there
  CHECK(pending_bit(g_pending_bits, w7));
  CHECK_FALSE(pending_bit(g_pending_bits, w8));
  CHECK(find_pending_bit(g_pending_bits, w7 + kGranule, w7 + block_size_of(w7)) == 0);  // its start only
  GcCycleStats s = checked_cycle(c, m);
  CHECK(s.pending_objects == 1);  // the string, floating garbage now
  CHECK_FALSE(pending_bit(g_pending_bits, w7));
  GcCycleStats s2 = checked_cycle(c, m);
  CHECK(s2.pending_objects == 0);
  CHECK(s2.objects_freed >= 1);  // the string, freed by the cycle after
  CHECK(l[8].as_string() == "element 8");
}

TEST_CASE("pending set: the verifier reports a bit that names no object's start") {
  test::TestSegment seg(16 << 20);
  Metadata* m = seg.meta();
  Value s("a string of some length, so that its block spans several granules");
  const Word w = s.raw();
  REQUIRE(verify_heap(m).ok());
  // Fault injection: a stale bit inside the string's block, as a sweep that forgot to clear the
  // bits of what it freed would leave once the memory is reused.
  set_pending_bit(g_pending_bits, w + kGranule);
  VerifyReport r = verify_heap(m);
  REQUIRE_FALSE(r.ok());
  CHECK(r.summary().find("pending bit") != std::string::npos);
  clear_pending_bits(g_pending_bits, w + kGranule, w + 2 * kGranule);
  CHECK(verify_heap(m).ok());
  // The object's own start is a valid place for a bit.
  set_pending_bit(g_pending_bits, w);
  CHECK(verify_heap(m).ok());
}

TEST_CASE("pending set: clearing a range leaves the bits around it") {
  test::TestSegment seg(16 << 20);
  const std::uintptr_t b = seg.meta()->objects_begin;
  // Bits 0..199 set, then [3, 130) cleared: the edge words keep their other bits.
  for (std::uintptr_t i = 0; i < 200; ++i) set_pending_bit(g_pending_bits, b + i * kGranule);
  clear_pending_bits(g_pending_bits, b + 3 * kGranule, b + 130 * kGranule);
  for (std::uintptr_t i = 0; i < 200; ++i) {
    INFO("bit " << i);
    CHECK(pending_bit(g_pending_bits, b + i * kGranule) == (i < 3 || i >= 130));
  }
  CHECK(find_pending_bit(g_pending_bits, b + 3 * kGranule, b + 200 * kGranule) == b + 130 * kGranule);
  CHECK(find_pending_bit(g_pending_bits, b + 3 * kGranule, b + 130 * kGranule) == 0);
  clear_pending_bits(g_pending_bits, b, b + 200 * kGranule);
  CHECK(find_pending_bit(g_pending_bits, b, seg.meta()->objects_end) == 0);
}

TEST_CASE("a dead owner's monitor report does not outlive its object: the sweep forgets it") {
  test::TestSegment seg(16 << 20);
  Metadata* m = seg.meta();
  gc::Collector c(m, opts());
  detail::set_monitor_table_bits(m, 0);  // one entry: every object collides
  Value survivor("survivor");
  const void* survivor_addr = reinterpret_cast<const void*>(survivor.raw());
  // Two objects whose monitors are held by threads that end without leaving them (a robust
  // mutex's owner dying, as a killed process would). The first death is recovered (turned into
  // a poison mark) before its object is freed; the second is still a holder record when the
  // sweep frees its object.
  auto hold_and_die = [&](const char* text) {
    std::uint64_t addr = 0;
    bool entered = false;
    std::thread([&] {
      Value v(text);
      addr = v.raw();
      entered = detail::monitor_enter(m, reinterpret_cast<const void*>(addr));
    }).join();  // v's root goes with the thread; the monitor stays held by a dead thread
    REQUIRE(entered);
    return reinterpret_cast<const void*>(addr);
  };
  const void* first = hold_and_die("first");
  REQUIRE(detail::monitor_enter(m, survivor_addr, 1000 * 1000000LL));  // recovers: first is now marked
  detail::monitor_exit(m, survivor_addr);
  REQUIRE(detail::monitor_for(m, first).poison.load() == 1);
  const void* second = hold_and_die("second");
  checked_cycle(c, m);
  checked_cycle(c, m);
  CHECK(detail::monitor_for(m, first).poison.load() == 0);
  CHECK(detail::monitor_for(m, second).held.load() == 0);
  // Whatever is allocated at those addresses later is not reported.
  CHECK(detail::monitor_enter(m, second, 1000 * 1000000LL));  // recovers the second death
  detail::monitor_exit(m, second);
  CHECK(detail::monitor_enter(m, first, 0));
  detail::monitor_exit(m, first);
  CHECK(detail::monitor_enter(m, survivor_addr, 0));
  detail::monitor_exit(m, survivor_addr);
  CHECK(survivor.as_string() == "survivor");
}

TEST_CASE("deleting repositories and channels during collector cycles keeps the heap consistent and frees their values") {
  test::TestSegment seg(16 << 20);
  Metadata* m = seg.meta();
  gc::Collector c(m, opts());
  {
    Repository r = repository("doomed.r");
    r.set(copy_to(std::vector<std::string>{"dropped", "by", "delete"}));
    Channel ch = channel("doomed.c", 8);
    for (int i = 0; i < 8; ++i) REQUIRE(ch.try_send(Value("queued " + std::to_string(i))));
  }
  checked_cycle(c, m);
  REQUIRE(delete_repository("doomed.r"));
  REQUIRE(delete_channel("doomed.c"));
  GcCycleStats s1 = checked_cycle(c, m);
  GcCycleStats s2 = checked_cycle(c, m);
  CHECK(s1.objects_freed + s2.objects_freed >= 12);  // 4 list objects + 8 strings at least

  // Deletions racing with cycles: the collector scans tombstones and reused slot blocks. The
  // churn is bounded (a few hundred KiB of garbage in all), so it never outruns the collector.
  std::atomic<bool> done{false};
  std::thread churn([&] {
    for (int i = 0; i < 3000; ++i) {
      const std::string name = "churn." + std::to_string(i % 4);
      try {
        Channel ch = channel(name, 16);
        ch.try_send(Value("v" + std::to_string(i)));
        Repository r = repository(name);
        r.set(Value("r" + std::to_string(i)));
      } catch (const KeyError&) {
      }
      delete_channel(name);
      delete_repository(name);
    }
    done = true;
  });
  std::string broken;  // the first verifier failure (checked after the join: no REQUIRE while churn runs)
  for (int cycles = 0; cycles < 3 || !done; ++cycles) {
    c.run_cycle();
    VerifyReport r = verify_heap(m, VerifyMode::kConcurrent);
    if (!r.ok() && broken.empty()) broken = r.summary();
  }
  churn.join();
  INFO(broken);
  REQUIRE(broken.empty());
  checked_cycle(c, m);
}

// A transaction's undo log names the words it changed; a rollback stores their old values back.
// Objects and lists the transaction wrote and then dropped (here: made and written inside it, as a
// copy into the heap does) were freed by a cycle before the rollback, their memory poisoned and
// reused, and the rollback then wrote into it (and read a poisoned header for a lock word: the
// client, and the server finishing a dead client's transaction, crashed). The log keeps every
// object it has entries for until the transaction ends.
TEST_CASE("a transaction's undo log keeps what it wrote: a rollback after cycles writes into no freed memory") {
  test::TestSegment seg(16 << 20);
  Metadata* m = seg.meta();
  gc::Collector c(m, opts());
  Class cls = define_class("t.TxNode", {{"v", TypeKind::kAny, ""}});
  List kept = new_list();
  kept.append(Value(1));
  Object held = new_object(cls);
  held.set("v", Value(7));
  {
    Transaction tx;
    kept.append(Value(2));    // logged: a live list
    held.set("v", Value(8));  // logged: a live object's field
    for (int i = 0; i < 3000; ++i) {  // written inside the transaction, then dropped
      List l = new_list();
      l.append(Value("x"));
      l.append(Value(i));
      Object o = new_object(cls);
      o.set("v", Value(i));
    }
    c.run_cycle();
    c.run_cycle();
    for (int i = 0; i < 3000; ++i) Value junk(std::string(100, 'A'));  // reuses what the cycles freed
    tx.rollback();
  }
  REQUIRE(kept.size() == 1);
  REQUIRE(kept[0].as_int() == 1);
  REQUIRE(held.get("v").as_int() == 7);
  // The checkmark and the full verifier after each; what the log held is garbage once the
  // transaction ended (3,000 lists and 3,000 objects at least), freed by the next two cycles.
  const GcCycleStats s1 = checked_cycle(c, m);
  const GcCycleStats s2 = checked_cycle(c, m);
  REQUIRE(s1.objects_freed + s2.objects_freed >= 6000);
  REQUIRE(checked_cycle(c, m).objects_freed < 10);
}

// The same for a field in a user object's extension (fields beyond its inline slots), changed by a
// transaction while a schema change outside it (add_field, on another thread) grows the extension:
// the rollback restores the field where the object keeps it, and writes into no freed memory
// (strings made after the cycles, which reuse what they freed, keep their bytes).
TEST_CASE("a rollback restores a field beyond the inline slots while a schema change outside the transaction grows the extension") {
  test::TestSegment seg(16 << 20);
  Metadata* m = seg.meta();
  gc::Collector c(m, opts());
  Class cls = define_class("t.TxExt", {{"f0", TypeKind::kAny, ""}});
  for (int round = 0; round < 20; ++round) {
    Object o = new_object(cls);
    // The object's block has room for two slots: e1 goes inline, e2 into an extension of one.
    for (int f = 1; f <= 2; ++f) o.add_field({"e" + std::to_string(f), TypeKind::kAny, ""});
    o.set("e2", Value(424242));  // what the rollback writes back
    std::atomic<int> step{0};
    std::string error;
    std::thread tx_thread([&] {
      try {
        Transaction tx;
        o.set("e2", Value("written in the transaction"));
        step.store(1);
        while (step.load() != 2) std::this_thread::yield();
        tx.rollback();
      } catch (const std::exception& e) {
        error = e.what();
        step.store(1);
      }
    });
    while (step.load() != 1) std::this_thread::yield();
    // Outside the transaction: more fields than the extension has room for.
    for (int f = 0; f < 8; ++f) o.add_field({"later" + std::to_string(f), TypeKind::kAny, ""});
    for (int i = 0; i < 200; ++i) Value garbage(std::string(64, 'g'));
    c.run_cycle();
    c.run_cycle();
    // Strings made now reuse what the cycles freed. Not lists: a plain change to a list whose
    // ownership record the transaction's object shares (they are hashed) would wait for it.
    std::vector<Value> fresh;
    for (int i = 0; i < 3000; ++i) fresh.push_back(Value(std::string(24, static_cast<char>('a' + i % 26)) + std::to_string(i)));
    step.store(2);
    tx_thread.join();
    REQUIRE(error == "");
    // The field holds its value from before the transaction, in the extension the object has now.
    REQUIRE(o.get("e2").as_int() == 424242);
    for (int f = 0; f < 8; ++f) REQUIRE(o.get("later" + std::to_string(f)).is_null());
    for (int i = 0; i < 3000; ++i)
      REQUIRE(fresh[i].as_string() == std::string(24, static_cast<char>('a' + i % 26)) + std::to_string(i));
  }
  checked_cycle(c, m);
}

TEST_CASE("a read without a root: its window opens while no cycle runs or the running one marks, and closes when a sweep may free", "[gc][read_without_sweep]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  // The collector's words, as a cycle moves them (no collector runs in this test).
  auto at = [&](std::uint32_t started, std::uint32_t done, GcPhase phase) {
    m->gc_started_seq.store(started, std::memory_order_seq_cst);
    m->gc_done_seq.store(done, std::memory_order_seq_cst);
    m->gc_phase.store(static_cast<std::uint8_t>(phase), std::memory_order_seq_cst);
  };
  const std::uint32_t s = m->gc_started_seq.load();
  at(s, s, GcPhase::kIdle);
  const std::uint64_t idle = no_sweep_window_begin(m);
  REQUIRE(idle != 0);
  CHECK(no_sweep_window_end(m, idle));

  // A cycle starts: the idle window closes; while it marks, a marking window opens.
  at(s + 1, s, GcPhase::kMarking);
  CHECK_FALSE(no_sweep_window_end(m, idle));
  const std::uint64_t marking = no_sweep_window_begin(m);
  REQUIRE(marking != 0);
  CHECK(marking != idle);
  CHECK(no_sweep_window_end(m, marking));
  int reads = 0;
  CHECK(read_without_sweep(m, [&] { ++reads; }));
  CHECK(reads == 1);

  // Its sweep: the marking window closes and none opens.
  m->gc_phase.store(static_cast<std::uint8_t>(GcPhase::kSweeping));
  CHECK_FALSE(no_sweep_window_end(m, marking));
  CHECK(no_sweep_window_begin(m) == 0);
  CHECK_FALSE(read_without_sweep(m, [&] { ++reads; }));
  CHECK(reads == 1);  // not run while a sweep may free what it would read

  // The cycle ends: the marking window stays closed (gc_started_seq alone would not tell); a new
  // idle window has a token of its own.
  at(s + 1, s + 1, GcPhase::kIdle);
  CHECK_FALSE(no_sweep_window_end(m, marking));
  const std::uint64_t idle2 = no_sweep_window_begin(m);
  CHECK(idle2 != 0);
  CHECK(idle2 != idle);
  CHECK(idle2 != marking);

  // A cycle given up (marking straight back to idle) closes its marking window too, and so does
  // the next cycle's marking.
  at(s + 2, s + 1, GcPhase::kMarking);
  const std::uint64_t marking2 = no_sweep_window_begin(m);
  REQUIRE(marking2 != 0);
  at(s + 2, s + 2, GcPhase::kIdle);
  CHECK_FALSE(no_sweep_window_end(m, marking2));
  at(s + 3, s + 2, GcPhase::kMarking);
  CHECK_FALSE(no_sweep_window_end(m, marking2));
  CHECK(no_sweep_window_end(m, no_sweep_window_begin(m)));

  // A cycle that started but has not stored its phase yet (still idle from the last one): no
  // window, conservatively.
  at(s + 4, s + 3, GcPhase::kIdle);
  CHECK(no_sweep_window_begin(m) == 0);
  at(s + 4, s + 4, GcPhase::kIdle);
}
