#include "repository.hpp"

#include "transaction.hpp"

#include <string>

#include "classes.hpp"
#include "colors/errors.hpp"
#include "robust_mutex.hpp"

namespace colors::detail {

namespace {

RepositoryRecord* find_in_chain(RepositoryRecord* r, std::string_view name) {
  for (; r != nullptr; r = r->next_in_bucket.load(std::memory_order_acquire)) {
    if (name_view(r->name) == name) return r;
  }
  return nullptr;
}

[[noreturn]] void throw_stale(const RepositoryRecord* r) {
  throw KeyError("repository '" + std::string(name_view(r->name)) +
                 "' was deleted: this handle no longer refers to it (open the repository again by name to "
                 "use a repository created since)");
}

}  // namespace

RepositoryRecord* find_repository(Metadata* m, std::string_view name) {
  const std::uint32_t h = name_hash(name);
  RepositoryRecord* r = find_in_chain(m->repository_buckets[h % kNameBuckets].load(std::memory_order_acquire), name);
  return r != nullptr && repository_live(r) ? r : nullptr;
}

RepoRef open_repository(Metadata* m, std::string_view name) {
  check_name(name, "repository name");
  const std::uint32_t h = name_hash(name);
  std::atomic<RepositoryRecord*>& bucket = m->repository_buckets[h % kNameBuckets];
  if (RepositoryRecord* r = find_in_chain(bucket.load(std::memory_order_acquire), name)) {
    const std::uint64_t g = r->generation.load(std::memory_order_acquire);
    if ((g & 1) != 0) return {r, g};
  }

  // A holder of classes_lock that died leaves at most unreachable bytes (nothing is linked
  // before it is complete), so lock()'s owner-died report needs no repair here.
  RobustLockGuard g(m->classes_lock);
  RepositoryRecord* head = bucket.load(std::memory_order_acquire);
  if (RepositoryRecord* r = find_in_chain(head, name)) {  // created meanwhile, or a tombstone
    RobustLockGuard rl(r->lock);
    std::uint64_t gen = r->generation.load(std::memory_order_relaxed);
    if ((gen & 1) == 0) {
      // Revival. The deletion cleared the root, unless it died between its two stores.
      store_ref(&r->root, kNull);
      ++gen;
      r->generation.store(gen, std::memory_order_release);
    }
    return {r, gen};
  }
  auto* r = static_cast<RepositoryRecord*>(classes_alloc(m, sizeof(RepositoryRecord)));  // zero-filled
  r->name = make_name(m, name);
  r->root.store(kNull, std::memory_order_relaxed);
  r->generation.store(1, std::memory_order_relaxed);
  r->lock.init();
  r->next_in_bucket.store(head, std::memory_order_relaxed);
  bucket.store(r, std::memory_order_release);  // publication point
  return {r, 1};
}

RepositoryRecord* find_or_create_repository(Metadata* m, std::string_view name) { return open_repository(m, name).rec; }

bool delete_repository(Metadata* m, std::string_view name) {
  tx_refuse("deleting a repository");
  check_name(name, "repository name");
  const std::uint32_t h = name_hash(name);
  RepositoryRecord* r = find_in_chain(m->repository_buckets[h % kNameBuckets].load(std::memory_order_acquire), name);
  if (r == nullptr) return false;
  // classes_lock orders this against a revival of the same name (lock order: classes_lock, then
  // the record's lock).
  RobustLockGuard g(m->classes_lock);
  RobustLockGuard rl(r->lock);
  const std::uint64_t gen = r->generation.load(std::memory_order_relaxed);
  if ((gen & 1) == 0) return false;
  // Generation first, then the root (the seqlock order get() relies on). A death between the
  // two leaves a tombstone holding a value: kept alive until the name is revived, which clears it.
  r->generation.store(gen + 1, std::memory_order_seq_cst);
  store_ref(&r->root, kNull);  // the deletion barrier flags the dropped value
  return true;
}

void repository_check(const RepoRef& r) {
  if (r.rec->generation.load(std::memory_order_acquire) != r.generation) throw_stale(r.rec);
}

Rooted repository_load(const RepoRef& r) {
  repository_check(r);
  Rooted v = read_slot_rooted(r.rec, &r.rec->root);
  // Seqlock validation: root_load's last read is an acquire load (after root_fence).
  std::atomic_thread_fence(std::memory_order_acquire);
  if (r.rec->generation.load(std::memory_order_seq_cst) != r.generation) throw_stale(r.rec);  // v is released
  return v;
}

void repository_store(const RepoRef& r, Word value) {
  // A transaction takes the record's orec before its lock (the lock order of transaction.hpp).
  TxContainerScope tx(r.rec, TxAccess::kWrite);
  RobustLockGuard rl(r.rec->lock);  // a holder that died left the record consistent: single stores
  const std::uint64_t gen = r.rec->generation.load(std::memory_order_relaxed);
  if (gen != r.generation || (gen & 1) == 0) throw_stale(r.rec);
  write_slot(r.rec, &r.rec->root, value);
}

}  // namespace colors::detail
