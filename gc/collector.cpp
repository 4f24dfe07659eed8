#include "collector.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "collector_barrier.hpp"
#include "futex.hpp"
#include "heap.hpp"
#include "heap_walk.hpp"
#include "marker.hpp"
#include "read_scope.hpp"
#include "roots.hpp"
#include "sweeper.hpp"
#include "transaction.hpp"
#include "worker_pool.hpp"

namespace colors::gc {

using namespace colors::detail;

struct Collector::Impl {
  Metadata* m;
  Options opt;
  WorkerPool pool;
  // Serialises the heap walks that could meet the stale headers inside a run being coalesced:
  // the sweep, and dead-client reclamation.
  std::mutex walk_mu;
  std::mutex cycle_mu;  // one cycle at a time
  std::thread thread;
  std::atomic<bool> stopping{false};
  std::function<void(std::uint8_t)> after_mark;  // GUARDED_BY(cycle_mu)
  std::uint64_t cycles = 0;                      // GUARDED_BY(cycle_mu)
  // Written by run_cycle (under cycle_mu, on the collector thread or a test's), read by the
  // collector thread's polls: relaxed atomics, the triggers need no ordering with the cycle.
  std::atomic<std::uint64_t> allocated_at_last_cycle{0};  // allocated_bytes_total when it started
  std::atomic<std::uint64_t> live_estimate{0};             // the pacing trigger's base
  static constexpr unsigned kRewalkEvery = 16;
  std::vector<Partition> parts;        // GUARDED_BY(cycle_mu)
  unsigned cycles_since_walk = 0;      // GUARDED_BY(cycle_mu)
  unsigned abandoned_in_a_row = 0;     // GUARDED_BY(cycle_mu): cycles given up since the last sweep

  Impl(Metadata* mm, Options o) : m(mm), opt(std::move(o)), pool(std::max(1u, opt.threads)) {}

  std::uint64_t used() const { return (m->objects_end - m->objects_begin) - m->free_bytes.load(std::memory_order_relaxed); }

  // Whether a cycle is due without a request: the pacing trigger or the occupancy threshold.
  bool cycle_due() const {
    const std::uint64_t cap = m->objects_end - m->objects_begin;
    const std::uint64_t since = m->allocated_bytes_total.load(std::memory_order_relaxed) -
                                allocated_at_last_cycle.load(std::memory_order_relaxed);
    if (opt.pacing_percent != 0) {
      const std::uint64_t live = live_estimate.load(std::memory_order_relaxed);
      if (since >= std::max(opt.min_trigger_bytes, live / 100 * opt.pacing_percent)) return true;
    }
    if (used() * 100 < cap * m->gc_threshold_percent.load(std::memory_order_relaxed)) return false;
    // Above the threshold only because of live data: wait until a sixteenth of the heap has
    // been allocated since the last cycle, instead of running cycles back to back for nothing.
    return since >= cap / 16;
  }

  void publish_stats(const GcCycleStats& s) {
    m->gc_stats_seq.fetch_add(1, std::memory_order_acq_rel);  // odd: writing
    std::atomic_thread_fence(std::memory_order_release);
    std::memcpy(static_cast<void*>(&m->gc_last), &s, sizeof s);
    m->gc_stats_seq.fetch_add(1, std::memory_order_release);  // even: stable
  }

  // Invariant: every request made after a client saw gc_running == 1 differs from `seen`. So
  // `seen` is read in start(), before gc_running is set, never by the thread itself: a thread
  // scheduled late would read a request already made and never answer it (collect() timed out
  // that way on a loaded machine).
  void loop(std::uint32_t seen) {
    if (opt.before_loop) opt.before_loop();
    while (!stopping.load(std::memory_order_acquire)) {
      std::uint32_t req = m->gc_request_seq.load(std::memory_order_acquire);
      if (req != seen || cycle_due()) {
        seen = req;
        run_cycle();
        continue;
      }
      // Clients bump gc_request_seq (explicit collect(), allocation failure); the triggers are
      // polled every 10 ms, which keeps the allocation fast path free of any GC bookkeeping.
      futex_wait(&m->gc_request_seq, req, 10'000'000);
    }
  }

  // Waits until every scope in `scopes` has ended (its word changed: exit, a newer scope, or the
  // server emptied a dead client's table). Never stops or signals a client. False when the
  // collector is stopping, or after opt.read_scope_wait_ms unless the last kMaxAbandonedCycles
  // cycles were all given up: the caller then abandons the cycle.
  bool wait_for_read_scopes(const std::vector<detail::ActiveReadScope>& scopes) {
    const auto start = std::chrono::steady_clock::now();
    const bool bounded = abandoned_in_a_row < kMaxAbandonedCycles;
    bool logged = false;
    for (const detail::ActiveReadScope& a : scopes) {
      for (unsigned spins = 0; a.slot->load(std::memory_order_acquire) == a.seen; ++spins) {
        if (stopping.load(std::memory_order_acquire)) return false;
        if (spins < 64) {
          std::this_thread::yield();
          continue;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(spins < 1000 ? 50 : 1000));
        const auto waited = std::chrono::steady_clock::now() - start;
        if (bounded && waited > std::chrono::milliseconds(opt.read_scope_wait_ms)) {
          std::fprintf(stderr, "colors-server: a read scope of client %u (pid %d) stayed open for %u ms after a collector cycle began: the cycle is given up, nothing freed\n",
                       a.client, m->clients[a.client].pid.load(std::memory_order_relaxed), opt.read_scope_wait_ms);
          return false;
        }
        if (!bounded && !logged && waited > std::chrono::seconds(1)) {
          logged = true;
          std::fprintf(stderr, "colors-server: the collector waits for a read scope of client %u (pid %d) after %u cycles given up; memory is not reclaimed meanwhile\n",
                       a.client, m->clients[a.client].pid.load(std::memory_order_relaxed), kMaxAbandonedCycles);
        }
      }
    }
    return true;
  }

  // A cycle given up after its root pass (the collector is stopping, or a read scope stayed open):
  // nothing is swept, the phase goes back to idle, and waiters are woken as for a finished cycle
  // (an allocation that waited retries, and fails after two cycles without space). This epoch's
  // marks are simply stale for the next cycle; objects published meanwhile carry this epoch as
  // `recent` and are old for the next one. No sweep resets those stamps, so at most
  // kMaxAbandonedCycles cycles in a row are given up before the 8-bit epoch could come back.
  GcCycleStats abandon_cycle(GcCycleStats s) {
    ++abandoned_in_a_row;
    m->gc_phase.store(static_cast<std::uint8_t>(GcPhase::kIdle), std::memory_order_release);
    m->gc_done_seq.fetch_add(1, std::memory_order_seq_cst);
    if (m->gc_waiters.load(std::memory_order_seq_cst) != 0) futex_wake_all(&m->gc_done_seq);
    return s;
  }

  GcCycleStats run_cycle() {
    std::lock_guard<std::mutex> cycle(cycle_mu);
    // Excludes the heap verifier for the whole cycle (on_cycle below runs under it too).
    RobustLockGuard verify_excluded(m->gc_cycle_lock);
    using clock = std::chrono::steady_clock;
    auto ns = [](clock::time_point a, clock::time_point b) {
      return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
    };
    GcCycleStats s{};
    s.threads = pool.size();
    s.heap_used_before = used();
    const std::uint64_t allocated_now = m->allocated_bytes_total.load(std::memory_order_relaxed);
    const std::uint64_t interval = allocated_now - allocated_at_last_cycle.load(std::memory_order_relaxed);
    allocated_at_last_cycle.store(allocated_now, std::memory_order_relaxed);
    m->gc_started_seq.fetch_add(1, std::memory_order_seq_cst);
    auto t0 = clock::now();

    // Snapshot: objects published from now on are recent in this cycle.
    std::uint8_t epoch = static_cast<std::uint8_t>(m->gc_epoch.load(std::memory_order_relaxed) % 255 + 1);
    // The phase names the cycle of gc_epoch, for a successor server (recovery.hpp): marking
    // before the flip, so a death right after it is never taken for a finished marking.
    m->gc_phase.store(static_cast<std::uint8_t>(GcPhase::kMarking), std::memory_order_seq_cst);
    m->gc_epoch.store(epoch, std::memory_order_seq_cst);
    // Store-load order with the mutators' "store root, then load epoch" and "store root, then
    // re-read the slot": either a mutator sees the new epoch (its object is recent) and the
    // slot's state after the flip, or the root pass below sees its root. Clients that take roots
    // without a fence rely on the barrier for their half (libshared/src/collector_barrier.hpp).
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (m->collector_barrier.load(std::memory_order_relaxed) == 1) detail::collector_barrier();
    // Partition boundaries stay block boundaries forever (heap_walk.hpp), so a cycle reuses the
    // previous cycle's partitions and walks the heap anew only now and then, to rebalance.
    if (parts.empty() || ++cycles_since_walk >= kRewalkEvery) {
      parts = compute_partitions(m, pool.size() * 8);
      cycles_since_walk = 0;
    }
    auto t1 = clock::now();

    // Read scopes (read_scope.hpp) that began before the membarrier's cut: what they borrowed
    // may be unreachable at the snapshot. Read after the cut, so every scope that is not in this
    // list began its reads after the flip.
    const std::vector<detail::ActiveReadScope> scopes = detail::active_read_scopes(m);
    Marker marker(m, pool.size(), epoch);
    marker.root_pass(pool);
    // Before the pending passes: what such a scope promoted before it ended is flagged, and the
    // passes below mark it; nothing it still reads is swept.
    if (!scopes.empty() && !wait_for_read_scopes(scopes)) return abandon_cycle(s);
    auto t2 = clock::now();
    s.marking_passes = 1;
    // Repeat until a pass marks nothing new (gc/README.md: why this terminates, and why nothing
    // reachable at the snapshot is left unmarked).
    for (;;) {
      ++s.marking_passes;
      if (marker.pending_pass(pool) == 0) break;
    }
    auto t3 = clock::now();
    if (after_mark) after_mark(epoch);
    // Marking terminated: from here a successor may finish this sweep with this epoch's marks.
    m->gc_phase.store(static_cast<std::uint8_t>(GcPhase::kSweeping), std::memory_order_seq_cst);

    abandoned_in_a_row = 0;
    SweepResult sw;
    {
      std::lock_guard<std::mutex> walk(walk_mu);
      sw = sweep(m, pool, parts, epoch, opt.poison || m->gc_poison.load(std::memory_order_relaxed) != 0);
    }
    m->gc_phase.store(static_cast<std::uint8_t>(GcPhase::kIdle), std::memory_order_release);
    auto t4 = clock::now();

    s.cycle = ++cycles;
    s.clear_ns = ns(t0, t1);
    s.roots_ns = ns(t1, t2);  // the root pass includes marking everything reachable from the roots
    s.mark_ns = ns(t1, t2);
    s.remark_ns = ns(t2, t3);
    s.sweep_ns = ns(t3, t4);
    s.total_ns = ns(t0, t4);
    s.objects_marked = marker.objects_marked();
    s.pending_objects = marker.objects_taken();
    s.bytes_marked = marker.bytes_marked();
    s.objects_freed = sw.objects_freed;
    s.bytes_freed = sw.bytes_freed;
    s.heap_used_after = used();
    // What the heap still holds after the sweep includes what was dropped since the previous
    // cycle: pending flags set before a cycle are honoured by it, so that garbage is marked now
    // and freed by the next cycle. Paced on the use after the cycle, each cycle would keep a
    // whole interval of garbage, the trigger would grow with it, and the next interval with the
    // trigger (measured: 100-260 MB marked per cycle with a few MB live). So the estimate of live
    // data leaves out what was allocated since the previous cycle started; data kept since then
    // counts from the next cycle on.
    live_estimate.store(s.heap_used_after > interval ? s.heap_used_after - interval : 0, std::memory_order_relaxed);
    s.largest_free = heap_usage(m).largest_free;
    publish_stats(s);
    m->gc_done_seq.fetch_add(1, std::memory_order_seq_cst);
    if (m->gc_waiters.load(std::memory_order_seq_cst) != 0) futex_wake_all(&m->gc_done_seq);
    if (opt.on_cycle) opt.on_cycle(s);
    return s;
  }
};

Collector::Collector(Metadata* m, Options opt) : impl_(std::make_unique<Impl>(m, std::move(opt))) {
  m->gc_threshold_percent.store(impl_->opt.threshold_percent, std::memory_order_relaxed);
  if (impl_->opt.poison) m->gc_poison.store(1, std::memory_order_relaxed);
}

Collector::~Collector() { stop(); }

void Collector::start() {
  std::uint32_t seen = impl_->m->gc_request_seq.load(std::memory_order_acquire);
  impl_->m->gc_running.store(1, std::memory_order_release);
  impl_->thread = std::thread([this, seen] { impl_->loop(seen); });
}

void Collector::stop() {
  if (!impl_->thread.joinable()) return;
  impl_->stopping.store(true, std::memory_order_release);
  impl_->m->gc_running.store(0, std::memory_order_release);
  impl_->m->gc_request_seq.fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(&impl_->m->gc_request_seq);
  impl_->thread.join();
  // Wake clients waiting for a cycle that will not come; they see gc_running == 0.
  impl_->m->gc_done_seq.fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(&impl_->m->gc_done_seq);
}

GcCycleStats Collector::run_cycle() { return impl_->run_cycle(); }

void Collector::reclaim_client(std::uint32_t client_id, std::uint32_t slot, std::size_t* tlab_bytes) {
  // Its transactions first: their undo logs are rooted by its root table (transaction.hpp).
  detail::rollback_client_transactions(impl_->m, client_id);
  // Then roots: dropping them is an ordinary barriered store, safe at any time.
  release_client_roots(impl_->m, slot);
  std::lock_guard<std::mutex> walk(impl_->walk_mu);
  std::size_t n = reclaim_client_tlabs(impl_->m, client_id);
  if (tlab_bytes != nullptr) *tlab_bytes = n;
}

void Collector::run_quiesced(const std::function<void()>& f) {
  std::lock_guard<std::mutex> cycle(impl_->cycle_mu);
  f();
}

void Collector::set_after_mark_hook(std::function<void(std::uint8_t)> hook) {
  std::lock_guard<std::mutex> cycle(impl_->cycle_mu);
  impl_->after_mark = std::move(hook);
}

GcCycleStats last_cycle_stats(Metadata* m) {
  GcCycleStats s;
  for (;;) {
    std::uint32_t a = m->gc_stats_seq.load(std::memory_order_acquire);
    if (a % 2 != 0) continue;
    std::memcpy(&s, const_cast<const GcCycleStats*>(&m->gc_last), sizeof s);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (m->gc_stats_seq.load(std::memory_order_relaxed) == a) return s;
  }
}

}  // namespace colors::gc
