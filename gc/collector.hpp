// The concurrent collector of the objects space (gc/README.md has the algorithm and the
// correctness argument). It runs in colors-server on its own threads and never stops a client.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "layout.hpp"

namespace colors::gc {

struct Options {
  unsigned threads = 2;              // marking and sweeping threads (the cycle's own thread included)
  unsigned threshold_percent = 70;   // start a cycle when this much of the heap is not free
  // Pacing, as Go's GOGC: also start a cycle once the bytes allocated since the last one started
  // reach pacing_percent of the live data it estimated (gc/README.md: how), and at least
  // min_trigger_bytes; 0 turns it off.
  // Why: the freelist hands out the memory a cycle freed first, so a paced heap keeps reusing
  // pages that every process has already mapped and cached. Paced only by the threshold, a large
  // heap sends every allocation to new pages until the threshold is reached, and each process
  // then takes a page fault for each new page it touches (rpc-bench's 1024-tree call and read:
  // 1.17-1.31x faster paced, gc/README.md). A sweep costs about the same per byte allocated either way.
  unsigned pacing_percent = 400;
  std::uint64_t min_trigger_bytes = std::uint64_t{16} << 20;
  // How long a cycle waits for the read scopes that were open at its flip before it gives up
  // (abandons, freeing nothing) so that a thread that waits for the cycle while a scope waits for
  // that thread (a container lock held across an allocation) gets an answer (gc/README.md, "Read
  // scopes"). After kMaxAbandonedCycles in a row a cycle waits without a bound: the 8-bit epoch
  // must not wrap around without a sweep.
  std::uint32_t read_scope_wait_ms = 1000;
  bool poison = false;               // debug: fill freed memory with kPoison
  std::function<void(const detail::GcCycleStats&)> on_cycle;  // e.g. the server's log
  // Fault injection: run by start()'s thread before its first look at the requests (a test delays
  // it, as a loaded machine may).
  std::function<void()> before_loop;
};

inline constexpr std::uint64_t kPoison = 0xdeadbeefdeadbeefULL;
inline constexpr unsigned kMaxAbandonedCycles = 64;  // < 254: see Options::read_scope_wait_ms

class Collector {
 public:
  Collector(detail::Metadata* m, Options opt);
  ~Collector();  // stops the collector thread
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  // Starts the thread that runs cycles on demand (threshold, client requests, out-of-memory).
  void start();
  void stop();

  // Runs one whole cycle on the calling thread (with the worker threads). Used by start()'s
  // thread and by tests.
  detail::GcCycleStats run_cycle();

  // A client died: drops its roots (deletion barrier) and reclaims its TLABs. Safe at any time,
  // also in the middle of a cycle (serialised with the heap walks that could see stale headers).
  void reclaim_client(std::uint32_t client_id, std::uint32_t slot, std::size_t* tlab_bytes = nullptr);

  // Runs `f` between cycles: waits for a cycle in progress to end and starts none while `f` runs
  // (a checkpoint's copy of the segment, colors-server/checkpointer.hpp). Clients asking for a
  // cycle meanwhile wait, as they would for a cycle. reclaim_client stays callable.
  void run_quiesced(const std::function<void()>& f);

  // Tests: after the marking of the next cycle terminates and before it sweeps, `hook` runs on
  // the collector thread (e.g. the checkmark verifier, on a quiescent heap).
  void set_after_mark_hook(std::function<void(std::uint8_t epoch)> hook);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Verifies the marking of cycle `epoch` against a stop-the-world re-mark (Go's gccheckmark):
// every object reachable from the roots must be marked or recent in that epoch.
// REQUIRES: no mutator runs (the heap is quiescent). Returns the violations found.
std::vector<std::string> checkmark(detail::Metadata* m, std::uint8_t epoch);

// Reads the statistics of the last finished cycle (seqlock).
detail::GcCycleStats last_cycle_stats(detail::Metadata* m);

}  // namespace colors::gc
