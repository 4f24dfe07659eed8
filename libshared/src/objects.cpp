#include "objects.hpp"
#include "transaction.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>

#include "barrier.hpp"
#include "classes.hpp"
#include "colors/errors.hpp"
#include "heap.hpp"
#include "read_scope.hpp"
#include "session.hpp"

namespace colors::detail {


std::size_t object_bytes(std::size_t payload) { return round_up(sizeof(BlockHeader) + payload, kGranule); }

namespace {

// `body`: bytes after the ObjectHead (header + class pointer).
// The block is rooted before it is published (roots.hpp, Rooted), unless `kRooted` is false: an
// allocation in a read scope, which the scope keeps (read_scope.hpp, "Allocating in a scope").
[[noreturn, gnu::noinline, gnu::cold]] void too_large(std::size_t bytes) {
  throw OutOfMemoryError("object of " + std::to_string(bytes) + " bytes is too large");
}

// `kFilled`: `init` writes every byte of the body up to its end (a string's length, hash and
// bytes), so the payload is not zero-filled first; only its last two words, which hold the padding
// after the bytes (at most 15 bytes: the block is the body rounded up to kGranule), are zeroed here.
// Returns the object rooted (a Rooted) when kRooted, else its bare word.
template <bool kRooted = true, bool kFilled = false, class Init>
std::conditional_t<kRooted, Rooted, Word> allocate(Metadata* m, TypeKind kind, ClassRecord* cls, std::size_t body,
                                                   Init&& init) {
  (void)kind;
  std::size_t bytes = round_up(sizeof(ObjectHead) + body, kGranule);
  if (__builtin_expect(bytes > (std::size_t{1} << 40), 0)) too_large(bytes);
  BlockHeader* h = reserve_block<!kFilled>(m, current_client_id(), bytes);
  if constexpr (kFilled) {
    static_assert(kGranule == 16);
    auto* end = reinterpret_cast<std::uint64_t*>(reinterpret_cast<char*>(h) + bytes);
    end[-2] = 0;
    end[-1] = 0;
  }
  Word w = reinterpret_cast<Word>(h);
  auto* o = reinterpret_cast<ObjectHead*>(h);
  if constexpr (kRooted) {
    Rooted r(w, root_acquire(w));
    o->cls.store(cls, std::memory_order_relaxed);
    init(o);
    publish_object(m, h, bytes);
    return r;
  } else {
    o->cls.store(cls, std::memory_order_relaxed);
    init(o);
    publish_object(m, h, bytes);
    return w;
  }
}

std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

std::uint64_t load64(const unsigned char* c) {
  std::uint64_t w;
  std::memcpy(&w, c, 8);
  return w;
}
std::uint64_t load32(const unsigned char* c) {
  std::uint32_t w;
  std::memcpy(&w, c, 4);
  return w;
}

// The hash of a string's or a binary's bytes, stored in the object (part of the heap's layout: a
// change needs a new kLayoutVersion). Eight bytes per step, one multiply each: every string made
// computes it, and a dependent multiply per byte would be most of the time of making a short one. The
// length seeds the state, so the overlapping reads of a tail (the last eight bytes, or two four-byte
// words, or three bytes) cannot make two lengths collide by construction; mix64 finishes.
std::uint64_t bytes_hash(const void* p, std::size_t n) {
  const auto* c = static_cast<const unsigned char*>(p);
  constexpr std::uint64_t kStep = 0x9fb21c651e98df25ULL;
  std::uint64_t h = 0x9e3779b97f4a7c15ULL ^ (n * kStep);
  if (n >= 8) {
    const unsigned char* end = c + n;
    for (; end - c > 8; c += 8) {
      h = (h ^ load64(c)) * kStep;
      h ^= h >> 32;
    }
    h ^= load64(end - 8);  // the last eight bytes, overlapping the previous word when n % 8 != 0
  } else if (n >= 4) {
    h ^= load32(c) << 32 | load32(c + n - 4);
  } else if (n > 0) {
    h ^= std::uint64_t{c[0]} << 16 | std::uint64_t{c[n / 2]} << 8 | c[n - 1];
  }
  return mix64(h * kStep);
}

}  // namespace

Rooted new_integer(Metadata* m, std::int64_t v) {
  if (fits_small(v)) return Rooted(make_small(v), nullptr);
  return allocate(m, TypeKind::kInteger, builtin_class(m, TypeKind::kInteger), sizeof(std::int64_t),
                  [v](ObjectHead* o) { reinterpret_cast<IntegerObject*>(o)->value = v; });
}

Rooted new_float(Metadata* m, double v) {
  if (fits_small_float(v)) return Rooted(make_small_float(v), nullptr);
  return allocate(m, TypeKind::kFloat, builtin_class(m, TypeKind::kFloat), sizeof(double),
                  [v](ObjectHead* o) { reinterpret_cast<FloatObject*>(o)->value = v; });
}

// The payload of a string or binary of n bytes (16 bytes of length and hash first). A length near
// SIZE_MAX wrapped 16 + n to a small size: the object got a tiny block and a length beyond it,
// which every read then followed out of the heap. No heap holds 2^48 bytes.
[[noreturn, gnu::noinline, gnu::cold]] static void bytes_too_large(std::size_t n, const char* what) {
  throw OutOfMemoryError(std::string(what) + " of " + std::to_string(n) + " bytes is too large");
}
static inline std::size_t bytes_payload(std::size_t n, const char* what) {
  if (__builtin_expect(n > (std::size_t{1} << 48), 0)) bytes_too_large(n, what);
  return 16 + n;
}

[[noreturn, gnu::noinline, gnu::cold]] static void not_utf8() { throw InvalidArgumentError("string is not valid UTF-8"); }

// memcpy of a string's bytes, inline up to 16 bytes (two overlapping loads and stores), where a
// call would cost as much as the copy.
static inline void copy_bytes(char* to, const char* from, std::size_t n) {
  if (n >= 8 && n <= 16) {
    std::uint64_t a, b;
    std::memcpy(&a, from, 8);
    std::memcpy(&b, from + n - 8, 8);
    std::memcpy(to, &a, 8);
    std::memcpy(to + n - 8, &b, 8);
  } else if (n != 0) {
    std::memcpy(to, from, n);
  }
}


Rooted new_string(Metadata* m, std::string_view s) {
  const std::size_t payload = bytes_payload(s.size(), "string");
  if (!is_valid_utf8(s)) not_utf8();
  std::uint64_t h = bytes_hash(s.data(), s.size());
  return allocate<true, true>(m, TypeKind::kString, builtin_class(m, TypeKind::kString), payload, [&](ObjectHead* o) {
    auto* so = reinterpret_cast<StringObject*>(o);
    so->length = s.size();
    so->hash = h;
    copy_bytes(so->bytes, s.data(), s.size());
  });
}

Rooted new_binary(Metadata* m, const void* data, std::size_t n) {
  return allocate(m, TypeKind::kBinary, builtin_class(m, TypeKind::kBinary), bytes_payload(n, "binary"), [&](ObjectHead* o) {
    auto* b = reinterpret_cast<BinaryObject*>(o);
    b->length = n;
    if (n != 0 && data != nullptr) std::memcpy(b->bytes, data, n);
  });
}

Rooted new_array(Metadata* m, TypeKind kind, std::size_t capacity) {
  if (capacity > (std::size_t{1} << 36)) throw OutOfMemoryError("array of " + std::to_string(capacity) + " slots is too large");
  return allocate(m, kind, builtin_class(m, kind), 8 + capacity * sizeof(Word),
                  [capacity](ObjectHead* o) { reinterpret_cast<ArrayObject*>(o)->capacity = capacity; });
}

Rooted new_list(Metadata* m, std::size_t capacity) {
  Rooted array = capacity == 0 ? Rooted() : new_array(m, TypeKind::kArray, capacity);
  // The array stays rooted until the list holding it is published and rooted itself.
  return allocate(m, TypeKind::kList, builtin_class(m, TypeKind::kList), sizeof(ListObject) - sizeof(ObjectHead), [&array](ObjectHead* o) {
    init_ref(&reinterpret_cast<ListObject*>(o)->array, array.word());
  });
}

std::size_t table_entries_for(std::size_t capacity) {
  // Bounded as arrays are (new_array): a larger hint would wrap capacity * 4 / 3 and the byte size
  // below, and a table with a huge capacity in a small block makes every probe write outside it.
  if (capacity > kMaxTableCapacity)
    throw OutOfMemoryError("hash table for " + std::to_string(capacity) + " entries is too large");
  std::size_t cap = 8;
  while (cap < capacity * 4 / 3 + 1) cap <<= 1;
  return cap;
}

Rooted new_table(Metadata* m, std::size_t capacity) {
  const std::size_t cap = table_entries_for(capacity);
  return allocate(m, TypeKind::kTable, builtin_class(m, TypeKind::kTable), 16 + cap * sizeof(TableEntry),
                  [cap](ObjectHead* o) { reinterpret_cast<TableObject*>(o)->capacity = cap; });
}

static Rooted new_hash(Metadata* m, TypeKind kind, std::size_t capacity) {
  Rooted table = capacity == 0 ? Rooted() : new_table(m, capacity);
  return allocate(m, kind, builtin_class(m, kind), sizeof(HashObject) - sizeof(ObjectHead), [&table](ObjectHead* o) {
    init_ref(&reinterpret_cast<HashObject*>(o)->table, table.word());
  });
}

Rooted new_set(Metadata* m, std::size_t capacity) { return new_hash(m, TypeKind::kSet, capacity); }
Rooted new_map(Metadata* m, std::size_t capacity) { return new_hash(m, TypeKind::kMap, capacity); }

Rooted new_sorted_map(Metadata* m) {
  // Size 0, no root, lock free: the zeroed payload.
  return allocate(m, TypeKind::kSortedMap, builtin_class(m, TypeKind::kSortedMap),
                  sizeof(SortedMapObject) - sizeof(ObjectHead), [](ObjectHead*) {});
}

Rooted new_user_object(Metadata* m, ClassRecord* cls) {
  if (cls == nullptr || cls->kind != TypeKind::kObject) throw InvalidArgumentError("not a user class");
  return allocate(m, TypeKind::kObject, cls, 8 + std::size_t{cls->slot_count} * sizeof(Word), [](ObjectHead*) {});
}



bool is_integer(Word w) { return is_small_int(w) || (is_ref(w) && class_of(w)->kind == TypeKind::kInteger); }

std::int64_t integer_value(Word w) {
  return is_small_int(w) ? small_value(w) : reinterpret_cast<IntegerObject*>(w)->value;
}


// Exact comparison of an integer with a double (no rounding through either type).
static bool int_equals_float(std::int64_t i, double d) {
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return false;
  if (d != std::floor(d)) return false;
  return static_cast<std::int64_t>(d) == i;
}

bool values_equal(Word a, Word b) {
  if (a == b) return true;
  TypeKind ka = kind_of(a), kb = kind_of(b);
  if (ka == TypeKind::kInteger && kb == TypeKind::kInteger) return integer_value(a) == integer_value(b);
  if (ka == TypeKind::kFloat && kb == TypeKind::kFloat) return float_value(a) == float_value(b);
  if (ka == TypeKind::kInteger && kb == TypeKind::kFloat) return int_equals_float(integer_value(a), float_value(b));
  if (ka == TypeKind::kFloat && kb == TypeKind::kInteger) return int_equals_float(integer_value(b), float_value(a));
  if (ka != kb) return false;
  if (ka == TypeKind::kString) {
    auto* x = reinterpret_cast<StringObject*>(a);
    auto* y = reinterpret_cast<StringObject*>(b);
    return x->length == y->length && x->hash == y->hash && std::memcmp(x->bytes, y->bytes, x->length) == 0;
  }
  if (ka == TypeKind::kBinary) {
    auto* x = reinterpret_cast<BinaryObject*>(a);
    auto* y = reinterpret_cast<BinaryObject*>(b);
    return x->length == y->length && std::memcmp(x->bytes, y->bytes, x->length) == 0;
  }
  return false;  // booleans compare by word; everything else by identity
}

std::uint64_t value_hash(Word w) {
  switch (kind_of(w)) {
    case TypeKind::kNull: return 0x9e3779b97f4a7c15ULL;
    case TypeKind::kInteger: return mix64(static_cast<std::uint64_t>(integer_value(w)));
    case TypeKind::kFloat: {
      double d = float_value(w);
      if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 && d == std::floor(d))
        return mix64(static_cast<std::uint64_t>(static_cast<std::int64_t>(d)));  // equal ints hash alike
      if (d == 0.0) return mix64(0);
      std::uint64_t bits;
      std::memcpy(&bits, &d, sizeof bits);
      return mix64(bits);
    }
    case TypeKind::kBoolean: return mix64(0xb001ULL + bool_value(w));
    case TypeKind::kString: return reinterpret_cast<StringObject*>(w)->hash;
    case TypeKind::kBinary: {
      auto* b = reinterpret_cast<BinaryObject*>(w);
      return bytes_hash(b->bytes, b->length);
    }
    default: return mix64(w);
  }
}

// ---- user objects ----

void check_field_type_slow(const FieldInfo& f, Word v) {
  const TypeKind k = kind_of(v);
  bool ok = k == f.type;
  if (ok && f.type == TypeKind::kObject && f.class_name.len != 0) {
    const NameRef& have = class_of(v)->name;
    ok = have.ptr == f.class_name.ptr ||
         (have.hash == f.class_name.hash && name_view(have) == name_view(f.class_name));
  }
  if (!ok) {
    std::string want(type_name(f.type));
    if (f.type == TypeKind::kObject && f.class_name.len != 0) want = std::string(name_view(f.class_name));
    std::string got(type_name(k));
    if (k == TypeKind::kObject) got = std::string(name_view(class_of(v)->name));
    throw TypeMismatchError("field '" + std::string(name_view(f.name)) + "' holds " + want + ", cannot store a " + got);
  }
}

// REQUIRES: classes_lock held. Makes sure `o` has storage for every slot of `to`, appending an
// array to the object's extension chain (layout.hpp, UserObject) when it is too short. Nothing is
// copied: fields already in the chain keep their slots, so stores racing this change land.
static void ensure_storage(Metadata* m, Word o, const ClassRecord* to) {
  const std::size_t n = inline_slots(o);
  if (to->slot_count <= n) return;
  const std::size_t need = to->slot_count - n;
  std::atomic<Word>* link = &reinterpret_cast<UserObject*>(o)->extension;
  std::size_t have = 0;
  for (Word ext = link->load(std::memory_order_acquire); ext != kNull; ext = link->load(std::memory_order_acquire)) {
    auto* a = reinterpret_cast<ArrayObject*>(ext);
    have += a->capacity - 1;
    link = &a->slots[a->capacity - 1];
  }
  if (need <= have) return;
  // Each new array holds at least as many fields as the chain before it, so a chain of k arrays
  // holds 2^k times the first one's room and field_slot's walk stays short.
  constexpr std::size_t kFirstChunkFields = 3;
  const std::size_t fields = std::max({need - have, have, kFirstChunkFields});
  Rooted chunk = new_array(m, TypeKind::kExtension, fields + 1);
  store_ref(link, chunk.word());  // publishes the zeroed chunk before any class that uses it
}

// Lock order: classes_lock before heap_lock (ensure_storage allocates while holding classes_lock).
ClassRecord* add_field(Metadata* m, Word o, const FieldSpec& field, Word initial) {
  tx_refuse("schema evolution (adding a field to an object)");
  for (;;) {
    ClassRecord* from = class_of(o);
    if (find_field(from, field.name) != nullptr) return from;  // a racing thread added it
    ClassRecord* to = version_with_field(m, from, field);
    RobustLockGuard g(m->classes_lock);
    if (class_of(o) != from) continue;  // evolved meanwhile: start over from its current class
    ensure_storage(m, o, to);
    // A field taken back from its deleted entry may hold what a writer racing the deletion
    // stored after the slot was nulled; the field starts out as `initial`.
    store_ref(field_slot(o, *find_field(to, field.name)), initial);
    reinterpret_cast<ObjectHead*>(o)->cls.store(to, std::memory_order_release);
    return to;
  }
}

ClassRecord* remove_field(Metadata* m, Word o, std::string_view name) {
  tx_refuse("schema evolution (removing a field from an object)");
  for (;;) {
    ClassRecord* from = class_of(o);
    const FieldInfo* f = find_field(from, name);
    if (f == nullptr)
      throw KeyError("object of class " + std::string(name_view(from->name)) + " has no field '" + std::string(name) + "'");
    ClassRecord* to = version_without_field(m, from, name);
    RobustLockGuard g(m->classes_lock);
    // Evolved meanwhile (another thread or process added or removed a field): start over from its
    // current class, or the switch below would undo that change.
    if (class_of(o) != from) continue;
    reinterpret_cast<ObjectHead*>(o)->cls.store(to, std::memory_order_release);
    if (std::atomic<Word>* slot = field_slot(o, *f)) store_ref(slot, kNull);
    return to;
  }
}

// ---- allocation in a read scope ----

Word new_integer_scoped(Metadata* m, std::int64_t v) {
  if (fits_small(v)) return make_small(v);
  return allocate<false>(m, TypeKind::kInteger, builtin_class(m, TypeKind::kInteger), sizeof(std::int64_t),
                         [v](ObjectHead* o) { reinterpret_cast<IntegerObject*>(o)->value = v; });
}

Word new_float_scoped(Metadata* m, double v) {
  if (fits_small_float(v)) return make_small_float(v);
  return allocate<false>(m, TypeKind::kFloat, builtin_class(m, TypeKind::kFloat), sizeof(double),
                         [v](ObjectHead* o) { reinterpret_cast<FloatObject*>(o)->value = v; });
}

Word new_string_scoped(Metadata* m, std::string_view s) {
  const std::size_t payload = bytes_payload(s.size(), "string");
  if (!is_valid_utf8(s)) not_utf8();
  std::uint64_t h = bytes_hash(s.data(), s.size());
  return allocate<false, true>(m, TypeKind::kString, builtin_class(m, TypeKind::kString), payload, [&](ObjectHead* o) {
    auto* so = reinterpret_cast<StringObject*>(o);
    so->length = s.size();
    so->hash = h;
    copy_bytes(so->bytes, s.data(), s.size());
  });
}

Word new_binary_scoped(Metadata* m, const void* data, std::size_t n) {
  return allocate<false>(m, TypeKind::kBinary, builtin_class(m, TypeKind::kBinary), bytes_payload(n, "binary"),
                         [&](ObjectHead* o) {
    auto* b = reinterpret_cast<BinaryObject*>(o);
    b->length = n;
    if (n != 0 && data != nullptr) std::memcpy(b->bytes, data, n);
  });
}

Word new_user_object_scoped(Metadata* m, ClassRecord* cls, const SlotInit* init, std::size_t n) {
  if (cls == nullptr || cls->kind != TypeKind::kObject) throw InvalidArgumentError("not a user class");
  const Word w = allocate<false>(m, TypeKind::kObject, cls, 8 + std::size_t{cls->slot_count} * sizeof(Word), [&](ObjectHead* o) {
    auto* u = reinterpret_cast<UserObject*>(o);
    // Plain stores into a block nobody else can reach: the publication (a release store) orders them.
    for (std::size_t i = 0; i < n; ++i) u->slots[init[i].slot].store(init[i].value, std::memory_order_relaxed);
  });
  // After the publication's epoch read: a new object recent in a marking cycle is not traced by its
  // pending passes, so what it holds that only the scope kept is flagged here (read_scope.hpp).
  flag_scope_references(init, n);
  return w;
}

Word new_list_scoped(Metadata* m, const Word* items, std::size_t n) {
  if (n > (std::size_t{1} << 36)) throw OutOfMemoryError("array of " + std::to_string(n) + " slots is too large");
  Word array = kNull;
  if (n != 0) {
    array = allocate<false>(m, TypeKind::kArray, builtin_class(m, TypeKind::kArray), 8 + n * sizeof(Word), [&](ObjectHead* o) {
      auto* a = reinterpret_cast<ArrayObject*>(o);
      a->capacity = n;
      for (std::size_t i = 0; i < n; ++i) a->slots[i].store(items[i], std::memory_order_relaxed);
    });
    // The array is a new object holding what the scope holds: new_user_object_scoped's rule.
    flag_scope_words(items, n);
  }
  const Word l = allocate<false>(m, TypeKind::kList, builtin_class(m, TypeKind::kList),
                                 sizeof(ListObject) - sizeof(ObjectHead), [&](ObjectHead* o) {
    auto* lo = reinterpret_cast<ListObject*>(o);
    lo->size.store(n, std::memory_order_relaxed);
    init_ref(&lo->array, array);  // version and lock stay 0: an even version, unlocked
  });
  // The array, allocated in the scope, is now held by the list, which may be recent.
  if (array != kNull) flag_scope_words(&array, 1);
  return l;
}

Word new_hash_scoped(Metadata* m, TypeKind kind, const Word* keys, const Word* values, std::size_t n) {
  if (kind != TypeKind::kSet && kind != TypeKind::kMap) throw InvalidArgumentError("not a set or map kind");
  Word table = kNull;
  std::size_t live = 0;
  if (n != 0) {
    const std::size_t cap = table_entries_for(n);  // as new_map(n): n puts then need no rehash
    table = allocate<false>(m, TypeKind::kTable, builtin_class(m, TypeKind::kTable), 16 + cap * sizeof(TableEntry),
                            [&](ObjectHead* o) {
      // The probing of the containers' put (containers.cpp: find_entry, insert_new), with plain
      // stores into a table nobody else can reach before its publication.
      auto* t = reinterpret_cast<TableObject*>(o);
      t->capacity = cap;
      const std::size_t mask = cap - 1;
      for (std::size_t i = 0; i < n; ++i) {
        const Word key = keys[i] == kNull ? kNullKey : keys[i];
        const std::uint64_t h = value_hash(keys[i]);
        for (std::size_t j = h & mask;; j = (j + 1) & mask) {
          TableEntry& e = t->entries[j];
          const Word k = e.key.load(std::memory_order_relaxed);
          if (k == kNull) {
            e.hash.store(h, std::memory_order_relaxed);
            e.value.store(values != nullptr ? values[i] : kNull, std::memory_order_relaxed);
            e.key.store(key, std::memory_order_relaxed);
            ++live;
            break;
          }
          if (e.hash.load(std::memory_order_relaxed) == h && values_equal(k == kNullKey ? kNull : k, keys[i])) {
            if (values != nullptr) e.value.store(values[i], std::memory_order_relaxed);
            break;
          }
        }
      }
      t->used.store(live, std::memory_order_relaxed);
    });
    // The keys and values are the new table's fields: new_user_object_scoped's rule.
    flag_scope_words(keys, n);
    if (values != nullptr) flag_scope_words(values, n);
  }
  const Word h = allocate<false>(m, kind, builtin_class(m, kind), sizeof(HashObject) - sizeof(ObjectHead), [&](ObjectHead* o) {
    auto* ho = reinterpret_cast<HashObject*>(o);
    ho->size.store(live, std::memory_order_relaxed);
    init_ref(&ho->table, table);  // the lock word stays 0: unlocked
  });
  if (table != kNull) flag_scope_words(&table, 1);
  return h;
}

const FieldInfo& field_or_throw(Word o, std::string_view name) {
  const ClassRecord* c = class_of(o);
  const FieldInfo* f = find_field(c, name);
  if (f == nullptr)
    throw KeyError("object of class " + std::string(name_view(c->name)) + " has no field '" + std::string(name) +
                   "' (its class version lacks it; adding the field switches the object to a version with it)");
  return *f;
}

void throw_missing_slot(const FieldInfo& f) {
  throw CorruptHeapError("object storage lacks the slot of field '" + std::string(name_view(f.name)) + "'");
}

}  // namespace colors::detail
