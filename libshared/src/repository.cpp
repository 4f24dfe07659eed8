#include "repository.hpp"

#include "classes.hpp"
#include "robust_mutex.hpp"

namespace colors::detail {

namespace {

RepositoryRecord* find_in_chain(RepositoryRecord* r, std::string_view name) {
  for (; r != nullptr; r = r->next_in_bucket.load(std::memory_order_acquire)) {
    if (name_view(r->name) == name) return r;
  }
  return nullptr;
}

}  // namespace

RepositoryRecord* find_repository(Metadata* m, std::string_view name) {
  const std::uint32_t h = name_hash(name);
  return find_in_chain(m->repository_buckets[h % kNameBuckets].load(std::memory_order_acquire), name);
}

RepositoryRecord* find_or_create_repository(Metadata* m, std::string_view name) {
  check_name(name, "repository name");
  const std::uint32_t h = name_hash(name);
  std::atomic<RepositoryRecord*>& bucket = m->repository_buckets[h % kNameBuckets];
  if (RepositoryRecord* r = find_in_chain(bucket.load(std::memory_order_acquire), name)) return r;

  // A holder of classes_lock that died leaves at most unreachable bytes (nothing is linked
  // before it is complete), so lock()'s owner-died report needs no repair here.
  RobustLockGuard g(m->classes_lock);
  RepositoryRecord* head = bucket.load(std::memory_order_acquire);
  if (RepositoryRecord* r = find_in_chain(head, name)) return r;  // created meanwhile
  auto* r = static_cast<RepositoryRecord*>(classes_alloc(m, sizeof(RepositoryRecord)));  // zero-filled
  r->name = make_name(m, name);
  r->root.store(kNull, std::memory_order_relaxed);
  r->next_in_bucket.store(head, std::memory_order_relaxed);
  bucket.store(r, std::memory_order_release);  // publication point
  return r;
}

}  // namespace colors::detail
