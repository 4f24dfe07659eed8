// Read scopes (libshared/src/read_scope.hpp, gc/README.md "Read scopes"): references read through
// views inside a scope are not rooted, so the collector must not free what a scope that began
// before its cycle may hold, and a reference promoted out of such a scope must be kept. The
// collector poisons freed memory here, so a freed object read through a view shows up as a wrong
// value, not as a silent pass.
#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "collector.hpp"
#include "collector_barrier.hpp"
#include "colors/colors.hpp"
#include "heap.hpp"
#include "layout.hpp"
#include "objects.hpp"
#include "read_scope.hpp"
#include "test_segment.hpp"
#include "verifier.hpp"

using namespace colors;
using namespace colors::detail;
using namespace std::chrono_literals;

namespace {

gc::Options poisoning() {
  gc::Options o;
  o.threads = 2;
  o.poison = true;
  return o;
}

// Roots without a fence, as a client of a server with the collector barrier takes them: dropping
// a root outside marking then flags nothing, which is what leaves a borrowed object unflagged.
struct UnfencedRoots {
  explicit UnfencedRoots(Metadata* m) {
    m->collector_barrier.store(1, std::memory_order_release);
    REQUIRE(use_collector_barrier(m));  // membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) is required
  }
  ~UnfencedRoots() { stop_using_collector_barrier(); }
};

// Cycles run on another thread (the scope's own thread cannot wait for them).
class CyclesInBackground {
 public:
  CyclesInBackground(gc::Collector& c, int n) : t_([this, &c, n] {
    for (int i = 0; i < n; ++i) {
      freed_ += c.run_cycle().objects_freed;
      done_.fetch_add(1, std::memory_order_release);
    }
  }) {}
  ~CyclesInBackground() { join(); }
  int done() const { return done_.load(std::memory_order_acquire); }
  std::uint64_t join() {
    if (t_.joinable()) t_.join();
    return freed_;
  }

 private:
  std::atomic<int> done_{0};
  std::uint64_t freed_ = 0;
  std::thread t_;
};

template <class Pred>
bool eventually(Pred pred, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

Class node_class() {
  return define_class("t.ScopeNode", {{"v", TypeKind::kInteger, ""}, {"s", TypeKind::kString, ""}, {"next", TypeKind::kAny, ""}});
}

Object node(const Class& cls, std::int64_t v, const std::string& s) {
  Object o = new_object(cls);
  o.set("v", Value(v));
  o.set("s", Value(s));
  return o;
}

void require_heap_verifies(Metadata* m) {
  VerifyReport r = verify_heap(m);
  INFO(r.summary());
  REQUIRE(r.ok());
}

// What each case of a cycle racing a scope starts from: a segment whose roots are taken without a
// fence, a poisoning collector run by hand, and the node class with its fields.
struct ScopeAndCycles {
  explicit ScopeAndCycles(gc::Options o = poisoning()) : unfenced(seg.meta()), c(seg.meta(), o) {}
  // Cycles after the scope (what it kept and let go is freed by one of these); their frees.
  std::uint64_t settle(int cycles = 2) {
    std::uint64_t freed = 0;
    for (int i = 0; i < cycles; ++i) freed += c.run_cycle().objects_freed;
    return freed;
  }
  void verify() { require_heap_verifies(seg.meta()); }

  test::TestSegment seg{16 << 20};
  UnfencedRoots unfenced;
  gc::Collector c;
  Class cls = node_class();
  Field v{cls, "v"}, s{cls, "s"}, next{cls, "next"};
};

// The same with a collector that waits at most 100 ms for a scope.
gc::Options short_scope_wait() {
  gc::Options o = poisoning();
  o.read_scope_wait_ms = 100;
  return o;
}
struct ShortScopeWait : ScopeAndCycles {
  ShortScopeWait() : ScopeAndCycles(short_scope_wait()) {}
};

}  // namespace

TEST_CASE("views read what the rooted API reads: fields, strings, references, lists, nested scopes") {
  test::TestSegment seg(8 << 20);
  Class cls = node_class();
  Field v(cls, "v"), s(cls, "s"), next(cls, "next");
  Object a = node(cls, 1, "a");
  Object b = node(cls, -(std::int64_t{1} << 61), "b");  // a boxed integer
  a.set(next, b);
  List l = new_list();
  for (int i = 0; i < 5; ++i) l.append(Value(i * 10));
  l.append(a);
  b.set(next, l);

  ReadScope scope;
  REQUIRE(ReadScope::active());
  ObjectView av(a);
  REQUIRE(av.get(v).as_int() == 1);
  REQUIRE(av.get("s").string_view() == "a");
  ObjectView bv = av.get(next).as_object();
  REQUIRE(bv.same_object(ValueView(b)));
  REQUIRE(bv.get(v).as_int() == -(std::int64_t{1} << 61));
  {
    ReadScope inner;
    ListView lv = bv.get(next).as_list();
    REQUIRE(lv.size() == 6);
    REQUIRE(lv[3].as_int() == 30);
    REQUIRE(lv.get(5).as_object().get(s).string_view() == "a");
    REQUIRE_THROWS_AS(lv.get(6), IndexError);
  }
  REQUIRE(ReadScope::active());  // the inner scope's end does not end the outer one
  REQUIRE(bv.get(s).string_view() == "b");
  REQUIRE_THROWS_AS(av.get(v).as_list(), TypeMismatchError);
  REQUIRE_THROWS_AS(av.get(s).as_int(), TypeMismatchError);
  REQUIRE_THROWS_AS(av.get(s).as_object(), TypeMismatchError);
  REQUIRE_THROWS_AS(av.get("missing"), KeyError);
  Object promoted = av.get(next).as_object().promote();
  REQUIRE(promoted.same_object(b));
  REQUIRE(av.get(v).promote().as_int() == 1);
}

TEST_CASE("typed view getters read what get() and the conversions read, in one call") {
  test::TestSegment seg(8 << 20);
  Class cls = define_class("t.TypedNode", {{"i", TypeKind::kInteger, ""},
                                           {"f", TypeKind::kFloat, ""},
                                           {"b", TypeKind::kBoolean, ""},
                                           {"s", TypeKind::kString, ""},
                                           {"o", TypeKind::kObject, "t.TypedNode"},
                                           {"any", TypeKind::kAny, ""}});
  Field i(cls, "i"), f(cls, "f"), b(cls, "b"), s(cls, "s"), o(cls, "o"), any(cls, "any");
  Object a = new_object(cls);
  Object c = new_object(cls);
  a.set(i, Value(std::int64_t{1} << 61));  // a boxed integer
  a.set(f, Value(2.5));
  a.set(b, Value(true));
  a.set(s, Value("a string \u00e9"));
  a.set(o, c);
  a.set(any, Value(7));
  c.set(i, Value(3));
  c.set(f, Value(1e300));  // a boxed float
  {
    ReadScope scope;
    ObjectView av(a), cv(c);
    REQUIRE(av.get_int(i) == av.get(i).as_int());
    REQUIRE(cv.get_int(i) == 3);
    REQUIRE(av.get_float(f) == 2.5);
    REQUIRE(cv.get_float(f) == 1e300);
    REQUIRE(av.get_float(any) == 7.0);  // an integer read as a float, as as_float()
    REQUIRE(av.get_bool(b));
    REQUIRE(av.get_string(s) == "a string \u00e9");
    REQUIRE(av.get_object(o).same_object(ValueView(c)));
    REQUIRE(cv.get_object(o).is_null());  // null: a null view, not an error
    // Reading through that null view (or a default one) is an error, not a crash.
    REQUIRE_THROWS_AS(cv.get_object(o).get_int(i), InvalidArgumentError);
    REQUIRE_THROWS_AS(ObjectView().get(s), InvalidArgumentError);
    REQUIRE_THROWS_AS(ObjectView().get("s"), InvalidArgumentError);
    REQUIRE_THROWS_AS(ObjectView().cls(), InvalidArgumentError);
    REQUIRE_THROWS_AS(ObjectView().set(s, ValueView()), InvalidArgumentError);
    REQUIRE_THROWS_AS(av.get_int(s), TypeMismatchError);
    REQUIRE_THROWS_AS(av.get_string(i), TypeMismatchError);
    REQUIRE_THROWS_AS(av.get_bool(any), TypeMismatchError);
    REQUIRE_THROWS_AS(av.get_float(b), TypeMismatchError);
    REQUIRE_THROWS_AS(av.get_object(any), TypeMismatchError);
  }
  // An object of another version of the class: the fields are found by name.
  a.add_field(FieldSpec{"extra", TypeKind::kInteger, ""});
  {
    ReadScope scope;
    ObjectView av(a);
    REQUIRE(av.get_int(i) == std::int64_t{1} << 61);
    REQUIRE(av.get_string(s) == "a string \u00e9");
    REQUIRE(av.get_object(o).get_int(i) == 3);
  }
  REQUIRE_THROWS_AS(ObjectView(a).get_int(i), InvalidArgumentError);  // outside a scope
}

TEST_CASE("views outside a scope, and waits for the collector inside one, are refused with errors") {
  test::TestSegment seg(8 << 20);
  Class cls = node_class();
  Object a = node(cls, 5, "x");
  ObjectView av(a);
  REQUIRE_FALSE(ReadScope::active());
  REQUIRE_THROWS_AS(av.get("v"), InvalidArgumentError);
  REQUIRE_THROWS_AS(ValueView(a).kind(), InvalidArgumentError);
  REQUIRE_THROWS_AS(ListView(new_list()).size(), InvalidArgumentError);
  {
    ReadScope scope;
    REQUIRE(av.get("v").as_int() == 5);
    // The cycle would wait for this scope: refused rather than a hang.
    REQUIRE_THROWS_AS(request_gc_and_wait(seg.meta(), 1'000'000), InvalidArgumentError);
    REQUIRE_THROWS_AS(Transaction(), InvalidArgumentError);
    // A full heap: the allocation cannot wait for a cycle either, and says why.
    try {
      for (;;) new_string_view(std::string(4000, 'x'));
    } catch (const OutOfMemoryError& e) {
      REQUIRE(std::string(e.what()).find("inside a read scope") != std::string::npos);
    }
    REQUIRE(av.get("v").as_int() == 5);  // still inside, still usable
  }
  REQUIRE_THROWS_AS(av.get("v"), InvalidArgumentError);
  {
    Transaction tx;
    REQUIRE_THROWS_AS(ReadScope(), InvalidArgumentError);
    REQUIRE_FALSE(ReadScope::active());
    tx.commit();
  }
  ReadScope after;  // nothing was left half-entered
  REQUIRE(av.get("v").as_int() == 5);
}

// The scope borrows b through a; b is then unlinked and its only root dropped while no cycle
// marks, so nothing flags it. A first cycle would mark it anyway (it was reachable at the
// snapshot) and a second would free it: neither may finish while the scope is open.
TEST_CASE_METHOD(ScopeAndCycles, "no cycle that began during a read scope frees what the scope borrowed before it ends") {
  Object a = node(cls, 1, "a");
  a.set(next, node(cls, 42, "borrowed"));

  std::optional<ReadScope> scope(std::in_place);
  ObjectView b = ObjectView(a).get(next).as_object();
  a.set(next, Value());  // b is garbage from here
  CyclesInBackground cycles(c, 2);
  std::this_thread::sleep_for(300ms);
  REQUIRE(cycles.done() == 0);  // the first cycle waits for this scope
  REQUIRE(b.get(v).as_int() == 42);
  REQUIRE(b.get(s).string_view() == "borrowed");
  scope.reset();  // the cycles may finish now
  std::uint64_t total = cycles.join();
  // b (and its string) is freed by the second of those cycles or one of the next.
  total += settle();
  REQUIRE(total >= 2);
  verify();
}

// The borrowed object's only root was dropped outside marking (no flag), so the cycle's root pass
// cannot find it; promoting it while that cycle waits for the scope must flag it, or the sweep
// frees an object a root holds.
TEST_CASE_METHOD(ScopeAndCycles, "a reference promoted out of a scope that a cycle waits for survives the cycle") {
  Object kept;
  std::optional<ReadScope> scope(std::in_place);
  ObjectView b;
  {
    Object only_root = node(cls, 7, "promoted");
    b = ObjectView(only_root);
  }  // dropped while no cycle marks: unflagged garbage from here
  CyclesInBackground cycle(c, 1);
  std::this_thread::sleep_for(100ms);  // the cycle has flipped and waits for this scope
  REQUIRE(cycle.done() == 0);
  REQUIRE(seg.meta()->gc_phase.load() == static_cast<std::uint8_t>(GcPhase::kMarking));
  // promote(), or Value::from_raw of the view's word (a binding's way), which must flag as well.
  const bool via_raw = GENERATE(false, true);
  kept = via_raw ? Object(Value::from_raw(b.raw())) : b.promote();
  scope.reset();  // the cycle finishes: its pending passes run after the wait
  cycle.join();
  settle();
  REQUIRE(kept.get(v).as_int() == 7);
  REQUIRE(kept.get(s).as_string() == "promoted");
  verify();
}

// A detach while a thread is inside a scope: the server empties the client's table, whose memory
// a later cycle may reuse, so the scope's exit must not write its word there.
TEST_CASE("leaving a scope after the process detached does not write the released scope word") {
  test::TestSegment seg(8 << 20);
  std::optional<ReadScope> scope(std::in_place);
  std::atomic<Word>* word = t_read_scope.slot;
  REQUIRE(word != nullptr);
  REQUIRE(is_active_scope_word(word->load()));
  roots_forget_process_state();  // what detach() does to this process's root state
  word->store(kNull);            // what the server does to a detached client's table
  scope.reset();
  REQUIRE(word->load() == kNull);
  ReadScope again;  // a new attachment's first scope takes a new word
  REQUIRE(t_read_scope.slot != nullptr);
  REQUIRE(is_active_scope_word(t_read_scope.slot->load()));
}

// A scope left open across a detach (or a fork) no longer counts; one entered inside it after
// the new attach is a scope of the new attachment, with a word of its own, and views work in it.
TEST_CASE("a scope entered inside one that outlived its attachment is a scope of the new attachment") {
  test::TestSegment seg(8 << 20);
  std::optional<ReadScope> stale(std::in_place);
  std::atomic<Word>* old_word = t_read_scope.slot;
  roots_forget_process_state();  // what detach() does to this process's root state
  old_word->store(kNull);        // what the server does to a detached client's table
  REQUIRE_FALSE(ReadScope::active());
  const Class cls = node_class();
  const Field v(cls, "v");
  Object o = node(cls, 5, "five");
  for (int round = 0; round < 2; ++round) {  // twice: the second reuses the new word
    ReadScope inner;
    REQUIRE(ReadScope::active());
    REQUIRE(is_active_scope_word(t_read_scope.slot->load()));
    REQUIRE(ObjectView(o).get(v).as_int() == 5);
    {
      ReadScope nested;
      REQUIRE(ObjectView(o).get(v).as_int() == 5);
    }
    REQUIRE(ReadScope::active());
    REQUIRE(is_active_scope_word(t_read_scope.slot->load()));
  }
  REQUIRE_FALSE(ReadScope::active());  // only the stale level is left
  REQUIRE_FALSE(is_active_scope_word(t_read_scope.slot->load()));
  REQUIRE_THROWS_AS(ObjectView(o).get(v), InvalidArgumentError);
  stale.reset();
  REQUIRE(t_read_scope.depth == 0);
  REQUIRE(t_read_scope.base == 0);
  REQUIRE(old_word->load() == kNull);  // the ended attachment's word was never written again
  ReadScope after;
  REQUIRE(ReadScope::active());
  REQUIRE(is_active_scope_word(t_read_scope.slot->load()));
}

// A scope open longer than the collector's bound: the cycle is given up (nothing freed, waiters
// answered), and what the scope borrowed is still there; after the scope, cycles free it.
TEST_CASE_METHOD(ShortScopeWait, "a read scope open past the collector's bound makes the cycle give up, freeing nothing") {
  Object a = node(cls, 1, "a");
  a.set(next, node(cls, 9, "borrowed"));
  std::optional<ReadScope> scope(std::in_place);
  ObjectView b = ObjectView(a).get(next).as_object();
  a.set(next, Value());
  CyclesInBackground cycles(c, 2);
  REQUIRE(eventually([&] { return cycles.done() == 2; }, 5000));  // given up, not hung
  REQUIRE(cycles.join() == 0);
  REQUIRE(b.get(v).as_int() == 9);
  REQUIRE(seg.meta()->gc_phase.load() == static_cast<std::uint8_t>(GcPhase::kIdle));
  scope.reset();
  REQUIRE(settle() >= 2);
}

// The hazard the bound exists for: a thread inside a scope waits for a monitor whose holder waits
// (without a timeout) for a collector cycle, and the cycle waits for the scope. The cycle is given
// up, the holder's wait ends and it releases the monitor, and the scope's thread goes on.
TEST_CASE("a scope waiting for a monitor whose holder waits for the collector does not deadlock") {
  test::TestSegment seg(8 << 20);
  gc::Options o = poisoning();
  o.read_scope_wait_ms = 100;
  gc::Collector c(seg.meta(), o);
  c.start();
  Object guarded = node(node_class(), 3, "guarded");
  std::atomic<bool> held{false}, reader_in{false}, holder_done{false}, reader_done{false};
  std::thread holder([&] {
    Monitor mon(guarded);
    held = true;
    while (!reader_in.load()) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(20ms);                         // the reader now waits for the monitor
    request_gc_and_wait(seg.meta(), -1);                        // no timeout: only a cycle ends it
    holder_done = true;
  });
  std::thread reader([&] {
    while (!held.load()) std::this_thread::sleep_for(1ms);
    ReadScope scope;
    reader_in = true;
    Monitor mon(guarded);  // waits for the holder
    reader_done = true;
  });
  const bool ended = eventually([&] { return holder_done.load() && reader_done.load(); }, 30000);
  if (!ended) {
    std::fprintf(stderr, "deadlock: holder %d, reader %d\n", int(holder_done.load()), int(reader_done.load()));
    std::_Exit(1);  // the threads cannot be joined
  }
  holder.join();
  reader.join();
  c.stop();
}

// A heap whose collector runs a cycle only when asked, so that garbage stays until then, and waits
// at most 200 ms for a read scope: a container's growth there waits for a cycle.
struct GrowthInFullHeap {
  static gc::Options options() {
    gc::Options o = poisoning();
    o.read_scope_wait_ms = 200;
    o.threshold_percent = 100;
    o.pacing_percent = 0;
    return o;
  }
  GrowthInFullHeap() : c(seg.meta(), options()) {}

  // Garbage until no free block holds `bytes` (only a cycle makes room for them), then the
  // collector starts.
  void fill_then_start(std::size_t bytes) {
    for (int i = 0; i < 10000 && heap_usage(seg.meta()).largest_free >= bytes; ++i) new_binary(nullptr, 64 << 10);
    REQUIRE(heap_usage(seg.meta()).largest_free < bytes);
    cycles_before = seg.meta()->gc_done_seq.load();
    c.start();
  }

  // Runs `grow` here while another thread, inside a read scope opened before it began, runs `read`
  // 50 ms later (when `grow` waits for a cycle, which waits for that scope); `read_us` gets how
  // long `read` took. Returns what `grow` threw, or "".
  template <class Grow, class Read>
  std::string grow_while_a_scope_reads(Grow&& grow, Read&& read) {
    std::atomic<bool> in_scope{false}, growing{false};
    std::thread reader([&] {
      ReadScope scope;
      in_scope = true;
      while (!growing.load()) std::this_thread::sleep_for(1ms);
      std::this_thread::sleep_for(50ms);
      const auto t0 = std::chrono::steady_clock::now();
      read();
      read_us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
    });
    while (!in_scope.load()) std::this_thread::sleep_for(1ms);
    growing = true;
    std::string error;
    try {
      grow();  // waits for the cycle, which frees the garbage once the reader has left its scope
    } catch (const Error& e) {
      error = e.what();
    }
    reader.join();
    c.stop();
    return error;
  }
  bool a_cycle_ran() const { return seg.meta()->gc_done_seq.load() != cycles_before; }

  test::TestSegment seg{24 << 20};
  gc::Collector c;
  std::uint32_t cycles_before = 0;
  std::atomic<long long> read_us{-1};
};

// A list that must grow allocates its new array before it takes the list's lock. In a full heap
// that allocation waits for a collector cycle, which waits for the read scopes open at its flip;
// a thread in such a scope reading the list (ListView::read, whose seqlock reads fail while a
// writer holds the lock, then take the lock) must not wait for the writer, who waits for the
// cycle, until the cycle is given up.
TEST_CASE_METHOD(GrowthInFullHeap, "a read scope reading a list whose growth waits for the collector is not held up") {
  constexpr std::size_t kFull = 1 << 17;  // its growth needs a 2 MiB array
  List l = new_list(kFull);
  for (std::size_t i = 0; i < kFull; ++i) l.append(Value(static_cast<long long>(i)));
  fill_then_start(2 * kFull * sizeof(Word));
  std::atomic<long long> read_count{-1}, fourth{-1};
  const std::string error = grow_while_a_scope_reads([&] { l.append(Value(-1)); }, [&] {
    ValueView out[4];
    read_count = static_cast<long long>(ListView(l).read(0, out, 4));
    fourth = out[3].as_int();
  });
  INFO("the reader's read took " << read_us.load() << " us; the append: " << error);
  REQUIRE(a_cycle_ran());  // the append did wait for a cycle
  REQUIRE(read_count.load() == 4);
  REQUIRE(fourth.load() == 3);
  REQUIRE(read_us.load() < 20000);  // not the collector's 200 ms bound
  REQUIRE(error.empty());
  REQUIRE(l.size() == kFull + 1);
  REQUIRE(l.get(kFull).as_int() == -1);
}

// The same for a map: a put that must rehash lets the map's lock go to allocate its new table, so
// a thread in a read scope reading the map through the rooted API goes on.
TEST_CASE_METHOD(GrowthInFullHeap, "a read scope reading a map whose growth waits for the collector is not held up") {
  Map map = new_map();
  const auto* ho = reinterpret_cast<const HashObject*>(map.raw());
  auto table = [ho] { return reinterpret_cast<const TableObject*>(ho->table.load()); };
  // Filled until the next new key makes the table rehash, into one of a few MiB.
  long long n = 0;
  while (n < 20000 || (table()->used.load() + 1) * 4 <= table()->capacity * 3) map.put(Value(n), Value(n)), ++n;
  fill_then_start(16 + table_entries_for((map.size() + 1) * 2) * sizeof(TableEntry));
  std::atomic<long long> got{-1};
  const std::string error = grow_while_a_scope_reads([&] { map.put(Value(-1), Value(-1)); }, [&] {
    std::optional<Value> v = map.get(Value(7));
    got = v ? v->as_int() : -2;
  });
  INFO("the reader's get took " << read_us.load() << " us; the put: " << error);
  REQUIRE(a_cycle_ran());  // the put did wait for a cycle
  REQUIRE(got.load() == 7);
  REQUIRE(read_us.load() < 20000);
  REQUIRE(error.empty());
  REQUIRE(map.size() == static_cast<std::size_t>(n) + 1);
}

// ---- allocation in a scope ----

TEST_CASE("objects allocated in a scope: fields written at birth, set, promoted, checked like the rooted API") {
  test::TestSegment seg(8 << 20);
  Class cls = node_class();
  Field v(cls, "v"), s(cls, "s"), next(cls, "next");
  REQUIRE_THROWS_AS(new_string_view("x"), InvalidArgumentError);  // outside a scope
  REQUIRE(ValueView::integer(5).raw() == Value(5).raw());          // a small integer needs none
  Object holder = node(cls, 0, "holder");
  {
    ReadScope scope;
    ObjectView leaf = new_object_view(cls, {{v, ValueView::integer(1)}, {s, new_string_view("leaf")}});
    ObjectView top = new_object_view(cls, {{v, ValueView::integer(std::int64_t{1} << 62)}, {next, leaf}});
    REQUIRE(top.get(next).as_object().get(s).string_view() == "leaf");
    REQUIRE(top.get(v).as_int() == std::int64_t{1} << 62);  // boxed, allocated in the scope
    REQUIRE(top.get(s).is_null());
    ObjectView(holder).set(next, top);
    ObjectView(holder).set(s, new_string_view("changed"));
    ObjectView boxed = new_object_view(cls, {{next, ValueView::floating(1e300)}});  // boxed: allocated
    REQUIRE(boxed.get(next).as_float() == 1e300);
    REQUIRE(new_object_view(cls, {{next, ValueView::floating(0.5)}}).get(next).as_float() == 0.5);
    REQUIRE_THROWS_AS(new_object_view(cls, {{v, new_string_view("not an int")}}), TypeMismatchError);
    REQUIRE_THROWS_AS(ObjectView(holder).set(v, new_string_view("no")), TypeMismatchError);
    REQUIRE_THROWS_AS(new_string_view(std::string_view("\xff", 1)), InvalidArgumentError);
    Class other = define_class("t.ScopeOther", {{"w", TypeKind::kInteger, ""}});
    REQUIRE_THROWS_AS(new_object_view(other, {{v, ValueView::integer(1)}}), KeyError);
  }
  Object top = Object(holder.get(next));
  REQUIRE(Object(top.get(next)).get(s).as_string() == "leaf");
  REQUIRE(holder.get(s).as_string() == "changed");
  REQUIRE_THROWS_AS(ObjectView(holder).set(v, ValueView::integer(1)), InvalidArgumentError);  // outside
}

// x is allocated in the scope before a cycle's flip, without a root, and stored into a published
// object only after that cycle's root pass: only the store's flag gets it marked.
TEST_CASE_METHOD(ScopeAndCycles, "an object allocated in a scope and stored after a cycle's root pass survives the cycle") {
  Object holder = node(cls, 0, "holder");
  std::optional<ReadScope> scope(std::in_place);
  ObjectView x = new_object_view(cls, {{v, ValueView::integer(11)}, {s, new_string_view("stored late")}});
  CyclesInBackground cycle(c, 1);
  std::this_thread::sleep_for(100ms);  // flipped, root pass done, waiting for this scope
  REQUIRE(cycle.done() == 0);
  ObjectView(holder).set(next, x);
  scope.reset();
  cycle.join();
  settle();
  Object got = Object(holder.get(next));
  REQUIRE(got.get(v).as_int() == 11);
  REQUIRE(got.get(s).as_string() == "stored late");
  verify();
}

// x is allocated before a cycle's flip, y after it (so y is recent, and that cycle's pending passes
// do not trace it) holding x: y's birth must flag x.
TEST_CASE_METHOD(ScopeAndCycles, "an object allocated in a scope before a cycle, held only by one born during it, survives") {
  Object holder = node(cls, 0, "holder");
  std::optional<ReadScope> scope(std::in_place);
  ObjectView x = new_object_view(cls, {{v, ValueView::integer(21)}, {s, new_string_view("old, unrooted")}});
  CyclesInBackground cycle(c, 1);
  std::this_thread::sleep_for(100ms);
  REQUIRE(cycle.done() == 0);
  ObjectView y = new_object_view(cls, {{v, ValueView::integer(22)}, {next, x}});
  ObjectView(holder).set(next, y);
  scope.reset();
  cycle.join();
  settle();
  Object got = Object(Object(holder.get(next)).get(next));
  REQUIRE(got.get(v).as_int() == 21);
  REQUIRE(got.get(s).as_string() == "old, unrooted");
  verify();
}

// ---- lists allocated in a scope, and copy_to ----

TEST_CASE("lists allocated in a scope hold their items in order and, kept, are lists like any") {
  test::TestSegment seg(8 << 20);
  Class cls = node_class();
  Field v(cls, "v"), s(cls, "s"), next(cls, "next");
  REQUIRE_THROWS_AS(new_list_view({}), InvalidArgumentError);  // outside a scope
  Object holder = node(cls, 0, "holder");
  Value held(std::string("held by a Value"));
  std::vector<ValueView> many;
  {
    ReadScope scope;
    ObjectView leaf = new_object_view(cls, {{v, ValueView::integer(3)}});
    ListView inner = new_list_view({ValueView::floating(0.25), ValueView::boolean(true)});
    ListView l = new_list_view({ValueView::integer(1), new_string_view("two"), inner, leaf, ValueView(),
                                ValueView::integer(std::int64_t{1} << 62), ValueView(held)});
    REQUIRE(l.size() == 7);
    REQUIRE(l.get(0).as_int() == 1);
    REQUIRE(l.get(1).string_view() == "two");
    REQUIRE(l.get(2).as_list().get(0).as_float() == 0.25);
    REQUIRE(l.get(2).as_list().get(1).as_bool());
    REQUIRE(l.get(3).as_object().get(v).as_int() == 3);
    REQUIRE(l.get(4).is_null());
    REQUIRE(l.get(5).as_int() == std::int64_t{1} << 62);
    REQUIRE(l.get(6).string_view() == "held by a Value");
    REQUIRE(new_list_view({}).size() == 0);
    for (int i = 0; i < 100; ++i) many.push_back(ValueView::integer(i));  // more than the stack buffer
    ObjectView(holder).set(next, new_list_view(many));
    ObjectView(holder).set(s, new_string_view("set"));
    REQUIRE_THROWS_AS(ObjectView(holder).set(v, new_list_view({})), TypeMismatchError);
    holder.set("v", Value(7));
    ObjectView(holder).set(next, l);
  }
  List l(holder.get(next));
  REQUIRE(l.size() == 7);
  REQUIRE(List(l.get(2)).get(0).as_float() == 0.25);
  REQUIRE(Object(l.get(3)).get(v).as_int() == 3);
  l.append(Value(8));  // grows past the capacity it was born with
  REQUIRE(l.size() == 8);
  REQUIRE(l.get(7).as_int() == 8);
  l.set(0, Value("first"));
  REQUIRE(l.get(0).as_string() == "first");
  require_heap_verifies(seg.meta());
}

// x is allocated before a cycle's flip; the list born after it is recent, so that cycle's pending
// passes do not trace it or its array: the list's birth must flag x.
TEST_CASE_METHOD(ScopeAndCycles, "an object allocated in a scope before a cycle, held only by a list born during it, survives") {
  Object holder = node(cls, 0, "holder");
  std::optional<ReadScope> scope(std::in_place);
  ObjectView x = new_object_view(cls, {{v, ValueView::integer(31)}, {s, new_string_view("in a new list")}});
  CyclesInBackground cycle(c, 1);
  std::this_thread::sleep_for(100ms);
  REQUIRE(cycle.done() == 0);
  ListView l = new_list_view({ValueView::integer(1), x});
  ObjectView(holder).set(next, l);
  scope.reset();
  cycle.join();
  settle();
  Object got = Object(List(holder.get(next)).get(1));
  REQUIRE(got.get(v).as_int() == 31);
  REQUIRE(got.get(s).as_string() == "in a new list");
  verify();
}

// A type convertible to a string by a user-defined conversion: copy_to copies it rooted.
struct Named {
  operator std::string_view() const { return "named"; }
};

TEST_CASE("copy_to builds vectors, sets and maps inside a read scope, with the rooted copy's values") {
  test::TestSegment seg(8 << 20);
  Value kept(std::string("a Value"));
  std::vector<std::vector<std::string>> words{{"a", "bc"}, {}, {"déjà vu"}};
  List w(copy_to(words));
  REQUIRE(w.size() == 3);
  REQUIRE(List(w.get(0)).get(1).as_string() == "bc");
  REQUIRE(List(w.get(1)).size() == 0);
  REQUIRE(List(w.get(2)).get(0).as_string() == "déjà vu");
  List n(copy_to(std::vector<double>{0.5, 1e300, -0.0}));
  REQUIRE(n.get(1).as_float() == 1e300);
  REQUIRE(std::signbit(n.get(2).as_float()));
  List big(copy_to(std::vector<std::uint64_t>{1, std::uint64_t{1} << 62}));
  REQUIRE(big.get(1).as_int() == std::int64_t{1} << 62);
  REQUIRE_THROWS_AS(copy_to(std::vector<std::uint64_t>{~std::uint64_t{0}}), OverflowError);
  List b(copy_to(std::vector<bool>{true, false}));
  REQUIRE_FALSE(b.get(1).as_bool());
  List vals(copy_to(std::vector<Value>{kept, Value(), Value(5)}));
  REQUIRE(vals.get(0).same_object(kept));
  REQUIRE(vals.get(1).is_null());
  REQUIRE_FALSE(ReadScope::active());  // the copy's scope ended
  {
    Transaction tx;  // no scope inside a transaction: the rooted copy
    List t(copy_to(std::vector<std::string>{"in", "tx"}));
    REQUIRE(t.get(1).as_string() == "tx");
    tx.commit();
  }
  {
    ReadScope outer;  // inside a scope the copy nests in it
    List o(copy_to(std::vector<long long>{4, 5}));
    REQUIRE(o.get(1).as_int() == 5);
  }
  // Past the bound, and vectors of sets: rooted, the same values.
  std::vector<long long> large(detail::kScopedCopyMax + 10, 7);
  REQUIRE(detail::scoped_copy_objects(large) > detail::kScopedCopyMax);
  REQUIRE(List(copy_to(large)).get(detail::kScopedCopyMax + 9).as_int() == 7);
  STATIC_REQUIRE(detail::scoped_copyable<std::vector<std::vector<std::string>>>::value);
  STATIC_REQUIRE(detail::scoped_copyable<std::vector<Object>>::value);
  STATIC_REQUIRE(detail::scoped_copyable<std::map<std::string, std::vector<std::set<long long>>>>::value);
  STATIC_REQUIRE_FALSE(detail::scoped_copyable<std::vector<Named>>::value);  // its conversion is user code
  REQUIRE(List(copy_to(std::vector<Named>{Named{}})).get(0).as_string() == "named");
  List sets(copy_to(std::vector<std::set<long long>>{{1, 2}}));
  REQUIRE(Set(sets.get(0)).contains(Value(2)));
  // Sets and maps: as adds and puts in their order leave them.
  Set ss(copy_to(std::set<std::string>{"x", "y"}));
  REQUIRE(ss.size() == 2);
  REQUIRE(ss.contains(Value("y")));
  Map mm(copy_to(std::map<std::string, std::vector<double>>{{"a", {0.5}}, {"b", {}}}));
  REQUIRE(mm.size() == 2);
  REQUIRE(List(*mm.get(Value("a"))).get(0).as_float() == 0.5);
  REQUIRE(List(*mm.get(Value("b"))).size() == 0);
  Map boxed(copy_to(std::map<long long, std::uint64_t>{{std::int64_t{1} << 62, 1}, {-1, std::uint64_t{1} << 61}}));
  REQUIRE(boxed.get(Value(std::int64_t{1} << 62))->as_int() == 1);
  REQUIRE_THROWS_AS(copy_to(std::map<int, std::uint64_t>{{1, ~std::uint64_t{0}}}), OverflowError);
  REQUIRE(Set(copy_to(std::set<long long>{})).size() == 0);
  {
    ReadScope scope;
    REQUIRE_THROWS_AS(new_map_view(std::vector<ValueView>{ValueView::integer(1)}, {}), InvalidArgumentError);
  }
  REQUIRE_THROWS_AS(new_set_view({}), InvalidArgumentError);  // outside a scope
  require_heap_verifies(seg.meta());
}

// A scope cannot wait for the collector, so in a heap that only a cycle makes room in, the scoped
// copy fails; copy_to then copies outside the scope, rooted, and that allocation waits for a cycle.
TEST_CASE_METHOD(GrowthInFullHeap, "copy_to in a heap only a cycle makes room in falls back to the rooted copy") {
  std::vector<long long> src(60000);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<long long>(i);
  REQUIRE(detail::scoped_copy_objects(src) <= detail::kScopedCopyMax);
  fill_then_start((src.size() + 2) * sizeof(Word));
  {
    ReadScope scope;
    REQUIRE_THROWS_AS(detail::copy_in_scope(src), OutOfMemoryError);
  }
  REQUIRE_FALSE(a_cycle_ran());
  List l(copy_to(src));
  REQUIRE(a_cycle_ran());
  REQUIRE(l.size() == src.size());
  REQUIRE(l.get(59999).as_int() == 59999);
  c.stop();
}

TEST_CASE("sets and maps built in a scope hold what puts in the same order leave") {
  test::TestSegment seg(8 << 20);
  Map m;
  Set st;
  {
    ReadScope scope;
    const Word a1 = new_string_view("a").raw(), a2 = new_string_view("a").raw();
    const Word keys[] = {make_small(1), a1, make_small(1), kNull, a2};
    const Word values[] = {make_small(10), make_small(20), make_small(30), make_small(40), make_small(50)};
    const Word mw = new_hash_scoped(seg.meta(), TypeKind::kMap, keys, values, 5);
    m = Map(Value::from_raw(mw));
    const Word sw = new_hash_scoped(seg.meta(), TypeKind::kSet, keys, nullptr, 5);
    st = Set(Value::from_raw(sw));
    REQUIRE(new_hash_scoped(seg.meta(), TypeKind::kMap, nullptr, nullptr, 0) != kNull);  // an empty map
    REQUIRE_THROWS_AS(new_hash_scoped(seg.meta(), TypeKind::kList, keys, nullptr, 1), InvalidArgumentError);
  }
  REQUIRE(m.size() == 3);
  REQUIRE(m.get(Value(1))->as_int() == 30);
  REQUIRE(m.get(Value("a"))->as_int() == 50);
  REQUIRE(m.get(Value())->as_int() == 40);
  REQUIRE(st.size() == 3);
  REQUIRE(st.contains(Value("a")));
  REQUIRE(st.contains(Value()));
  m.put(Value(2), Value(60));  // usable as any map: grows past the table it was born with
  for (long long i = 100; i < 200; ++i) m.put(Value(i), Value(i));
  REQUIRE(m.size() == 104);
  REQUIRE(m.get(Value(1))->as_int() == 30);
  require_heap_verifies(seg.meta());
}

// k and v are allocated before a cycle's flip; the map born after it is recent, so that cycle's
// pending passes do not trace its table: the table's birth must flag k and v.
TEST_CASE_METHOD(ScopeAndCycles, "strings allocated in a scope before a cycle, held only by a map born during it, survive") {
  Object holder = node(cls, 0, "holder");
  std::optional<ReadScope> scope(std::in_place);
  const Word k = new_string_view("a key from before the cycle").raw();
  const Word val = new_string_view("a value from before the cycle").raw();
  CyclesInBackground cycle(c, 1);
  std::this_thread::sleep_for(100ms);
  REQUIRE(cycle.done() == 0);
  const Word map = new_hash_scoped(seg.meta(), TypeKind::kMap, &k, &val, 1);
  holder.set(next, Value::from_raw(map));
  scope.reset();
  cycle.join();
  settle();
  Map got(holder.get(next));
  REQUIRE(got.size() == 1);
  REQUIRE(got.get(Value("a key from before the cycle"))->as_string() == "a value from before the cycle");
  verify();
}
