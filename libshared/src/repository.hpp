// Repositories: named, permanent GC roots holding one reference each (the paper's
// findOrCreateRepository / get / set).
//
// Records live in the classes space (immortal) and are chained in Metadata::repository_buckets
// (kNameBuckets chains, bucket = name_hash(name) % kNameBuckets).
//
// Invariants:
//  * Chains are append-only (new records are pushed at the head) and every record is fully
//    written (name, root = null) before the release store that links it; readers walk chains
//    with acquire loads and no lock.
//  * Creation happens under Metadata::classes_lock and re-checks the chain under the lock, so a
//    name maps to exactly one record for the life of the segment, in every process.
//  * The root is replaced only through store_ref (the SATB deletion barrier).
#pragma once
#include <atomic>
#include <string_view>

#include "barrier.hpp"
#include "layout.hpp"

namespace colors::detail {

// The repository called `name`, created (root = null) on first use. Throws InvalidArgumentError
// for a bad name (empty, longer than kMaxNameLength, invalid UTF-8), OutOfMemoryError when the
// classes space is full.
RepositoryRecord* find_or_create_repository(Metadata* m, std::string_view name);
// Lookup only; nullptr when no repository of that name exists yet. Never blocks.
RepositoryRecord* find_repository(Metadata* m, std::string_view name);

inline Word repository_get(const RepositoryRecord* r) { return r->root.load(std::memory_order_acquire); }
inline void repository_set(RepositoryRecord* r, Word value) { store_ref(&r->root, value); }

// Visits every repository (for the collector's root scan and the heap verifier). Lock-free; a
// repository created concurrently may or may not be visited (the collector relies on its
// snapshot argument: a new repository starts null).
template <typename F>
void for_each_repository(Metadata* m, F&& f) {
  for (std::size_t b = 0; b < kNameBuckets; ++b) {
    for (RepositoryRecord* r = m->repository_buckets[b].load(std::memory_order_acquire); r != nullptr;
         r = r->next_in_bucket.load(std::memory_order_acquire)) {
      f(r);
    }
  }
}

}  // namespace colors::detail
