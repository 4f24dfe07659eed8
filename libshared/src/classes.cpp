#include "classes.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "colors/errors.hpp"

namespace colors::detail {

void* classes_alloc(Metadata* m, std::size_t bytes) {
  bytes = round_up(bytes, kGranule);
  std::uint64_t top = m->classes_top.load(std::memory_order_relaxed);
  if (top + bytes > m->classes_end) {
    throw OutOfMemoryError("classes space exhausted (" + std::to_string(m->classes_end - m->classes_begin) +
                           " bytes): restart colors-server with a larger --classes-size");
  }
  // Zero-filled already: the space is fresh shm pages and never reused.
  m->classes_top.store(top + bytes, std::memory_order_relaxed);
  return reinterpret_cast<void*>(top);
}

namespace {

unsigned slot_class(std::uint32_t slots) {
  unsigned k = 0;
  while ((std::uint64_t{1} << k) < slots) ++k;
  return k;
}

}  // namespace

std::atomic<Word>* slot_block_alloc(Metadata* m, std::uint32_t slots) {
  const unsigned k = slot_class(slots);
  if (k >= kSlotClasses) throw InvalidArgumentError("slot block of " + std::to_string(slots) + " slots is too large");
  if (const std::uint64_t f = m->slot_free[k].load(std::memory_order_relaxed)) {
    auto* h = reinterpret_cast<SlotBlockHeader*>(f);
    m->slot_free[k].store(h->next_free.load(std::memory_order_relaxed), std::memory_order_relaxed);
    h->next_free.store(0, std::memory_order_relaxed);
    return reinterpret_cast<std::atomic<Word>*>(h + 1);  // null: slot_block_free's precondition
  }
  static_assert(sizeof(SlotBlockHeader) == 64);
  const std::uint64_t cap = std::uint64_t{1} << k;
  // 48 bytes of slack: classes_alloc aligns to 16, the payload needs 64.
  const auto raw = reinterpret_cast<std::uintptr_t>(classes_alloc(m, sizeof(SlotBlockHeader) + 48 + cap * sizeof(Word)));
  auto* h = reinterpret_cast<SlotBlockHeader*>(round_up(raw + sizeof(SlotBlockHeader), 64) - sizeof(SlotBlockHeader));
  h->magic = kSlotBlockMagic;
  h->capacity = cap;
  return reinterpret_cast<std::atomic<Word>*>(h + 1);  // zero-filled: every slot null
}

void slot_block_free(Metadata* m, std::atomic<Word>* payload) {
  auto* h = reinterpret_cast<SlotBlockHeader*>(payload) - 1;
  const unsigned k = slot_class(static_cast<std::uint32_t>(h->capacity));
  h->next_free.store(m->slot_free[k].load(std::memory_order_relaxed), std::memory_order_relaxed);
  m->slot_free[k].store(reinterpret_cast<std::uint64_t>(h), std::memory_order_relaxed);
}

std::uint32_t name_hash(std::string_view s) {
  std::uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

bool valid_utf8_full(std::string_view s) {
  std::size_t i = 0;
  const std::size_t n = s.size();
  while (i < n) {
    // Eight ASCII bytes at a time (no high bit set): most strings are ASCII throughout.
    if (n - i >= 8) {
      std::uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      if ((w & 0x8080808080808080ULL) == 0) {
        i += 8;
        continue;
      }
    }
    unsigned char c = static_cast<unsigned char>(s[i]);
    std::size_t extra;
    std::uint32_t cp;
    if (c < 0x80) { ++i; continue; }
    if ((c >> 5) == 0x6) { extra = 1; cp = c & 0x1f; }
    else if ((c >> 4) == 0xe) { extra = 2; cp = c & 0x0f; }
    else if ((c >> 3) == 0x1e) { extra = 3; cp = c & 0x07; }
    else return false;
    if (i + extra >= n) return false;
    for (std::size_t k = 1; k <= extra; ++k) {
      unsigned char d = static_cast<unsigned char>(s[i + k]);
      if ((d >> 6) != 0x2) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    // Reject overlong forms, surrogates and values past U+10FFFF.
    if ((extra == 1 && cp < 0x80) || (extra == 2 && cp < 0x800) || (extra == 3 && cp < 0x10000)) return false;
    if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += extra + 1;
  }
  return true;
}

void check_name(std::string_view s, const char* what) {
  if (s.empty() || s.size() > kMaxNameLength)
    throw InvalidArgumentError(std::string(what) + " must be 1 to " + std::to_string(kMaxNameLength) +
                               " bytes long, got " + std::to_string(s.size()));
  if (!is_valid_utf8(s)) throw InvalidArgumentError(std::string(what) + " is not valid UTF-8");
  if (s.find('\0') != std::string_view::npos) throw InvalidArgumentError(std::string(what) + " contains a NUL byte");
}

NameRef make_name(Metadata* m, std::string_view s) {
  NameRef n{};
  if (!s.empty()) {
    char* p = static_cast<char*>(classes_alloc(m, s.size()));
    std::memcpy(p, s.data(), s.size());
    n.ptr = reinterpret_cast<std::uint64_t>(p);
  }
  n.len = static_cast<std::uint32_t>(s.size());
  n.hash = name_hash(s);
  return n;
}

std::string_view name_view(const NameRef& n) {
  return n.len == 0 ? std::string_view() : std::string_view(reinterpret_cast<const char*>(n.ptr), n.len);
}

static ClassRecord* new_record(Metadata* m, TypeKind kind, NameRef name, std::uint32_t nfields) {
  auto* c = static_cast<ClassRecord*>(classes_alloc(m, sizeof(ClassRecord) + nfields * sizeof(FieldInfo)));
  c->magic = kClassMagic;
  c->kind = kind;
  c->name = name;
  c->field_count = nfields;
  return c;
}

void init_classes_space(Metadata* m) {
  auto buckets = [m] {
    return static_cast<std::atomic<void*>*>(classes_alloc(m, kNameBuckets * sizeof(std::atomic<void*>)));
  };
  m->class_buckets = reinterpret_cast<std::atomic<ClassFamily*>*>(buckets());
  m->repository_buckets = reinterpret_cast<std::atomic<RepositoryRecord*>*>(buckets());
  m->channel_buckets = reinterpret_cast<std::atomic<ChannelRecord*>*>(buckets());
  for (int k = 0; k < kTypeKindCount; ++k) {
    auto kind = static_cast<TypeKind>(k);
    if (kind == TypeKind::kAny || kind == TypeKind::kObject || kind == TypeKind::kNull) continue;
    ClassRecord* c = new_record(m, kind, make_name(m, type_name(kind)), 0);
    c->version = 1;
    m->builtin[k] = c;
  }
}

bool is_class_record(Metadata* m, const void* p) {
  auto a = reinterpret_cast<std::uintptr_t>(p);
  return a >= m->classes_begin && a + sizeof(ClassRecord) <= m->classes_end && a % kGranule == 0 &&
         static_cast<const ClassRecord*>(p)->magic == kClassMagic;
}

ClassFamily* find_family(Metadata* m, std::string_view name) {
  std::uint32_t h = name_hash(name);
  for (ClassFamily* f = m->class_buckets[h % kNameBuckets].load(std::memory_order_acquire); f != nullptr;
       f = f->next_in_bucket.load(std::memory_order_acquire)) {
    if (f->name.hash == h && name_view(f->name) == name) return f;
  }
  return nullptr;
}

const FieldInfo* find_field(const ClassRecord* c, std::string_view name) {
  for (std::uint32_t i = 0; i < c->field_count; ++i) {
    const FieldInfo& f = c->fields[i];
    if (!f.deleted() && name_view(f.name) == name) return &f;
  }
  return nullptr;
}

namespace {

// A field layout being looked up or created: (spec, slot, deleted) entries (FieldInfo).
// An entry carried over from an existing version keeps that version's names (`name`, and
// `class_name` unless the class it names has been defined since), so versions share them.
struct Wanted {
  FieldSpec spec;
  std::uint32_t slot;
  bool deleted = false;
  NameRef name{};        // len 0: none carried
  NameRef class_name{};  // used when `name` is carried
};

std::uint32_t live_fields(const ClassRecord* c) {
  std::uint32_t n = 0;
  for (std::uint32_t i = 0; i < c->field_count; ++i) n += c->fields[i].deleted() ? 0 : 1;
  return n;
}

bool same_type(const FieldInfo& f, const FieldSpec& s) {
  return f.type == s.type && (s.type != TypeKind::kObject || name_view(f.class_name) == s.class_name);
}

// Same live field set (names and types), any order and slots.
bool same_set(const ClassRecord* c, const std::vector<FieldSpec>& fields) {
  if (live_fields(c) != fields.size()) return false;
  for (const FieldSpec& s : fields) {
    const FieldInfo* f = find_field(c, s.name);
    if (f == nullptr || !same_type(*f, s)) return false;
  }
  return true;
}

// Exactly this layout: same entries, same order, same slots, same ones deleted.
bool same_layout(const ClassRecord* c, const std::vector<Wanted>& w) {
  if (c->field_count != w.size()) return false;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const FieldInfo& f = c->fields[i];
    if (name_view(f.name) != w[i].spec.name || !same_type(f, w[i].spec) || f.slot != w[i].slot ||
        f.deleted() != w[i].deleted)
      return false;
  }
  return true;
}

void check_fields(const std::vector<FieldSpec>& fields) {
  for (std::size_t i = 0; i < fields.size(); ++i) {
    check_name(fields[i].name, "field name");
    TypeKind t = fields[i].type;
    if (static_cast<int>(t) > static_cast<int>(TypeKind::kObject) && t != TypeKind::kSortedMap)
      throw InvalidArgumentError("field '" + fields[i].name + "' has an internal type that fields cannot have");
    if (!fields[i].class_name.empty()) {
      if (t != TypeKind::kObject)
        throw InvalidArgumentError("field '" + fields[i].name + "' names a class but is not of kind object");
      check_name(fields[i].class_name, "field class name");
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (fields[j].name == fields[i].name) throw InvalidArgumentError("duplicate field name '" + fields[i].name + "'");
    }
  }
  if (fields.size() > 65536) throw InvalidArgumentError("a class may have at most 65536 fields");
}

// REQUIRES: classes_lock held.
ClassFamily* family_locked(Metadata* m, std::string_view name) {
  if (ClassFamily* f = find_family(m, name)) return f;
  auto* f = static_cast<ClassFamily*>(classes_alloc(m, sizeof(ClassFamily)));
  f->name = make_name(m, name);
  std::atomic<ClassFamily*>& bucket = m->class_buckets[f->name.hash % kNameBuckets];
  f->next_in_bucket.store(bucket.load(std::memory_order_relaxed), std::memory_order_relaxed);
  bucket.store(f, std::memory_order_release);
  return f;
}

// A field's class name: the name of that class's family when it exists (also the family being
// defined, which family_locked registered first), so that check_field_type finds the class by
// comparing pointers; a copy of the name otherwise (a class defined later, or never).
// REQUIRES: classes_lock held.
NameRef class_name_ref(Metadata* m, std::string_view name, const NameRef* carried = nullptr) {
  if (name.empty()) return make_name(m, name);
  if (const ClassFamily* f = find_family(m, name)) return f->name;
  return carried != nullptr ? *carried : make_name(m, name);
}

// REQUIRES: classes_lock held.
ClassRecord* append_version(Metadata* m, ClassFamily* fam, const std::vector<Wanted>& w) {
  if (fam->count.load(std::memory_order_relaxed) >= kMaxClassVersions) {
    throw OutOfMemoryError("class " + std::string(name_view(fam->name)) + " has " + std::to_string(kMaxClassVersions) +
                           " versions, the most one class may have (each new set of fields is a version, kept for the "
                           "heap's lifetime): store keys that vary in a map field, not as fields of their own");
  }
  std::uint64_t bytes = sizeof(ClassRecord) + w.size() * sizeof(FieldInfo);
  auto rounded = [](std::size_t n) { return (n + 15) & ~std::size_t{15}; };  // classes_alloc's granule
  for (const Wanted& x : w) {
    if (x.name.len == 0) bytes += rounded(x.spec.name.size()) + rounded(x.spec.class_name.size());
  }
  const std::uint64_t budget = (m->classes_end - m->classes_begin) / kClassSpaceShare;
  if (fam->bytes + bytes > budget) {
    throw OutOfMemoryError("class " + std::string(name_view(fam->name)) + " has versions taking " +
                           std::to_string(fam->bytes >> 10) + " KiB of the classes space, and another would pass the 1/" +
                           std::to_string(kClassSpaceShare) +
                           " of it one class may take (each new set of fields is a version, kept for the heap's "
                           "lifetime): store keys that vary in a map field, not as fields of their own");
  }
  ClassRecord* c = new_record(m, TypeKind::kObject, fam->name, static_cast<std::uint32_t>(w.size()));
  std::uint32_t slots = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    FieldInfo& f = c->fields[i];
    const bool carried = w[i].name.len != 0;
    f.name = carried ? w[i].name : make_name(m, w[i].spec.name);
    f.type = w[i].spec.type;
    f.slot = w[i].slot;
    f.flags = w[i].deleted ? kFieldDeleted : 0;
    f.class_name = class_name_ref(m, w[i].spec.class_name, carried ? &w[i].class_name : nullptr);
    slots = std::max(slots, w[i].slot + 1);
  }
  c->slot_count = slots;
  c->family = fam;
  fam->bytes += bytes;
  c->version = fam->count.load(std::memory_order_relaxed) + 1;
  // Publish: the record is complete before it becomes reachable from the family.
  ClassRecord* last = fam->last.load(std::memory_order_relaxed);
  if (last == nullptr) {
    fam->first.store(c, std::memory_order_release);
  } else {
    last->next_version.store(c, std::memory_order_release);
  }
  fam->last.store(c, std::memory_order_release);
  fam->count.store(c->version, std::memory_order_release);
  return c;
}

ClassRecord* find_layout(ClassFamily* fam, const std::vector<Wanted>& w) {
  if (fam == nullptr) return nullptr;
  for (ClassRecord* c = fam->first.load(std::memory_order_acquire); c != nullptr;
       c = c->next_version.load(std::memory_order_acquire)) {
    if (same_layout(c, w)) return c;
  }
  return nullptr;
}

std::vector<Wanted> layout_of(const ClassRecord* c) {
  std::vector<Wanted> w;
  for (std::uint32_t i = 0; i < c->field_count; ++i) {
    const FieldInfo& f = c->fields[i];
    w.push_back({FieldSpec{std::string(name_view(f.name)), f.type, std::string(name_view(f.class_name))}, f.slot,
                 f.deleted(), f.name, f.class_name});
  }
  return w;
}

ClassRecord* find_or_append(Metadata* m, ClassFamily* fam, const std::vector<Wanted>& w) {
  if (ClassRecord* c = find_layout(fam, w)) return c;
  RobustLockGuard g(m->classes_lock);
  if (ClassRecord* c = find_layout(fam, w)) return c;
  return append_version(m, fam, w);
}

}  // namespace

ClassRecord* find_or_define_class(Metadata* m, std::string_view name, const std::vector<FieldSpec>& fields) {
  check_name(name, "class name");
  check_fields(fields);
  auto find = [&](ClassFamily* fam) -> ClassRecord* {
    if (fam == nullptr) return nullptr;
    ClassRecord* any = nullptr;
    for (ClassRecord* c = fam->first.load(std::memory_order_acquire); c != nullptr;
         c = c->next_version.load(std::memory_order_acquire)) {
      if (!same_set(c, fields)) continue;
      if (c->slot_count == live_fields(c)) return c;  // dense: objects use exactly their fields
      if (any == nullptr) any = c;
    }
    return any;
  };
  if (ClassRecord* c = find(find_family(m, name))) return c;
  RobustLockGuard g(m->classes_lock);
  ClassFamily* fam = family_locked(m, name);
  if (ClassRecord* c = find(fam)) return c;
  std::vector<Wanted> w;
  for (std::size_t i = 0; i < fields.size(); ++i) w.push_back({fields[i], static_cast<std::uint32_t>(i)});
  return append_version(m, fam, w);
}

ClassRecord* version_with_field(Metadata* m, ClassRecord* base, const FieldSpec& field) {
  check_fields({field});
  if (find_field(base, field.name) != nullptr)
    throw InvalidArgumentError("class " + std::string(name_view(base->name)) + " already has field '" + field.name + "'");
  std::vector<Wanted> w = layout_of(base);
  // The field's own deleted entry, when it had this type, takes it back with its slot; a new
  // field takes a slot no entry has (FieldInfo's invariant).
  auto back = std::find_if(w.begin(), w.end(), [&](const Wanted& x) {
    return x.deleted && x.spec.name == field.name && x.spec.type == field.type && x.spec.class_name == field.class_name;
  });
  if (back != w.end()) {
    back->deleted = false;
    return find_or_append(m, base->family, w);
  }
  if (std::count_if(w.begin(), w.end(), [](const Wanted& x) { return x.deleted; }) >= kMaxDeletedFields) {
    throw OutOfMemoryError("object of class " + std::string(name_view(base->name)) + " has had " +
                           std::to_string(kMaxDeletedFields) +
                           " fields deleted, the most one object may keep (a deleted field keeps its slot, so that a store "
                           "racing the deletion cannot land in another field); it can take back a deleted field but not a "
                           "new one '" + field.name + "': store keys that vary in a map field, not as fields of their own");
  }
  w.push_back({field, base->slot_count});
  return find_or_append(m, base->family, w);
}

ClassRecord* version_without_field(Metadata* m, ClassRecord* base, std::string_view drop) {
  std::vector<Wanted> w = layout_of(base);
  auto it = std::find_if(w.begin(), w.end(), [&](const Wanted& x) { return !x.deleted && x.spec.name == drop; });
  if (it == w.end())
    throw KeyError("class " + std::string(name_view(base->name)) + " has no field '" + std::string(drop) + "'");
  it->deleted = true;  // keeps its slot (FieldInfo's invariant)
  return find_or_append(m, base->family, w);
}

}  // namespace colors::detail
