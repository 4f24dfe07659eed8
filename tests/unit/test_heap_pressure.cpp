// The allocator's heap-pressure hook (heap.hpp, set_heap_pressure_hook): called once per
// allocation that still fails after two collector cycles, on the allocating thread, without the
// allocator's lock; never when an allocation succeeds (at once or after a cycle), never without a
// collector, never re-entered. A hook that drops references lets the failing allocation succeed.
#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "collector.hpp"
#include "colors/colors.hpp"
#include "heap.hpp"
#include "roots.hpp"
#include "test_segment.hpp"
#include "verifier.hpp"

using namespace colors;
using namespace colors::detail;

namespace {

std::atomic<int> g_calls{0};
std::atomic<int> g_nested{0};           // calls that happened while the hook was running
std::atomic<bool> g_in_hook{false};
std::thread::id g_hook_thread;
Metadata* g_meta = nullptr;
std::size_t g_free_seen = 0;
Object* g_holder = nullptr;              // the hook drops holder.data when set
bool g_allocate_in_hook = false;
bool g_nested_oom = false;

void counting_hook() noexcept {
  if (g_in_hook.exchange(true)) {
    ++g_nested;
    return;
  }
  ++g_calls;
  g_hook_thread = std::this_thread::get_id();
  // heap_lock is not held: heap_usage takes it (it would block forever otherwise).
  if (g_meta != nullptr) g_free_seen = heap_usage(g_meta).free_bytes;
  if (g_holder != nullptr) g_holder->set("data", Value());  // a field store: no root is released
  if (g_allocate_in_hook) {
    try {
      Value big(std::string(1 << 20, 'x'));  // fails too: must not call the hook again
    } catch (const OutOfMemoryError&) {
      g_nested_oom = true;
    }
  }
  g_in_hook = false;
}

struct HookReset {
  HookReset() {
    g_calls = 0;
    g_nested = 0;
    g_meta = nullptr;
    g_holder = nullptr;
    g_allocate_in_hook = false;
    g_nested_oom = false;
    set_heap_pressure_hook(&counting_hook);
  }
  ~HookReset() { set_heap_pressure_hook(nullptr); }
};

gc::Options only_on_demand() {
  gc::Options o;
  o.threads = 1;
  o.threshold_percent = 99;  // cycles only when an allocation finds the heap full
  return o;
}

// Appends 1000-byte binaries to `l` until the heap is full (live data).
void fill(List& l) {
  for (;;) l.append(new_binary(std::vector<std::uint8_t>(1000, 7)));
}

}  // namespace

TEST_CASE("the heap-pressure hook is not called when allocations succeed, also after cycles") {
  test::TestSegment seg(2 << 20);
  Metadata* m = seg.meta();
  HookReset reset;
  gc::Collector c(m, only_on_demand());
  c.start();
  for (int i = 0; i < 100000; ++i) Value s(std::string(100, 'x'));  // ~15 MiB of garbage through 2 MiB
  REQUIRE(gc::last_cycle_stats(m).cycle >= 3);  // the allocator did wait for cycles
  REQUIRE(g_calls == 0);
  c.stop();
}

TEST_CASE("the heap-pressure hook runs once per failing allocation, on its thread, without heap_lock") {
  test::TestSegment seg(2 << 20);
  Metadata* m = seg.meta();
  HookReset reset;
  g_meta = m;
  gc::Collector c(m, only_on_demand());
  c.start();
  List hold = new_list();
  REQUIRE_THROWS_AS(fill(hold), OutOfMemoryError);
  REQUIRE(g_calls == 1);
  REQUIRE(g_hook_thread == std::this_thread::get_id());
  REQUIRE(g_free_seen < (64 << 10));  // it ran when the heap was full
  std::uint64_t cycles = gc::last_cycle_stats(m).cycle;
  // A second failing allocation (a large one this time): one more call, and two more cycles
  // after it (four per failing allocation in all).
  try {
    Value big = new_binary(std::vector<std::uint8_t>(1 << 20, 1));
    FAIL("a 1 MiB binary fit into a full heap");
  } catch (const OutOfMemoryError& e) {
    REQUIRE(std::string(e.what()).find("--heap-size") != std::string::npos);
  }
  REQUIRE(g_calls == 2);
  REQUIRE(gc::last_cycle_stats(m).cycle >= cycles + 4);
  REQUIRE(g_nested == 0);
  c.stop();
  VerifyReport r = verify_heap(m);
  INFO(r.summary());
  REQUIRE(r.ok());
}

TEST_CASE("an allocation inside the heap-pressure hook does not call it again") {
  test::TestSegment seg(2 << 20);
  Metadata* m = seg.meta();
  HookReset reset;
  g_allocate_in_hook = true;
  gc::Collector c(m, only_on_demand());
  c.start();
  List hold = new_list();
  REQUIRE_THROWS_AS(fill(hold), OutOfMemoryError);
  REQUIRE(g_calls == 1);
  REQUIRE(g_nested == 0);
  REQUIRE(g_nested_oom);  // the hook's own allocation failed plainly
  c.stop();
}

TEST_CASE("a heap-pressure hook that drops references lets the failing allocation succeed") {
  test::TestSegment seg(2 << 20);
  Metadata* m = seg.meta();
  Class holder_cls = define_class("t.Holder", {{"data", TypeKind::kAny, ""}});
  Object holder = new_object(holder_cls);
  gc::Collector c(m, only_on_demand());
  c.start();
  {
    List data = new_list();
    holder.set("data", data);
    REQUIRE_THROWS_AS(fill(data), OutOfMemoryError);  // no hook yet: the heap is full of live data
  }
  HookReset reset;
  g_holder = &holder;
  Value after = new_binary(std::vector<std::uint8_t>(1 << 17, 3));  // 128 KiB: fits once data is gone
  REQUIRE(g_calls == 1);
  REQUIRE(holder.get("data").is_null());
  REQUIRE(after.as_bytes().size() == (1u << 17));
  // Allocations go on succeeding without the hook.
  for (int i = 0; i < 100; ++i) Value s(std::string(1000, 'y'));
  REQUIRE(g_calls == 1);
  c.stop();
}

TEST_CASE("the heap-pressure hook is not called when no collector runs") {
  test::TestSegment seg(1 << 20);
  HookReset reset;
  List hold = new_list();
  REQUIRE_THROWS_AS(fill(hold), OutOfMemoryError);
  REQUIRE(g_calls == 0);
}

namespace {
// For the next test: another thread's root traffic that needs roots.cpp's process mutex, run while
// the hook runs. It reports whether it finished within 2 s.
std::atomic<int> g_other_phase{0};  // -1: holds its roots, 1: asked to drop them, 2: done
std::atomic<bool> g_other_done_in_hook{false};

void waiting_hook() noexcept {
  ++g_calls;
  g_other_phase = 1;
  for (int i = 0; i < 2000 && g_other_phase.load() != 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  g_other_done_in_hook = g_other_phase.load() == 2;
}
}  // namespace

TEST_CASE("the hook called while a thread adds a root-table chunk does not hold up other threads' roots") {
  // A root needs a new chunk of the process's root table when no free slot is left; reserving the
  // chunk may fail on a full heap and call the hook. The hook may take long (the JVM's runs a GC),
  // so the reservation must not hold the mutex that other threads need to hand slots back.
  test::TestSegment seg(2 << 20);
  Metadata* m = seg.meta();
  gc::Collector c(m, only_on_demand());
  c.start();
  List hold = new_list();
  hold.append(new_list());
  g_other_phase = 0;
  g_other_done_in_hook = false;
  std::thread other([&] {
    std::vector<Value> mine;
    for (int i = 0; i < 300; ++i) mine.push_back(hold.get(0));  // more than a thread caches
    g_other_phase = -1;
    while (g_other_phase.load() != 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    mine.clear();  // hands slots back to the process: takes the mutex
    g_other_phase = 2;
  });
  // Its roots first: once the heap is full, the root-table chunks they need could not be made.
  while (g_other_phase.load() != -1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  REQUIRE_THROWS_AS(fill(hold), OutOfMemoryError);
  g_calls = 0;
  set_heap_pressure_hook(&waiting_hook);
  std::vector<Value> roots;
  REQUIRE_THROWS_AS([&] { for (;;) roots.push_back(hold.get(0)); }(), OutOfMemoryError);  // until a chunk is needed
  set_heap_pressure_hook(nullptr);
  g_other_phase = 1;  // in case the hook never ran: let the thread finish
  other.join();
  REQUIRE(g_calls >= 1);
  REQUIRE(g_other_done_in_hook);
  roots.clear();
  c.stop();
  VerifyReport r = verify_heap(m);
  INFO(r.summary());
  REQUIRE(r.ok());
}

namespace {
// For the next test: the hook takes the root slot out of g_root_holder (Value::take_root_slot,
// as the bindings' relief does, since the hook may not call root_release) and empties it.
colors::Value* g_root_holder = nullptr;
std::atomic<Word>* g_taken_slot = nullptr;

void root_taking_hook() noexcept {
  ++g_calls;
  g_taken_slot = static_cast<std::atomic<Word>*>(g_root_holder->take_root_slot());
  if (g_taken_slot != nullptr) root_clear(g_taken_slot);  // the deletion barrier, as root_release
}
}  // namespace

TEST_CASE("take_root_slot hands a value's root over: the value is null, the slot holds the object") {
  test::TestSegment seg(1 << 20);
  List l = new_list();
  l.append(Value(1));
  Value v = l;  // a root of its own
  const std::uint64_t w = l.raw();
  void* slot = v.take_root_slot();
  REQUIRE(slot != nullptr);
  REQUIRE(v.is_null());
  REQUIRE(static_cast<std::atomic<Word>*>(slot)->load() == w);
  Value back = Value::adopt_root(w, slot);  // the inverse: the slot is back in a Value
  REQUIRE(back.same_object(l));
  REQUIRE(List(back).size() == 1);
  Value scalar(5);
  REQUIRE(scalar.take_root_slot() == nullptr);  // no root
  REQUIRE(scalar.is_null());
}

TEST_CASE("a hook that takes the only root of a full heap's data out of its value lets the allocation succeed") {
  test::TestSegment seg(2 << 20);
  Metadata* m = seg.meta();
  gc::Collector c(m, only_on_demand());
  c.start();
  Value data;
  {
    List l = new_list();
    REQUIRE_THROWS_AS(fill(l), OutOfMemoryError);
    data = l;  // from here on the only root of the heap's data
  }
  HookReset reset;
  g_root_holder = &data;
  g_taken_slot = nullptr;
  set_heap_pressure_hook(&root_taking_hook);
  Value after = new_binary(std::vector<std::uint8_t>(1 << 17, 3));  // fits once the data is freed
  REQUIRE(g_calls == 1);
  REQUIRE(g_taken_slot != nullptr);
  REQUIRE(data.is_null());
  REQUIRE(after.as_bytes().size() == (1u << 17));
  root_release(g_taken_slot);  // the emptied slot goes back (a binding keeps it as a spare)
  g_root_holder = nullptr;
  c.stop();
}
