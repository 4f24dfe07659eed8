// What a successor server does with the collector state a server that died left in the segment
// (gc/README.md, "A server that dies mid-cycle").
#pragma once
#include <string>

#include "layout.hpp"

namespace colors::gc {

// Brings the collector's state in the segment to "no cycle running": a cycle that died while
// marking is abandoned (its marks are stale for the next epoch), a cycle that died while sweeping
// is swept to its end with its own epoch (its marking had terminated), a statistics seqlock left
// odd is closed. Returns what it did, for the log.
// REQUIRES: no collector runs on the segment (the caller is about to start one); mutators may run.
std::string recover_interrupted_cycle(detail::Metadata* m, unsigned threads);

}  // namespace colors::gc
