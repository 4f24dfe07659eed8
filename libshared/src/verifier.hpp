// The heap verifier: checks the segment's invariants and reports every violation it finds.
//
// Checks: every block header is well formed and the blocks tile the objects space exactly;
// every object's class pointer is a class record; each object's internal lengths fit its block;
// every reference in any slot (fields, extensions, containers, repositories, channels, root
// tables) points at the start of a live object block; the freelist holds only kFree blocks of at
// least kTlabSize, without cycles, and its counters match; kTlab blocks belong to active clients.
//
// REQUIRES: the heap is quiescent (no mutator running), e.g. after a multi-process test. On a
// live heap the block walk is still safe, but reference checks may report racing stores.
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

VerifyReport verify_heap(Metadata* m);

}  // namespace colors::detail
