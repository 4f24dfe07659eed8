#include "heap_walk.hpp"

namespace colors::gc {

std::vector<Partition> compute_partitions(detail::Metadata* m, unsigned count) {
  std::vector<Partition> parts;
  const std::size_t total = m->objects_end - m->objects_begin;
  const std::size_t target = total / (count == 0 ? 1 : count) + 1;
  std::uintptr_t start = m->objects_begin;
  walk_blocks(m->objects_begin, m->objects_end, [&](std::uintptr_t p, std::uint64_t w) {
    std::uintptr_t next = p + detail::BlockHeader::size_of(w);
    if (next - start >= target && next < m->objects_end) {
      parts.push_back({start, next});
      start = next;
    }
  });
  parts.push_back({start, m->objects_end});
  return parts;
}

}  // namespace colors::gc
