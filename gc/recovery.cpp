#include "recovery.hpp"

#include <algorithm>
#include <vector>

#include "futex.hpp"
#include "heap_walk.hpp"
#include "robust_mutex.hpp"
#include "sweeper.hpp"
#include "worker_pool.hpp"

namespace colors::gc {

using namespace colors::detail;

std::string recover_interrupted_cycle(Metadata* m, unsigned threads) {
  // The dead server may have held it; a robust lock hands it over (EOWNERDEAD) and the verifier
  // stays excluded while the interrupted sweep is finished.
  RobustLockGuard cycle(m->gc_cycle_lock);
  std::string what;
  const std::uint8_t epoch = m->gc_epoch.load(std::memory_order_acquire);
  switch (static_cast<GcPhase>(m->gc_phase.load(std::memory_order_acquire))) {
    case GcPhase::kIdle:
      what = "no cycle was interrupted";
      break;
    case GcPhase::kMarking:
      // Nothing was freed by this cycle yet. Its marks and its taken pending bits only concern
      // its own snapshot; the next cycle takes a new one (epoch + 1), for which every object is
      // unmarked, and pending bits matter only when set after that snapshot.
      what = "abandoned the marking of the interrupted cycle (epoch " + std::to_string(epoch) + ")";
      break;
    case GcPhase::kSweeping: {
      // Its marking had terminated: every object reachable at its snapshot is marked with this
      // epoch, and objects published since (also while no server ran) carry recent == epoch,
      // because the epoch has not moved. So sweeping the rest with it frees only garbage.
      WorkerPool pool(std::max(1u, threads));
      std::vector<Partition> parts = compute_partitions(m, pool.size() * 8);
      SweepResult r = sweep(m, pool, parts, epoch, m->gc_poison.load(std::memory_order_relaxed) != 0);
      what = "finished the sweep of the interrupted cycle (epoch " + std::to_string(epoch) + "): freed " +
             std::to_string(r.objects_freed) + " objects / " + std::to_string(r.bytes_freed) + " B";
      break;
    }
  }
  m->gc_phase.store(static_cast<std::uint8_t>(GcPhase::kIdle), std::memory_order_release);
  // A statistics update cut short leaves the seqlock odd, and readers would spin on it forever.
  if (m->gc_stats_seq.load(std::memory_order_acquire) % 2 != 0) m->gc_stats_seq.fetch_add(1, std::memory_order_release);
  // The interrupted cycle counts as finished: clients waiting for it (request_gc_and_wait waits
  // for gc_done_seq to reach the gc_started_seq it saw, plus one) would otherwise wait for one
  // cycle more than anybody asked for.
  const std::uint32_t started = m->gc_started_seq.load(std::memory_order_seq_cst);
  if (m->gc_done_seq.load(std::memory_order_seq_cst) != started) {
    m->gc_done_seq.store(started, std::memory_order_seq_cst);
    futex_wake_all(&m->gc_done_seq);
  }
  return what;
}

}  // namespace colors::gc
