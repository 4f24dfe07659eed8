// The heap verifier: checks the segment's invariants and reports every violation it finds.
//
// Checks: every block header is well formed and the blocks tile the objects space exactly;
// every object's class pointer is a class record; every user class version's field entries are
// well formed, each slot held by one entry (layout.hpp, FieldInfo); each object's internal lengths fit its block;
// every reference in any slot (fields, extensions, containers, repositories, channels, root
// tables) points at the start of a live object block; the freelist holds only kFree blocks of at
// least kTlabSize, without cycles, and its counters match; kTlab blocks belong to active clients.
//
// It takes Metadata::gc_cycle_lock, so it never runs during a collector cycle (the sweep
// reclaims and poisons memory), and the freelist part under heap_lock.
//
// Modes: kQuiescent (no mutator running, e.g. after a multi-process test) checks everything.
// kConcurrent (mutators may run, e.g. the server's --gc-debug check) checks what racing
// mutators cannot make wrong: block tiling and kinds, class pointers, lengths within blocks,
// references pointing at objects (a reference to a block that became an object after the walk
// is accepted), and the freelist's own structure.
#pragma once
#include <string>
#include <vector>

#include "layout.hpp"

namespace colors::detail {

struct VerifyReport {
  std::vector<std::string> errors;  // empty when the heap is sound
  std::size_t blocks = 0, objects = 0, free_blocks = 0, filler_blocks = 0, tlab_blocks = 0;
  std::size_t object_bytes = 0, free_bytes = 0, filler_bytes = 0, tlab_bytes = 0;
  bool ok() const { return errors.empty(); }
  std::string summary() const;
};

enum class VerifyMode { kQuiescent, kConcurrent };

VerifyReport verify_heap(Metadata* m, VerifyMode mode = VerifyMode::kQuiescent);
// As verify_heap, for a caller that already holds gc_cycle_lock (the collector itself).
VerifyReport verify_heap_locked(Metadata* m, VerifyMode mode);

}  // namespace colors::detail
