// The durable-commit channel (--durability full): how a committing client asks the server's
// checkpoint thread for a log record covering its commit, and learns that it is on disk, through
// four words of the segment's Metadata and two futexes, with no message through the server's
// event loop. The link's kSync request (server_link.hpp) stays the authoritative path: a client
// falls back to it whenever the channel cannot vouch (a failed record, a lost server, an answer
// that takes too long).
//
// A durable commit over the link crosses four threads (client -> event loop -> checkpoint thread
// -> event loop -> client), each a wake-up across cores (~35 us each way here); over the channel
// it crosses two (client -> checkpoint thread -> client).
//
// Protocol:
//   client, after its commit point:  ticket = sync_requested.fetch_add(1) + 1; bump sync_bell and
//                                    wake it; wait on sync_done_bell until sync_done >= ticket;
//                                    durable unless sync_failed >= ticket.
//   checkpoint thread, per capture:  taken = sync_requested (read before the capture's first
//                                    scan); capture, write, fdatasync; on failure sync_failed =
//                                    taken; then sync_done = taken; bump sync_done_bell and wake it.
// Invariants:
//  * A ticket <= taken was handed out before the thread read `taken` (one atomic word's
//    modification order), and its client's commit point precedes its fetch_add; the capture
//    begins after the read, so it holds the commit: sync_done >= ticket (release, read with
//    acquire) means the record covering the commit is on disk, unless sync_failed >= ticket.
//  * The server keeps the last value it served in its own memory (ChannelServer::served) and
//    never reads sync_done back, so a forged word cannot make it skip a request.
//  * The words are in the heap, writable by every attached process like any object: a hostile
//    process can forge an acknowledgement (as it could overwrite the committed data itself) or
//    withhold one (a waiter then asks over its link after kTicketPatienceNs, so it cannot be made
//    to wait forever).
#pragma once
#include <cstdint>
#include <functional>

#include "layout.hpp"

namespace colors::detail {

// How long a waiter trusts the channel before it asks over its link. Longer than a capture of a
// large heap normally takes (a full checkpoint of 1 GiB: about 1 s here), so a healthy server
// answers every commit on the channel.
inline constexpr std::int64_t kTicketPatienceNs = 3'000'000'000;

// Client side. Hands out the calling commit's ticket and wakes the checkpoint thread.
// REQUIRES: the commit point has passed.
std::uint64_t post_sync_ticket(Metadata* m);

enum class TicketOutcome {
  kDurable,  // a record taken after the ticket was posted is on disk
  kAskLink,  // the channel cannot vouch: the record failed, the server was lost, or patience ran out
};

// Waits until the checkpoint thread served `ticket`, `lost()` returns true (checked between
// futex waits of at most 10 ms), or `patience_ns` passed.
TicketOutcome await_sync_ticket(Metadata* m, std::uint64_t ticket, const std::function<bool()>& lost,
                                std::int64_t patience_ns = kTicketPatienceNs);

// Server side: the checkpoint thread's view of the channel. Touched by that thread only.
class ChannelServer {
 public:
  explicit ChannelServer(Metadata* m) : m_(m) {}
  // Whether tickets were handed out since the last serve(), and how many.
  bool waiting() const { return pending() != 0; }
  std::uint64_t pending() const;
  // The value to serve after the next capture. REQUIRES: read before the capture begins.
  std::uint64_t take() const;
  // Acknowledges every ticket <= `taken`: durable when `durable`, else failed.
  void serve(std::uint64_t taken, bool durable);
  // The futex word the thread sleeps on; anyone with news for it calls ring().
  std::atomic<std::uint32_t>* bell() const { return &m_->sync_bell; }
  static void ring(Metadata* m);

 private:
  Metadata* m_;
  // The last value served. 0 at the start: a successor that adopts a heap with tickets waiting
  // (sync_requested > 0) takes a capture at once, and that serves them.
  std::uint64_t served_ = 0;
};

}  // namespace colors::detail
