// What a segment restored from a checkpoint needs before a server adopts it: the checkpoint
// captured the segment at one instant with its clients stopped (colors-server/freezer.hpp), so it
// is the segment of a moment when every client died at once, except for what the kernel would
// have done at those deaths. The one thing it does is mark robust mutexes held by a dead thread
// (robust_mutex.hpp): here nobody will, since the threads lived in another boot or another heap.
#pragma once
#include <cstddef>

#include "layout.hpp"

namespace colors::detail {

// Marks every held robust mutex of the segment (the metadata's locks, the monitor table, the
// repositories' and channels' locks) as its holder's death would; returns how many were held.
// REQUIRES: the segment is mapped by the calling process only, before any adoption step.
std::size_t mark_restored_lock_holders_dead(Metadata* m);

}  // namespace colors::detail
