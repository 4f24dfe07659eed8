// Repositories: named GC roots holding one reference each (the paper's findOrCreateRepository /
// get / set), which can be deleted.
//
// Records live in the classes space and are chained in Metadata::repository_buckets
// (kNameBuckets chains, bucket = name_hash(name) % kNameBuckets).
//
// Deletion and reuse. A record is never unlinked and never changes its name: deleting a
// repository makes its record a tombstone (generation even, root null) and creating the name
// again revives the same record with the next (odd) generation. So the classes space holds one
// small record per name ever used, and repeated create/delete of a name costs nothing more.
// A handle (RepoRef) carries the generation it was taken at; an operation through a handle
// whose generation is no longer the record's raises KeyError naming the repository: a handle
// never reaches the value of a later repository of the same name.
//
// Invariants:
//  * Chains are append-only (new records are pushed at the head) and every record is fully
//    written (name, root = null, generation 1, lock) before the release store that links it;
//    readers walk chains with acquire loads and no lock. Tombstones stay in their chain, so a
//    walker (a lookup, the collector's root scan) never loses its way.
//  * Creation and revival happen under Metadata::classes_lock and re-check the chain under it,
//    so a name maps to exactly one record for the life of the segment, in every process.
//  * generation changes only under the record's lock (and, for revival, classes_lock too):
//    odd -> even (delete: then the root is cleared through the barrier) and even -> odd
//    (revival, with the root null). set() stores only under the lock after checking the
//    generation, so no value is ever stored into a tombstone or into a later generation.
//  * get() is a seqlock read: generation, root, generation; both generation loads must equal
//    the handle's. The deletion bumps the generation before it clears the root, so a reader
//    that saw the cleared (or any later) root also sees the new generation.
//  * The root is replaced only through store_ref (the SATB deletion barrier), so a value
//    dropped by a deletion during a collector cycle is flagged like any overwritten one.
#pragma once
#include <atomic>
#include <cstdint>
#include <string_view>

#include "barrier.hpp"
#include "layout.hpp"
#include "roots.hpp"

namespace colors::detail {

struct RepoRef {
  RepositoryRecord* rec = nullptr;
  std::uint64_t generation = 0;
};

// The live repository called `name`, created (root = null) on first use or revived if it was
// deleted. Throws InvalidArgumentError for a bad name (empty, longer than kMaxNameLength,
// invalid UTF-8), OutOfMemoryError when the classes space is full.
RepoRef open_repository(Metadata* m, std::string_view name);
RepositoryRecord* find_or_create_repository(Metadata* m, std::string_view name);
// Lookup only; nullptr when no repository of that name exists (or it is deleted). Never blocks.
RepositoryRecord* find_repository(Metadata* m, std::string_view name);
// Deletes the repository called `name`: its value is dropped (no longer a root) and handles
// to it become stale. Returns false when there was no live repository of that name.
bool delete_repository(Metadata* m, std::string_view name);

inline bool repository_live(const RepositoryRecord* r) { return (r->generation.load(std::memory_order_acquire) & 1) != 0; }

// Handle operations; KeyError when the handle is stale (its repository was deleted).
// repository_load returns the value rooted (roots.hpp).
Rooted repository_load(const RepoRef& r);
void repository_store(const RepoRef& r, Word value);
// Throws KeyError naming the repository when `r` is stale.
void repository_check(const RepoRef& r);

// Unchecked access for internal users holding a record of a repository nobody deletes.
inline Word repository_get(const RepositoryRecord* r) { return r->root.load(std::memory_order_acquire); }
inline void repository_set(RepositoryRecord* r, Word value) { repository_store({r, r->generation.load(std::memory_order_acquire)}, value); }

// Visits every repository record, tombstones included (for the collector's root scan and the
// heap verifier: a tombstone's root is null). Lock-free; a repository created concurrently may
// or may not be visited (the collector relies on its snapshot argument: a new repository
// starts null).
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
