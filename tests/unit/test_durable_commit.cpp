// Unit tests of the durable-commit channel (libshared/src/durable_commit.*): the tickets, what a
// record serves, and every way a waiter falls back to its link. The server's side runs here on a
// thread of the test; test_server_durability.cpp runs the whole path through colors-server.
#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "durable_commit.hpp"
#include "futex.hpp"
#include "test_segment.hpp"

using namespace colors;
using namespace colors::detail;

namespace {
constexpr std::int64_t kMs = 1'000'000;
bool never_lost() { return false; }
}  // namespace

TEST_CASE("durable commit: a ticket posted before the record's read is served by it", "[durable_commit]") {
  test::TestSegment seg(1 << 20, 4 << 20);
  Metadata* m = seg.meta();
  ChannelServer server(m);
  CHECK_FALSE(server.waiting());
  const std::uint32_t bell = m->sync_bell.load();
  const std::uint64_t a = post_sync_ticket(m);
  const std::uint64_t b = post_sync_ticket(m);
  CHECK(b == a + 1);
  CHECK(m->sync_bell.load() != bell);  // each ticket wakes the checkpoint thread
  CHECK(server.pending() == 2);
  const std::uint64_t taken = server.take();
  server.serve(taken, true);
  CHECK_FALSE(server.waiting());
  CHECK(await_sync_ticket(m, a, never_lost, 50 * kMs) == TicketOutcome::kDurable);
  CHECK(await_sync_ticket(m, b, never_lost, 50 * kMs) == TicketOutcome::kDurable);
}

TEST_CASE("durable commit: a ticket posted after the read waits for the next record", "[durable_commit]") {
  test::TestSegment seg(1 << 20, 4 << 20);
  Metadata* m = seg.meta();
  ChannelServer server(m);
  (void)post_sync_ticket(m);
  const std::uint64_t taken = server.take();  // the capture begins after this
  const std::uint64_t late = post_sync_ticket(m);
  server.serve(taken, true);
  CHECK(server.waiting());
  // Not covered by that record: the waiter runs out of patience and asks its link.
  const std::int64_t t0 = monotonic_ns();
  CHECK(await_sync_ticket(m, late, never_lost, 30 * kMs) == TicketOutcome::kAskLink);
  CHECK(monotonic_ns() - t0 >= 30 * kMs);
  server.serve(server.take(), true);
  CHECK(await_sync_ticket(m, late, never_lost, 30 * kMs) == TicketOutcome::kDurable);
}

TEST_CASE("durable commit: a failed record sends its tickets to the link, later ones are durable", "[durable_commit]") {
  test::TestSegment seg(1 << 20, 4 << 20);
  Metadata* m = seg.meta();
  ChannelServer server(m);
  const std::uint64_t failed = post_sync_ticket(m);
  server.serve(server.take(), false);
  CHECK(await_sync_ticket(m, failed, never_lost, 30 * kMs) == TicketOutcome::kAskLink);
  const std::uint64_t next = post_sync_ticket(m);
  server.serve(server.take(), true);
  CHECK(await_sync_ticket(m, next, never_lost, 30 * kMs) == TicketOutcome::kDurable);
}

TEST_CASE("durable commit: a waiter sleeps until the record is served, or its server is lost", "[durable_commit]") {
  test::TestSegment seg(1 << 20, 4 << 20);
  Metadata* m = seg.meta();
  ChannelServer server(m);
  const std::uint64_t ticket = post_sync_ticket(m);
  std::atomic<int> outcome{-1};
  std::atomic<std::int64_t> woke{0};
  const std::int64_t t0 = monotonic_ns();
  std::thread waiter([&] {
    outcome = static_cast<int>(await_sync_ticket(m, ticket, never_lost, 5000 * kMs));
    woke = monotonic_ns();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  CHECK(outcome.load() == -1);
  server.serve(server.take(), true);
  waiter.join();
  CHECK(outcome.load() == static_cast<int>(TicketOutcome::kDurable));
  CHECK(woke.load() - t0 >= 30 * kMs);
  CHECK(woke.load() - t0 < 2000 * kMs);  // woken by the serve, not by its patience

  // A lost server ends the wait within a futex slice (10 ms), long before the patience.
  std::atomic<bool> lost{false};
  const std::uint64_t orphan = post_sync_ticket(m);
  std::thread orphaned([&] {
    outcome = static_cast<int>(await_sync_ticket(m, orphan, [&] { return lost.load(); }, 5000 * kMs));
    woke = monotonic_ns();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::int64_t t1 = monotonic_ns();
  lost = true;
  orphaned.join();
  CHECK(outcome.load() == static_cast<int>(TicketOutcome::kAskLink));
  CHECK(woke.load() - t1 < 1000 * kMs);
}

TEST_CASE("durable commit: forged words cannot make the server skip a ticket", "[durable_commit]") {
  test::TestSegment seg(1 << 20, 4 << 20);
  Metadata* m = seg.meta();
  ChannelServer server(m);
  server.serve(server.take(), true);
  // A process forges an acknowledgement far ahead: the server keeps its own count.
  m->sync_done.store(~std::uint64_t{0});
  (void)post_sync_ticket(m);
  CHECK(server.waiting());
  server.serve(server.take(), true);
  // Moved backwards: the server sees a request (and serves what it reads), never "nothing to do"
  // while a ticket waits.
  m->sync_requested.store(0);
  CHECK(server.waiting());
  server.serve(server.take(), true);
  CHECK_FALSE(server.waiting());
  const std::uint64_t t = post_sync_ticket(m);
  CHECK(server.waiting());
  server.serve(server.take(), true);
  CHECK(await_sync_ticket(m, t, never_lost, 30 * kMs) == TicketOutcome::kDurable);
}
