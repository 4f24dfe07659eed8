// Unit tests of channels (libshared/src/channel.*), within one process.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "block.hpp"
#include "channel.hpp"
#include "classes.hpp"
#include "colors/errors.hpp"
#include "futex.hpp"
#include "objects.hpp"
#include "pending_bits.hpp"
#include "session.hpp"
#include "test_segment.hpp"

using namespace colors;
using namespace colors::detail;

namespace {
constexpr std::int64_t kMs = 1'000'000;
std::int64_t elapsed_ms(std::int64_t start) { return (monotonic_ns() - start) / kMs; }
bool interrupt_now() { return true; }
}  // namespace

TEST_CASE("channel: find_or_create and capacity rules", "[channel]") {
  test::TestSegment seg(1 << 20, 4 << 20);
  Metadata* m = seg.meta();
  CHECK(find_channel(m, "jobs") == nullptr);
  ChannelRecord* c = find_or_create_channel(m, "jobs", 8);
  REQUIRE(c != nullptr);
  CHECK(c->capacity.load() == 8);
  CHECK(name_view(c->name) == "jobs");
  CHECK(find_channel(m, "jobs") == c);
  // The capacity given at creation wins.
  CHECK(find_or_create_channel(m, "jobs", 100) == c);
  CHECK(c->capacity.load() == 8);
  CHECK_THROWS_AS(find_or_create_channel(m, "zero", 0), InvalidArgumentError);
  CHECK_THROWS_AS(find_or_create_channel(m, "huge", kMaxChannelCapacity + 1), InvalidArgumentError);
  CHECK_THROWS_AS(find_or_create_channel(m, "", 1), InvalidArgumentError);
  CHECK_THROWS_AS(find_or_create_channel(m, "\xc0\x80", 1), InvalidArgumentError);
  ChannelRecord* big = find_or_create_channel(m, "big", kMaxChannelCapacity);
  CHECK(big->capacity.load() == kMaxChannelCapacity);
  int n = 0;
  for_each_channel(m, [&](ChannelRecord*) { ++n; });
  CHECK(n == 2);
}

TEST_CASE("channel: FIFO order, wrapping around the slots", "[channel]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  ChannelRecord* c = find_or_create_channel(m, "fifo", 5);
  std::int64_t next_in = 0, next_out = 0;
  for (int round = 0; round < 50; ++round) {
    const int k = 1 + round % 5;
    for (int i = 0; i < k; ++i) REQUIRE(channel_send(m, c, make_small(next_in++), 0));
    CHECK(channel_size(c) == static_cast<std::uint64_t>(k));
    for (int i = 0; i < k; ++i) {
      Word w = kNull;
      REQUIRE(channel_receive(m, c, &w, 0));
      CHECK(w == make_small(next_out++));
    }
  }
  CHECK(channel_size(c) == 0);
  for (std::uint32_t i = 0; i < c->capacity.load(); ++i) CHECK(c->slots.load()[i].load() == kNull);  // received slots cleared
}

TEST_CASE("channel: try variants and timeouts on a full or empty channel", "[channel]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  ChannelRecord* c = find_or_create_channel(m, "bounded", 4);
  Word w = kNull;
  CHECK_FALSE(channel_receive(m, c, &w, 0));
  CHECK(w == kNull);
  std::int64_t t0 = monotonic_ns();
  CHECK_FALSE(channel_receive(m, c, &w, 30 * kMs));
  CHECK(elapsed_ms(t0) >= 29);
  CHECK(elapsed_ms(t0) < 1000);

  for (int i = 0; i < 4; ++i) REQUIRE(channel_send(m, c, make_small(i), 0));
  CHECK_FALSE(channel_send(m, c, make_small(99), 0));
  t0 = monotonic_ns();
  CHECK_FALSE(channel_send(m, c, make_small(99), 80 * kMs, 0));  // spans two interrupt slices
  CHECK(elapsed_ms(t0) >= 79);
  CHECK(elapsed_ms(t0) < 1000);
  CHECK(channel_size(c) == 4);

  REQUIRE(channel_receive(m, c, &w, 0));
  CHECK(w == make_small(0));
  CHECK(channel_send(m, c, make_small(4), 0));
  for (int i = 1; i <= 4; ++i) {
    REQUIRE(channel_receive(m, c, &w, 0));
    CHECK(w == make_small(i));
  }
}

TEST_CASE("channel: null cannot be sent", "[channel]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  ChannelRecord* c = find_or_create_channel(m, "n", 2);
  CHECK_THROWS_AS(channel_send(m, c, kNull, 0), InvalidArgumentError);
  CHECK_THROWS_AS(channel_send(m, c, kNull), InvalidArgumentError);
  CHECK(channel_size(c) == 0);
}

TEST_CASE("channel: blocked senders and receivers are woken", "[channel]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  ChannelRecord* c = find_or_create_channel(m, "wake", 1);
  for (std::int64_t spin : {std::int64_t{0}, std::int64_t{-1}}) {
    Word got = kNull;
    std::thread r([&] { channel_receive(m, c, &got, 5000 * kMs, spin); });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // receiver is in the kernel
    std::int64_t t0 = monotonic_ns();
    REQUIRE(channel_send(m, c, make_small(7)));
    r.join();
    CHECK(got == make_small(7));
    CHECK(elapsed_ms(t0) < 1000);

    REQUIRE(channel_send(m, c, make_small(1), 0));
    bool sent = false;
    std::thread s([&] { sent = channel_send(m, c, make_small(2), 5000 * kMs, spin); });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    Word w = kNull;
    REQUIRE(channel_receive(m, c, &w, 0));
    CHECK(w == make_small(1));
    s.join();
    CHECK(sent);
    REQUIRE(channel_receive(m, c, &w, 0));
    CHECK(w == make_small(2));
    CHECK(c->recv_waiters.load() == 0);
    CHECK(c->send_waiters.load() == 0);
  }
}

TEST_CASE("channel: many producers and consumers, every value exactly once", "[channel]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  ChannelRecord* c = find_or_create_channel(m, "mpmc", 16);
  constexpr int kProducers = 3, kConsumers = 3, kPerProducer = 20000;
  constexpr int kTotal = kProducers * kPerProducer;
  std::vector<std::atomic<int>> seen(kTotal);
  std::atomic<int> duplicates{0}, bad{0}, received{0};
  std::vector<std::thread> ts;
  for (int p = 0; p < kProducers; ++p) {
    ts.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        if (!channel_send(m, c, make_small(p * kPerProducer + i), 10'000 * kMs)) ++bad;
      }
    });
  }
  for (int k = 0; k < kConsumers; ++k) {
    ts.emplace_back([&, k] {
      // Half the consumers never spin, to exercise the kernel path under load.
      const std::int64_t spin = k % 2 == 0 ? -1 : 0;
      for (;;) {
        Word w = kNull;
        if (!channel_receive(m, c, &w, 10'000 * kMs, spin)) {
          ++bad;
          return;
        }
        const std::int64_t v = small_value(w);
        if (v < 0) return;  // stop sentinel
        if (v >= kTotal || seen[v].fetch_add(1) != 0) ++duplicates;
        ++received;
      }
    });
  }
  for (int p = 0; p < kProducers; ++p) ts[p].join();
  for (int k = 0; k < kConsumers; ++k) REQUIRE(channel_send(m, c, make_small(-1), 10'000 * kMs));
  for (int k = 0; k < kConsumers; ++k) ts[kProducers + k].join();
  CHECK(bad == 0);
  CHECK(duplicates == 0);
  CHECK(received == kTotal);
  int missing = 0;
  for (auto& s : seen) missing += s.load() != 1;
  CHECK(missing == 0);
  CHECK(channel_size(c) == 0);
}

TEST_CASE("channel: slots are GC roots - receiving goes through the deletion barrier", "[channel]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  ChannelRecord* c = find_or_create_channel(m, "roots", 4);
  Rooted oa = new_string(m, "a"), ob = new_string(m, "b");
  const Word ra = oa.word(), rb = ob.word();
  REQUIRE(channel_send(m, c, ra, 0));
  REQUIRE(channel_send(m, c, rb, 0));
  REQUIRE(channel_send(m, c, make_small(3), 0));
  std::set<Word> visited;
  for_each_channel_slot(c, [&](std::atomic<Word>*, Word w) { visited.insert(w); });
  CHECK(visited == std::set<Word>{ra, rb, make_small(3)});
  Word w = kNull;
  REQUIRE(channel_receive(m, c, &w, 0));
  CHECK(w == ra);
  CHECK(pending_bit(g_pending_bits, ra));  // flagged when it left its slot
  CHECK_FALSE(pending_bit(g_pending_bits, rb));
  visited.clear();
  for_each_channel_slot(c, [&](std::atomic<Word>*, Word v) { visited.insert(v); });
  CHECK(visited == std::set<Word>{rb, make_small(3)});
}

TEST_CASE("channel: a slot cleared by a receiver that died before bumping head is skipped", "[channel]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  ChannelRecord* c = find_or_create_channel(m, "remnant", 4);
  REQUIRE(channel_send(m, c, make_small(1), 0));
  REQUIRE(channel_send(m, c, make_small(2), 0));
  // Simulate the dead receiver: step (2) done (slot cleared), step (3) (head++) not.
  c->slots.load()[c->head.load() % c->capacity.load()].store(kNull);
  Word w = kNull;
  REQUIRE(channel_receive(m, c, &w, 0));
  CHECK(w == make_small(2));
  CHECK(channel_size(c) == 0);
  // Only remnants left: the receive finds nothing and times out cleanly.
  REQUIRE(channel_send(m, c, make_small(3), 0));
  c->slots.load()[c->head.load() % c->capacity.load()].store(kNull);
  CHECK_FALSE(channel_receive(m, c, &w, 20 * kMs));
  CHECK(channel_size(c) == 0);
  // A sender that died after writing its slot but before bumping tail: overwritten later.
  c->slots.load()[c->tail.load() % c->capacity.load()].store(make_small(666));
  REQUIRE(channel_send(m, c, make_small(4), 0));
  REQUIRE(channel_receive(m, c, &w, 0));
  CHECK(w == make_small(4));
}

TEST_CASE("channel: a dead holder of the channel lock does not block it", "[channel]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  ChannelRecord* c = find_or_create_channel(m, "deadlock", 2);
  // A thread that exits holding a robust mutex: the next locker gets EOWNERDEAD, as for a
  // process killed with the lock held.
  std::thread([&] { c->lock.lock(); }).join();
  REQUIRE(channel_send(m, c, make_small(5), 1000 * kMs));
  Word w = kNull;
  REQUIRE(channel_receive(m, c, &w, 1000 * kMs));
  CHECK(w == make_small(5));
}

TEST_CASE("channel: blocking waits run the interrupt hook and notice a stopped server", "[channel]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  ChannelRecord* c = find_or_create_channel(m, "intr", 1);
  bool interrupted = false;
  std::thread([&] {
    set_interrupt_hook(&interrupt_now);
    Word w = kNull;
    try {
      channel_receive(m, c, &w, -1, 0);
    } catch (const InterruptedError&) {
      interrupted = true;
    }
    set_interrupt_hook(nullptr);
  }).join();
  CHECK(interrupted);
  CHECK(c->recv_waiters.load() == 0);

  const std::uint32_t before = m->server_state.load();
  m->server_state.store(static_cast<std::uint32_t>(ServerState::kStopped));
  Word w = kNull;
  std::int64_t t0 = monotonic_ns();
  CHECK_THROWS_AS(channel_receive(m, c, &w, -1), ServerGoneError);
  REQUIRE(channel_send(m, c, make_small(1), 0));
  CHECK_THROWS_AS(channel_send(m, c, make_small(2), -1), ServerGoneError);
  CHECK(elapsed_ms(t0) < 2000);
  m->server_state.store(before);
}

TEST_CASE("channel: a capacity over the maximum is refused with a message naming it", "[channel]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  std::string msg;
  try {
    open_channel(m, "too.big", std::uint64_t{1} << 32);
  } catch (const InvalidArgumentError& e) {
    msg = e.what();
  }
  CHECK(msg.find(std::to_string(kMaxChannelCapacity)) != std::string::npos);
  CHECK(msg.find("maximum") != std::string::npos);
  CHECK(find_channel(m, "too.big") == nullptr);
}

TEST_CASE("channel: delete drops the values, wakes blocked receivers and senders, and handles become stale",
          "[channel][delete]") {
  test::TestSegment seg(1 << 20);
  Metadata* m = seg.meta();
  CHECK_FALSE(delete_channel(m, "q"));
  ChanRef full = open_channel(m, "full", 1);
  ChanRef q = open_channel(m, "q", 4);
  Rooted o = new_string(m, "queued");
  REQUIRE(channel_send(m, q.rec, o.word(), 0, -1, q.generation));
  REQUIRE(channel_send(m, full.rec, make_small(1), 0, -1, full.generation));
  std::atomic<int> receiver{0}, sender{0};
  ChanRef empty = open_channel(m, "empty", 2);
  auto blocked = [&](std::atomic<int>& out, auto op) {
    return std::thread([&out, op] {
      try {
        op();
        out = 1;
      } catch (const KeyError& e) {
        out = std::string(e.what()).find("was deleted") != std::string::npos ? 2 : 3;
      }
    });
  };
  std::thread tr = blocked(receiver, [&] {
    Word w = kNull;
    channel_receive(m, empty.rec, &w, 20'000 * kMs, -1, nullptr, empty.generation);
  });
  std::thread ts = blocked(sender, [&] { channel_send(m, full.rec, make_small(2), 20'000 * kMs, -1, full.generation); });
  const std::int64_t t0 = monotonic_ns();
  while ((empty.rec->recv_waiters.load() == 0 || full.rec->send_waiters.load() == 0) && elapsed_ms(t0) < 10'000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(delete_channel(m, "empty"));
  REQUIRE(delete_channel(m, "full"));
  tr.join();
  ts.join();
  CHECK(receiver == 2);
  CHECK(sender == 2);
  CHECK(elapsed_ms(t0) < 15'000);  // woken by the deletion, not by their timeouts

  std::atomic<Word>* slots = q.rec->slots.load();
  REQUIRE(delete_channel(m, "q"));
  CHECK(pending_bit(g_pending_bits, o.word()));  // the dropped value went through the barrier
  for (std::uint64_t i = 0; i < slot_block_capacity(slots); ++i) CHECK(slots[i].load() == kNull);
  CHECK(find_channel(m, "q") == nullptr);
  Word w = kNull;
  CHECK_THROWS_AS(channel_receive(m, q.rec, &w, 0, -1, nullptr, q.generation), KeyError);
  CHECK_THROWS_AS(channel_send(m, q.rec, make_small(3), 0, -1, q.generation), KeyError);
  CHECK_THROWS_AS(channel_capacity(q), KeyError);
  // Re-created with another capacity: empty, and the old handle stays stale.
  ChanRef q2 = open_channel(m, "q", 2);
  CHECK(q2.rec == q.rec);
  CHECK(channel_capacity(q2) == 2);
  CHECK(channel_size(q2.rec) == 0);
  REQUIRE(channel_send(m, q2.rec, make_small(5), 0, -1, q2.generation));
  CHECK_THROWS_AS(channel_receive(m, q.rec, &w, 0, -1, nullptr, q.generation), KeyError);
  REQUIRE(channel_receive(m, q2.rec, &w, 0, -1, nullptr, q2.generation));
  CHECK(w == make_small(5));
}

TEST_CASE("channel: create and delete in a loop reuses the slot blocks", "[channel][delete]") {
  test::TestSegment seg(1 << 20, 4 << 20);
  Metadata* m = seg.meta();
  // 400 channels of the maximal capacity (512 KiB of slots each: 200 MiB in all) through 4 MiB,
  // under 40 names, so each round also revives a tombstone.
  std::uint64_t top = 0;
  for (int round = 0; round < 400; ++round) {
    const std::string name = "big." + std::to_string(round % 40);
    ChanRef c = open_channel(m, name, round % 2 == 0 ? kMaxChannelCapacity : kMaxChannelCapacity / 2 + 1);
    REQUIRE(channel_send(m, c.rec, make_small(round), 0, -1, c.generation));
    REQUIRE(delete_channel(m, name));
    if (round == 39) top = m->classes_top.load();  // every record exists from here on
  }
  CHECK(m->classes_top.load() == top);
}
