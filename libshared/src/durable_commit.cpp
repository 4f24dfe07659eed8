#include "durable_commit.hpp"

#include <algorithm>

#include "futex.hpp"

namespace colors::detail {

namespace {
constexpr std::int64_t kSliceNs = 10'000'000;  // between checks of lost()
}

void ChannelServer::ring(Metadata* m) {
  m->sync_bell.fetch_add(1, std::memory_order_release);
  futex_wake_all(&m->sync_bell);
}

std::uint64_t post_sync_ticket(Metadata* m) {
  // acq_rel: the commit's writes (before) are ordered before the ticket in the word's
  // modification order, which the checkpoint thread's acquire load of `taken` reads from.
  const std::uint64_t ticket = m->sync_requested.fetch_add(1, std::memory_order_acq_rel) + 1;
  ChannelServer::ring(m);
  return ticket;
}

TicketOutcome await_sync_ticket(Metadata* m, std::uint64_t ticket, const std::function<bool()>& lost,
                                std::int64_t patience_ns) {
  const std::int64_t deadline = monotonic_ns() + patience_ns;
  for (;;) {
    // The bell is read before the words it announces: a serve() after this read changes it, so
    // the futex wait below cannot sleep through that serve's wake.
    const std::uint32_t bell = m->sync_done_bell.load(std::memory_order_acquire);
    if (m->sync_done.load(std::memory_order_acquire) >= ticket)
      return m->sync_failed.load(std::memory_order_acquire) >= ticket ? TicketOutcome::kAskLink : TicketOutcome::kDurable;
    if (lost()) return TicketOutcome::kAskLink;
    const std::int64_t left = deadline - monotonic_ns();
    if (left <= 0) return TicketOutcome::kAskLink;
    (void)futex_wait(&m->sync_done_bell, bell, std::min(left, kSliceNs));
  }
}

// A forged sync_requested below served_ reads as a huge count: the thread captures at once, as
// for any request (it serves the value it reads, and serving is idempotent).
std::uint64_t ChannelServer::pending() const { return m_->sync_requested.load(std::memory_order_relaxed) - served_; }

std::uint64_t ChannelServer::take() const { return m_->sync_requested.load(std::memory_order_acquire); }

void ChannelServer::serve(std::uint64_t taken, bool durable) {
  served_ = taken;
  // Before sync_done: a waiter that sees its ticket done then sees the failure too.
  if (!durable) m_->sync_failed.store(taken, std::memory_order_release);
  m_->sync_done.store(taken, std::memory_order_release);
  m_->sync_done_bell.fetch_add(1, std::memory_order_release);
  futex_wake_all(&m_->sync_done_bell);
}

}  // namespace colors::detail
