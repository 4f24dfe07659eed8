// Parallel marking with randomized work stealing.
//
// Invariants:
//  * An object is marked in cycle E when its `marked` byte equals E; the byte is set with an
//    atomic exchange, so each object is pushed (and traced) by exactly one thread per cycle.
//  * A block found through a reference while it is still reserved (a rooted object being
//    initialised) is marked but not traced: everything its initialiser stores into it is itself
//    rooted or recent (gc/README.md, "transient references").
//  * Passes after the first stop at objects that are recent in this cycle (recent == E).
//  * Work is only lost by a thread that finds no work anywhere: the drain ends when every thread
//    is idle at once, and no idle thread can create work.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "heap_walk.hpp"
#include "layout.hpp"
#include "worker_pool.hpp"

namespace colors::gc {

class Marker {
 public:
  Marker(detail::Metadata* m, unsigned threads, std::uint8_t epoch);

  // First pass: marks everything reachable from the roots (client root tables, repositories,
  // channels), tracing through recent objects too. Returns the objects newly marked.
  std::uint64_t root_pass(WorkerPool& pool);
  // Later passes: marks from every object in the pending set (pending_bits.hpp), taking its bit,
  // stopping at recent objects. Threads take the bitmap in chunks of kPendingChunkWords words
  // (4 MiB of heap). Returns the objects newly marked.
  std::uint64_t pending_pass(WorkerPool& pool);
  static constexpr std::size_t kPendingChunkWords = 4096;

  std::uint64_t objects_marked() const;
  // Objects the pending passes took from the pending set (each pass's flagged objects).
  std::uint64_t objects_taken() const;
  std::uint64_t bytes_marked() const;

 private:
  struct alignas(64) Worker {
    std::vector<detail::Word> local;   // private stack
    std::mutex mu;
    std::vector<detail::Word> shared;  // GUARDED_BY(mu): stealable half
    std::atomic<std::size_t> shared_size{0};
    std::uint64_t rng = 0;
    std::uint64_t marked = 0, bytes = 0;
    std::uint64_t taken = 0;  // objects taken from the pending set
  };

  void visit(Worker& w, detail::Word ref);
  void trace(Worker& w, detail::Word obj);
  void drain(unsigned i);
  bool take(unsigned i, detail::Word* out);
  void share(Worker& w);
  std::uint64_t total_marked() const;

  detail::Metadata* m_;
  std::uint8_t epoch_;
  bool stop_at_recent_ = false;
  std::vector<Worker> workers_;
  std::atomic<unsigned> idle_{0};
  std::atomic<std::size_t> next_part_{0};
};

}  // namespace colors::gc
