// Checks a successor server runs on a heap left by a server that is gone, before it adopts it
// (colors-server/README.md, "Surviving the server"). Each returns an empty string when the check
// passes, else what failed, phrased for a log line ("the heap has layout version 5, ...").
//
// Order of use: check_segment_header on a copy of the header read from the file (nothing is
// mapped yet, so a damaged header cannot make the server map the wrong range), then, once mapped,
// check_segment_metadata (pointers and counters of the metadata lie where the header says) and
// check_heap_tiling (the blocks tile the objects space, read-only). The full heap verifier
// (verifier.hpp) runs after them. None of these writes to the heap.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "layout.hpp"

namespace colors::detail {

// The checksum of the header's immutable fields (magic .. heap_id), as Metadata::header_checksum
// stores it: FNV-1a over their values.
std::uint64_t segment_header_checksum(const Metadata& h);

// Magic, layout version (naming both versions), the header checksum and the geometry: the spaces
// follow each other as formatting laid them out, and the file holds all of them.
std::string check_segment_header(const Metadata& h, std::size_t file_size);

// After mapping: the metadata's own pointers (bump pointer, builtin classes, name tables,
// freelist head) lie in their spaces, counters fit the heap, and enumerations (server state,
// collector phase, client slot states) have known values.
std::string check_segment_metadata(const Metadata* m);

// Walks the objects space by block headers only: every size is a non-zero multiple of the
// granule, every kind known, and the last block ends at the end of the space.
std::string check_heap_tiling(const Metadata* m);

}  // namespace colors::detail
