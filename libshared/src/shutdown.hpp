// Server shutdown support: waking every thread of every client that sleeps on a futex word in
// the segment, so that it re-checks Metadata::server_state and reports the server's exit instead
// of sleeping until its timeout.
#pragma once
#include "layout.hpp"

namespace colors::detail {

// Bumps and wakes every futex word a client may block on: each MonitorEntry::cv_seq,
// Metadata::gc_request_seq and gc_done_seq, and not_empty_seq / not_full_seq of every channel.
//
// REQUIRES: Metadata::server_state was set to kStopped (release) before the call, so that a
// woken waiter that re-checks the state sees kStopped. A waiter that checked the state just
// before the store still sees the bumped sequence number and returns from futex_wait at once
// (the kernel compares the word atomically with going to sleep), so no waiter is missed.
// Safe to call concurrently with clients: it only increments counters and walks the
// append-only channel chains with acquire loads.
void wake_all_waiters(Metadata* m);

}  // namespace colors::detail
