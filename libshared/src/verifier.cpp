#include "verifier.hpp"

#include <cstdio>
#include <unordered_set>

#include "classes.hpp"
#include "format.hpp"
#include "heap.hpp"
#include "objects.hpp"
#include "pending_bits.hpp"
#include "robust_mutex.hpp"
#include "sorted_map.hpp"

namespace colors::detail {

namespace {

struct Checker {
  Metadata* m;
  VerifyReport& r;
  bool concurrent;
  std::unordered_set<std::uint64_t> objects;  // starts of kObject blocks

  void error(const std::string& e) {
    if (r.errors.size() < 100) r.errors.push_back(e);
  }

  void check_word(Word w, const std::string& where) {
    if (w == kNull || is_small_int(w) || is_bool(w) || is_small_float(w)) return;
    if ((w & 15) != 0) {
      error(where + ": invalid tagged word " + hex(w));
      return;
    }
    if (objects.count(w) != 0) return;
    // Concurrent mode: an object published after the walk passed its address is fine, and so is
    // a block still reserved (kTlab at that address): allocation roots a block before it
    // publishes it, so a root table may hold it for a moment.
    if (concurrent && w >= m->objects_begin && w < m->objects_end) {
      BlockKind k = BlockHeader::kind_of(header_at(w)->load());
      if (k == BlockKind::kObject || k == BlockKind::kTlab) return;
    }
    error(where + ": reference " + hex(w) + " is not a live object");
  }

  // Whether check_word would find nothing wrong with `w`: the common case, decided before any
  // message is built (a heap of large int arrays otherwise costs a string per slot).
  bool word_ok(Word w) const {
    if (w == kNull || is_small_int(w) || is_bool(w) || is_small_float(w)) return true;
    return (w & 15) == 0 && objects.count(w) != 0;
  }

  void check_slots(std::atomic<Word>* s, std::size_t n, const std::string& where) {
    for (std::size_t i = 0; i < n; ++i) {
      const Word w = s[i].load(std::memory_order_acquire);
      if (!word_ok(w)) check_word(w, where + "[" + std::to_string(i) + "]");
    }
  }

  // A name kept in the classes space (empty only where `may_be_empty`).
  bool name_ok(const NameRef& n, bool may_be_empty) const {
    if (n.len == 0) return may_be_empty;
    return n.len <= kMaxNameLength && n.ptr >= m->classes_begin && n.ptr <= m->classes_end - n.len;
  }

  // A user class version (layout.hpp, ClassRecord and FieldInfo): its entries inside the classes
  // space, names there too, field types and flags known, and every slot below slot_count and
  // held by one entry only, the invariant that keeps a store resolved from an older version
  // inside its own field.
  void check_class(const ClassRecord* c, const std::string& at) {
    const auto end = reinterpret_cast<std::uint64_t>(c->fields) + std::uint64_t{c->field_count} * sizeof(FieldInfo);
    if (end > m->classes_end) {
      error(at + ": " + std::to_string(c->field_count) + " fields run past the classes space");
      return;
    }
    std::unordered_set<std::uint32_t> slots;
    for (std::uint32_t i = 0; i < c->field_count; ++i) {
      const FieldInfo& f = c->fields[i];
      if (!name_ok(f.name, false)) {
        error(at + ": field " + std::to_string(i) + " has a malformed name");
        continue;
      }
      const std::string fat = at + " field '" + std::string(name_view(f.name)) + "'";
      if (static_cast<int>(f.type) > static_cast<int>(TypeKind::kObject) && f.type != TypeKind::kSortedMap)
        error(fat + ": type " + std::to_string(static_cast<int>(f.type)) + " is no field type");
      if ((f.flags & ~kFieldDeleted) != 0) error(fat + ": unknown flags " + std::to_string(f.flags));
      if (!name_ok(f.class_name, true)) error(fat + ": malformed class name");
      if (f.slot >= c->slot_count) {
        error(fat + ": slot " + std::to_string(f.slot) + " is not below the class's " + std::to_string(c->slot_count));
      } else if (!slots.insert(f.slot).second) {
        error(fat + ": slot " + std::to_string(f.slot) + " is held by another entry too");
      }
    }
  }

  // Every class family's version list: records, their family and numbering, each version's fields.
  void check_classes() {
    for (std::size_t b = 0; b < kNameBuckets; ++b) {
      for (ClassFamily* f = m->class_buckets[b].load(); f != nullptr; f = f->next_in_bucket.load()) {
        if (!name_ok(f->name, false)) {
          error("class family " + hex(reinterpret_cast<std::uint64_t>(f)) + ": malformed name");
          continue;
        }
        const std::string fam = "class " + std::string(name_view(f->name));
        std::uint32_t version = 0;
        for (ClassRecord* c = f->first.load(); c != nullptr; c = c->next_version.load()) {
          const std::string at = fam + " version " + std::to_string(++version);
          if (!is_class_record(m, c) || version > kMaxClassVersions) {
            error(at + ": not a class record, or more versions than a class may have");
            break;
          }
          if (c->family != f || c->version != version || c->kind != TypeKind::kObject)
            error(at + ": record names another family, version or kind");
          check_class(c, at);
        }
      }
    }
  }

  void check_object(std::uint64_t p, std::size_t size) {
    auto* o = reinterpret_cast<ObjectHead*>(p);
    ClassRecord* c = o->cls.load(std::memory_order_acquire);
    std::string at = "object " + hex(p);
    if (!is_class_record(m, c)) {
      error(at + ": class pointer " + hex(reinterpret_cast<std::uint64_t>(c)) + " is not a class record");
      return;
    }
    auto need = [&](std::size_t payload, const char* what) {
      if (object_bytes(payload) > size) error(at + ": " + what + " does not fit its block of " + std::to_string(size));
    };
    switch (c->kind) {
      case TypeKind::kInteger: need(8 + 8, "integer"); break;
      case TypeKind::kFloat: need(8 + 8, "float"); break;
      case TypeKind::kString:
        if (reinterpret_cast<StringObject*>(p)->length > size - sizeof(StringObject)) error(at + ": string does not fit its block");
        break;
      case TypeKind::kBinary:
        if (reinterpret_cast<BinaryObject*>(p)->length > size - sizeof(BinaryObject)) error(at + ": binary does not fit its block");
        break;
      case TypeKind::kArray:
      case TypeKind::kExtension:
      case TypeKind::kRootChunk: {
        auto* a = reinterpret_cast<ArrayObject*>(p);
        // Compare counts, never computed sizes: a corrupt capacity must not overflow.
        if (a->capacity > (size - sizeof(ArrayObject)) / sizeof(Word)) {
          error(at + ": array capacity " + std::to_string(a->capacity) + " does not fit its block of " + std::to_string(size));
          break;
        }
        check_slots(a->slots, a->capacity, at);
        break;
      }
      case TypeKind::kList: {
        auto* l = reinterpret_cast<ListObject*>(p);
        Word a = l->array.load();
        check_word(a, at + ".array");
        if (a != kNull && objects.count(a) && class_of(a)->kind != TypeKind::kArray) error(at + ": list storage is not an array");
        if (a == kNull && l->size.load() != 0) error(at + ": list has size but no storage");
        if (a != kNull && objects.count(a) && l->size.load() > reinterpret_cast<ArrayObject*>(a)->capacity)
          error(at + ": list size exceeds its storage");
        break;
      }
      case TypeKind::kSet:
      case TypeKind::kMap: {
        Word t = reinterpret_cast<HashObject*>(p)->table.load();
        check_word(t, at + ".table");
        if (t != kNull && objects.count(t) && class_of(t)->kind != TypeKind::kTable) error(at + ": hash storage is not a table");
        break;
      }
      case TypeKind::kSortedMap: {
        Word root = reinterpret_cast<SortedMapObject*>(p)->root.load();
        check_word(root, at + ".root");
        if (root != kNull && objects.count(root) && class_of(root)->kind != TypeKind::kArray) error(at + ": sorted map root is not an array");
        // The tree itself only when quiescent: a racing operation replaces nodes while we walk.
        if (!concurrent && (root == kNull || objects.count(root))) {
          std::vector<std::string> found;
          sorted_verify(p, [this](Word w) { return objects.count(w) != 0; }, &found);
          for (auto& e : found) error(e);
        }
        break;
      }
      case TypeKind::kTable: {
        auto* t = reinterpret_cast<TableObject*>(p);
        if (t->capacity > (size - sizeof(TableObject)) / sizeof(TableEntry)) {
          error(at + ": table capacity " + std::to_string(t->capacity) + " does not fit its block of " + std::to_string(size));
          break;
        }
        if ((t->capacity & (t->capacity - 1)) != 0) error(at + ": table capacity is not a power of two");
        for (std::size_t i = 0; i < t->capacity; ++i) {
          Word k = t->entries[i].key.load();
          if (k != kTombstone && k != kNullKey && !word_ok(k)) check_word(k, at + ".key[" + std::to_string(i) + "]");
          const Word v = t->entries[i].value.load();
          if (!word_ok(v)) check_word(v, at + ".value[" + std::to_string(i) + "]");
        }
        break;
      }
      case TypeKind::kObject: {
        auto* u = reinterpret_cast<UserObject*>(p);
        std::size_t n = (size - sizeof(UserObject)) / 8;
        check_slots(u->slots, n, at);
        Word ext = u->extension.load();
        check_word(ext, at + ".extension");
        // The fields the extension chain holds (layout.hpp, UserObject), following links only to
        // objects found in the walk; each link is also checked as a slot of its array.
        std::size_t ext_cap = 0;
        for (std::size_t chain = 0; ext != kNull && objects.count(ext) && kind_of(ext) == TypeKind::kExtension; ++chain) {
          auto* a = reinterpret_cast<ArrayObject*>(ext);
          if (a->capacity < 1 || chain > 64) {
            error(at + ".extension: malformed chain");
            break;
          }
          ext_cap += a->capacity - 1;
          ext = a->slots[a->capacity - 1].load();
        }
        // Concurrent mode: a racing schema change publishes the extension before the class.
        if (!concurrent && c->slot_count > n + ext_cap) error(at + ": class needs " + std::to_string(c->slot_count) + " slots, object has " + std::to_string(n + ext_cap));
        break;
      }
      default: error(at + ": unexpected class kind " + std::string(type_name(c->kind)));
    }
  }
};

}  // namespace

std::string VerifyReport::summary() const {
  std::string s = std::to_string(blocks) + " blocks: " + std::to_string(objects) + " objects (" + std::to_string(object_bytes) +
                  " B), " + std::to_string(free_blocks) + " free (" + std::to_string(free_bytes) + " B), " +
                  std::to_string(filler_blocks) + " filler (" + std::to_string(filler_bytes) + " B), " +
                  std::to_string(tlab_blocks) + " tlab (" + std::to_string(tlab_bytes) + " B); " +
                  std::to_string(errors.size()) + " errors";
  for (const auto& e : errors) s += "\n  " + e;
  return s;
}

VerifyReport verify_heap(Metadata* m, VerifyMode mode) {
  RobustLockGuard g(m->gc_cycle_lock);
  return verify_heap_locked(m, mode);
}

VerifyReport verify_heap_locked(Metadata* m, VerifyMode mode) {
  VerifyReport r;
  const bool concurrent = mode == VerifyMode::kConcurrent;
  Checker ck{m, r, concurrent, {}};
  std::unordered_set<std::uint64_t> free_blocks;
  std::vector<std::pair<std::uint64_t, std::size_t>> objs;
  const PendingBits pb = pending_bits_of(m);
  // Pass 1: tiling and kinds.
  std::uint64_t p = m->objects_begin;
  while (p < m->objects_end) {
    BlockHeader* h = header_at(p);
    std::uint64_t w = h->load();
    std::size_t size = BlockHeader::size_of(w);
    BlockKind kind = BlockHeader::kind_of(w);
    if (size == 0 || size % kGranule != 0 || p + size > m->objects_end) {
      ck.error("block " + hex(p) + ": bad size " + std::to_string(size) + "; heap walk stops here");
      break;
    }
    ++r.blocks;
    // The pending set names object starts only (pending_bits.hpp): free and filler blocks and
    // object interiors have no bit; a TLAB may hold a reserved block's. A quiescent heap only:
    // concurrently, an object carved after this walk passed its chunk may be flagged.
    if (!concurrent && (kind == BlockKind::kFree || kind == BlockKind::kFiller || kind == BlockKind::kObject)) {
      const std::uintptr_t from = kind == BlockKind::kObject ? p + kGranule : p;
      if (std::uintptr_t b = find_pending_bit(pb, from, p + size); b != 0)
        ck.error("block " + hex(p) + " (" + std::to_string(size) + " B, kind " + std::to_string(static_cast<int>(kind)) +
                 "): pending bit set at " + hex(b) + ", which is no object's start");
    }
    switch (kind) {
      case BlockKind::kObject: ++r.objects; r.object_bytes += size; ck.objects.insert(p); objs.push_back({p, size}); break;
      case BlockKind::kFree: ++r.free_blocks; r.free_bytes += size; free_blocks.insert(p); break;
      case BlockKind::kFiller: ++r.filler_blocks; r.filler_bytes += size; break;
      case BlockKind::kTlab: {
        ++r.tlab_blocks;
        r.tlab_bytes += size;
        std::uint32_t owner = h->owner.load();
        bool active = false;
        for (const ClientSlot& cs : m->clients) {
          if (cs.state.load() == static_cast<std::uint32_t>(ClientState::kActive) && cs.client_id.load() == owner) active = true;
        }
        if (!active && !concurrent) ck.error("TLAB " + hex(p) + " belongs to client " + std::to_string(owner) + " which is not attached");
        break;
      }
      default: ck.error("block " + hex(p) + ": invalid kind " + std::to_string(static_cast<int>(kind)));
    }
    p += size;
  }
  if (p != m->objects_end && r.errors.empty()) ck.error("blocks end at " + hex(p) + ", not at the end of the objects space");
  // Pass 2: object contents and references, and the classes they name.
  ck.check_classes();
  for (auto [o, size] : objs) ck.check_object(o, size);
  // Roots.
  for (std::size_t b = 0; b < kNameBuckets; ++b) {
    for (RepositoryRecord* r2 = m->repository_buckets[b].load(); r2 != nullptr; r2 = r2->next_in_bucket.load())
      ck.check_word(r2->root.load(), "repository " + std::string(name_view(r2->name)));
    for (ChannelRecord* c = m->channel_buckets[b].load(); c != nullptr; c = c->next_in_bucket.load()) {
      // The whole slot block, as the collector scans it (channel.hpp); a deleted channel has none.
      std::atomic<Word>* slots = c->slots.load();
      if (slots == nullptr) continue;
      const std::string at = "channel " + std::string(name_view(c->name));
      if ((reinterpret_cast<SlotBlockHeader*>(slots) - 1)->magic != kSlotBlockMagic) {
        ck.error(at + ": its slots are not a slot block");
        continue;
      }
      if (c->capacity.load() > slot_block_capacity(slots)) ck.error(at + ": capacity exceeds its slot block");
      ck.check_slots(slots, slot_block_capacity(slots), at);
    }
  }
  for (std::size_t i = 0; i < kMaxClients; ++i) ck.check_word(m->clients[i].roots.load(), "client slot " + std::to_string(i) + " roots");
  // Freelist, under heap_lock: its structure and counters are consistent whenever it is free.
  HeapLockGuard hl(m);
  std::size_t n = 0, bytes = 0;
  std::unordered_set<std::uint64_t> seen;
  std::uint64_t prev = 0;
  for (std::uint64_t f = m->freelist_head.load(); f != 0; f = reinterpret_cast<std::atomic<std::uint64_t>*>(header_at(f)->payload())->load()) {
    if (f < m->objects_begin || f >= m->objects_end || BlockHeader::kind_of(header_at(f)->load()) != BlockKind::kFree) {
      ck.error("freelist entry " + hex(f) + " is not a free block");
      break;
    }
    if (!seen.insert(f).second) {
      ck.error("freelist has a cycle at " + hex(f));
      break;
    }
    if (reinterpret_cast<std::atomic<std::uint64_t>*>(header_at(f)->payload() + 8)->load() != prev)
      ck.error("freelist entry " + hex(f) + " has a wrong back link");
    prev = f;
    std::size_t size = BlockHeader::size_of(header_at(f)->load());
    if (size < kTlabSize) ck.error("freelist entry " + hex(f) + " is smaller than a TLAB");
    ++n;
    bytes += size;
  }
  // The walk above saw the heap at other instants than this list: compare only when quiescent.
  if (!concurrent && n != free_blocks.size())
    ck.error(std::to_string(free_blocks.size()) + " free blocks in the heap, " + std::to_string(n) + " on the freelist");
  if (n != m->free_chunks.load() || bytes != m->free_bytes.load())
    ck.error("freelist counters say " + std::to_string(m->free_chunks.load()) + " chunks / " + std::to_string(m->free_bytes.load()) +
             " bytes, list has " + std::to_string(n) + " / " + std::to_string(bytes));
  return r;
}

}  // namespace colors::detail
