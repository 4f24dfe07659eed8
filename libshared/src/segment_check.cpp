#include "segment_check.hpp"

#include "format.hpp"
#include "pending_bits.hpp"
#include "segment.hpp"

namespace colors::detail {

namespace {

struct Fnv {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  void add(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 0x100000001b3ULL;
    }
  }
};

bool in_range(std::uint64_t p, std::uint64_t begin, std::uint64_t end) { return p >= begin && p < end; }

std::string mib(std::uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

std::uint64_t segment_header_checksum(const Metadata& h) {
  Fnv f;
  f.add(h.magic);
  f.add(h.layout_version);
  f.add(h.protocol_version);
  f.add(h.base);
  f.add(h.total_size);
  f.add(h.classes_begin);
  f.add(h.classes_end);
  f.add(h.objects_begin);
  f.add(h.objects_end);
  f.add(h.pending_bits_begin);
  f.add(h.pending_bits_end);
  f.add(h.heap_id);
  return f.h;
}

std::string check_segment_header(const Metadata& h, std::size_t file_size) {
  if (h.magic != kSegmentMagic)
    return "it is not a colors heap (magic " + hex(h.magic) + ", expected " + hex(kSegmentMagic) + ")";
  if (h.layout_version != kLayoutVersion)
    return "the heap has layout version " + std::to_string(h.layout_version) + ", this server uses layout version " +
           std::to_string(kLayoutVersion) + " (no migration exists: run a colors-server of layout version " +
           std::to_string(h.layout_version) + " on it, or start with --fresh-heap to discard it)";
  const std::uint64_t sum = segment_header_checksum(h);
  if (sum != h.header_checksum)
    return "the header checksum does not match (stored " + hex(h.header_checksum) + ", computed " + hex(sum) +
           "): the header was damaged";
  if (h.base == 0 || h.base % (1 << 16) != 0) return "the heap's base address " + hex(h.base) + " is not 64 KiB aligned";
  if (h.classes_begin != h.base + metadata_size())
    return "the classes space starts at " + hex(h.classes_begin) + ", not right after the metadata (" +
           hex(h.base + metadata_size()) + ")";
  if (h.classes_end <= h.classes_begin || h.classes_end - h.classes_begin < (1 << 20) ||
      (h.classes_end - h.classes_begin) % kGranule != 0)
    return "the classes space [" + hex(h.classes_begin) + ", " + hex(h.classes_end) + ") is not a valid size";
  if (h.objects_begin != h.classes_end) return "the objects space does not follow the classes space";
  if (h.objects_end <= h.objects_begin || h.objects_end - h.objects_begin < 4 * kTlabSize ||
      (h.objects_end - h.objects_begin) % kGranule != 0)
    return "the objects space [" + hex(h.objects_begin) + ", " + hex(h.objects_end) + ") is not a valid size";
  if (h.pending_bits_begin != h.objects_end ||
      h.pending_bits_end != h.pending_bits_begin + pending_bits_bytes(h.objects_end - h.objects_begin))
    return "the pending bitmap does not match the objects space";
  if (h.total_size != h.pending_bits_end - h.base)
    return "the recorded total size " + std::to_string(h.total_size) + " does not match its spaces (" +
           std::to_string(h.pending_bits_end - h.base) + ")";
  if (file_size < h.total_size)
    return "the file holds " + std::to_string(file_size) + " bytes, the heap needs " + std::to_string(h.total_size) +
           " (truncated)";
  return {};
}

std::string check_segment_metadata(const Metadata* m) {
  const std::uint64_t cb = m->classes_begin, ce = m->classes_end;
  const std::uint64_t top = m->classes_top.load(std::memory_order_relaxed);
  if (top < cb || top > ce) return "the classes space's bump pointer " + hex(top) + " lies outside the space";
  for (std::size_t k = 0; k < kTypeKindCount; ++k) {
    const ClassRecord* c = m->builtin[k];
    if (c == nullptr) continue;
    const auto p = reinterpret_cast<std::uint64_t>(c);
    if (!in_range(p, cb, top) || c->magic != kClassMagic)
      return "builtin class " + std::to_string(k) + " (" + hex(p) + ") is not a class record in the classes space";
  }
  const std::uint64_t tables[] = {reinterpret_cast<std::uint64_t>(m->class_buckets),
                                  reinterpret_cast<std::uint64_t>(m->repository_buckets),
                                  reinterpret_cast<std::uint64_t>(m->channel_buckets)};
  for (std::uint64_t t : tables)
    if (!in_range(t, cb, top)) return "a name table (" + hex(t) + ") lies outside the classes space";
  const std::uint64_t heap = m->objects_end - m->objects_begin;
  const std::uint64_t head = m->freelist_head.load(std::memory_order_relaxed);
  if (head != 0 && !in_range(head, m->objects_begin, m->objects_end))
    return "the freelist head " + hex(head) + " lies outside the objects space";
  if (m->free_bytes.load(std::memory_order_relaxed) > heap)
    return "the free byte count " + std::to_string(m->free_bytes.load(std::memory_order_relaxed)) +
           " exceeds the heap (" + mib(heap) + ")";
  const std::uint8_t epoch = m->gc_epoch.load(std::memory_order_relaxed);
  if (epoch == 0) return "the collector's epoch is 0 (it counts 1..255)";
  if (m->gc_phase.load(std::memory_order_relaxed) > static_cast<std::uint8_t>(GcPhase::kSweeping))
    return "unknown collector phase " + std::to_string(m->gc_phase.load(std::memory_order_relaxed));
  if (m->server_state.load(std::memory_order_relaxed) > static_cast<std::uint32_t>(ServerState::kAwaitingSuccessor))
    return "unknown server state " + std::to_string(m->server_state.load(std::memory_order_relaxed));
  for (std::uint32_t i = 0; i < kMaxClients; ++i) {
    const ClientSlot& s = m->clients[i];
    const std::uint32_t st = s.state.load(std::memory_order_relaxed);
    if (st > static_cast<std::uint32_t>(ClientState::kReclaiming))
      return "client slot " + std::to_string(i) + " has unknown state " + std::to_string(st);
    if (st == static_cast<std::uint32_t>(ClientState::kActive) &&
        (s.client_id.load(std::memory_order_relaxed) == 0 || s.pid.load(std::memory_order_relaxed) <= 0))
      return "client slot " + std::to_string(i) + " is active without a client id or pid";
  }
  return {};
}

std::string check_heap_tiling(const Metadata* m) {
  std::uintptr_t p = m->objects_begin;
  const std::uintptr_t end = m->objects_end;
  while (p < end) {
    const std::uint64_t w = header_at(p)->load(std::memory_order_relaxed);
    const std::size_t size = BlockHeader::size_of(w);
    const BlockKind k = BlockHeader::kind_of(w);
    if (k == BlockKind::kInvalid || static_cast<std::uint8_t>(k) > static_cast<std::uint8_t>(BlockKind::kObject))
      return "the block at " + hex(p) + " has an unknown kind (header word " + hex(w) + ")";
    if (size == 0 || size % kGranule != 0 || size > end - p)
      return "the block at " + hex(p) + " has an impossible size " + std::to_string(size) + " (header word " + hex(w) +
             "): the blocks do not tile the objects space";
    p += size;
  }
  return {};
}

}  // namespace colors::detail
