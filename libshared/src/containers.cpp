#include "containers.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "barrier.hpp"
#include "colors/errors.hpp"
#include "container_lock.hpp"
#include "list_seqlock.hpp"
#include "objects.hpp"
#include "transaction.hpp"

namespace colors::detail {

namespace {

ListObject* as_list(Word w) { return reinterpret_cast<ListObject*>(w); }
HashObject* as_hash(Word w) { return reinterpret_cast<HashObject*>(w); }
ArrayObject* as_array(Word w) { return reinterpret_cast<ArrayObject*>(w); }
TableObject* as_table(Word w) { return reinterpret_cast<TableObject*>(w); }

[[noreturn]] void index_error(std::int64_t i, std::size_t n) {
  throw IndexError("list index " + std::to_string(i) + " out of range (size " + std::to_string(n) + ")");
}

std::size_t array_capacity(Word a) { return a == kNull ? 0 : as_array(a)->capacity; }

// A list's lock for one operation. If the lock was taken over from a process that died inside a
// multi-slot change (torn), the list may hold one element twice or miss one: the caller is told
// once with OwnerDiedError (the lock is released, the operation not performed).
class ListLock {
 public:
  // `begin_write` false: a kWrite operation that may change nothing calls begin_write() before its
  // first store, so that giving up leaves the version as it was.
  ListLock(ListObject* l, TxAccess a, bool begin_write = true) : l_(l), tx_(l, a), guard_(&l->lock) {
    for (;;) {
      if (guard_.recovered()) list_version_repair(l);
      if (guard_.torn())
        throw OwnerDiedError(
            "a process died while it moved elements of this shared list: an element may be missing or "
            "duplicated, or a replacement (sort, slice assignment) half done; the list is usable again and "
            "this operation was not performed");
      if (tx_.admitted()) break;
      guard_.relock_after([&] { tx_.wait(); });
    }
    // After the repair: the change's odd version covers every store this operation makes.
    if (a == TxAccess::kWrite && begin_write) write_.begin(l);
  }
  ContainerGuard& guard() { return guard_; }
  // REQUIRES: constructed kWrite with begin_write false; called once, before any store.
  void begin_write() { write_.begin(l_); }

 private:
  ListObject* l_;
  TxContainerScope tx_;  // first: a transaction takes the container's orec before its lock word
  ContainerGuard guard_;
  ListWrite write_;  // last: a change ends (version even again) before the lock word is released
};

// Under the lock, the list's size and storage, with the size clamped to the storage's capacity
// (a corrupt size can make nothing go out of bounds).
struct ListState {
  std::size_t n;
  Word a;
  ArrayObject* arr() const { return as_array(a); }
};
ListState state(ListObject* l) {
  Word a = l->array.load(std::memory_order_acquire);
  std::size_t n = l->size.load(std::memory_order_acquire);
  std::size_t cap = array_capacity(a);
  return {n > cap ? cap : n, a};
}

std::size_t checked(std::size_t i, const ListState& s) {
  if (i >= s.n) index_error(static_cast<std::int64_t>(i), s.n);
  return i;
}
std::size_t checked_signed(std::int64_t i, const ListState& s) {
  std::int64_t j = i < 0 ? i + static_cast<std::int64_t>(s.n) : i;
  if (j < 0 || static_cast<std::size_t>(j) >= s.n) index_error(i, s.n);
  return static_cast<std::size_t>(j);
}

// The capacity a list of capacity `cap` grows to when it needs `need` slots.
std::size_t grown_capacity(std::size_t cap, std::size_t need) {
  std::size_t ncap = cap < 4 ? 4 : cap * 2;
  return ncap < need ? need : ncap;
}

// The array a change will need, allocated before the change takes the list's lock (empty when the
// list has room, as a lock-free read of it says): an allocation may wait for a collector cycle, a
// cycle waits for the read scopes open at its flip, and a thread in a scope may wait for this lock
// (ListView's fallback after failed seqlock reads). So a change allocates, and may wait, with no
// lock held. `need(n)`: the slots the change needs when the list holds n. A change that raced in
// between and left the list needing more allocates under the lock, as grow does without this.
template <class Need>
Rooted storage_ahead(Metadata* m, const ListObject* l, Need&& need) {
  std::uint64_t v;
  ListStorage st;
  if (!list_try_storage(l, v, st)) return Rooted();  // a change under way: grow decides, locked
  const std::size_t want = need(st.n);
  if (want <= st.capacity) return Rooted();
  return new_array(m, TypeKind::kArray, grown_capacity(st.capacity, want));
}

// Makes room for `need` elements, copying into a larger array that is published once filled:
// `ahead` (storage_ahead's) when it is large enough, else one allocated here.
// Returns the array to use. REQUIRES: the list's lock.
Word grow(Metadata* m, ListObject* l, const ListState& s, std::size_t need, Rooted& ahead) {
  std::size_t cap = array_capacity(s.a);
  if (need <= cap) return s.a;
  Rooted fresh_root = ahead.word() != kNull && array_capacity(ahead.word()) >= need
                          ? std::move(ahead)
                          : new_array(m, TypeKind::kArray, grown_capacity(cap, need));
  Word fresh = fresh_root.word();
  for (std::size_t i = 0; i < s.n; ++i) init_ref(&as_array(fresh)->slots[i], s.arr()->slots[i].load(std::memory_order_acquire));
  store_ref_logged(&l->array, fresh);
  return fresh;
}

// Removes the element at i (< s.n) and returns it, rooted. REQUIRES: the list's lock.
Rooted erase_at(ListLock& lock, ListObject* l, const ListState& s, std::size_t i) {
  ArrayObject* arr = s.arr();
  Rooted removed = root_locked(&arr->slots[i]);  // the slot cannot change under the lock
  const bool last = i + 1 == s.n;
  if (!last) {
    lock.guard().begin_torn();
    for (std::size_t k = i; k + 1 < s.n; ++k) store_ref_logged(&arr->slots[k], arr->slots[k + 1].load(std::memory_order_acquire));
  }
  // The size drops before the freed slot is cleared: a crash in between leaves a stale slot past
  // the end (harmless: the next append overwrites it), never a null inside the list.
  store_count_logged(&l->size, s.n - 1);
  if (!last) lock.guard().end_torn();
  store_ref_logged(&arr->slots[s.n - 1], kNull);
  return removed;
}

// Appends v[0..k): the slots past the end first, then the size in one store, so a crash leaves
// the list either without or with all of them. REQUIRES: the list's lock.
void append_at_end(Metadata* m, ListObject* l, const ListState& s, const Word* v, std::size_t k, Rooted& ahead) {
  Word a = grow(m, l, s, s.n + k, ahead);
  for (std::size_t j = 0; j < k; ++j) store_ref_logged(&as_array(a)->slots[s.n + j], v[j]);
  store_count_logged(&l->size, s.n + k);
}

// Inserts v[0..k) before position i. REQUIRES: i <= s.n.
void insert_at(Metadata* m, ListLock& lock, ListObject* l, const ListState& s, std::size_t i, const Word* v, std::size_t k,
               Rooted& ahead) {
  if (i == s.n) return append_at_end(m, l, s, v, k, ahead);
  Word a = grow(m, l, s, s.n + k, ahead);
  ArrayObject* arr = as_array(a);
  lock.guard().begin_torn();
  for (std::size_t j = s.n; j > i; --j)
    store_ref_logged(&arr->slots[j - 1 + k], arr->slots[j - 1].load(std::memory_order_acquire));
  for (std::size_t j = 0; j < k; ++j) store_ref_logged(&arr->slots[i + j], v[j]);
  store_count_logged(&l->size, s.n + k);
  lock.guard().end_torn();
}

// values_equal, and a NaN is the same value as a NaN with the same bits (a copy read out of the
// list must match the element it was read from).
bool same_value(Word a, Word b) {
  if (values_equal(a, b)) return true;
  if (kind_of(a) != TypeKind::kFloat || kind_of(b) != TypeKind::kFloat) return false;
  double x = float_value(a), y = float_value(b);
  return std::memcmp(&x, &y, sizeof x) == 0;
}

Word encode_key(Word k) { return k == kNull ? kNullKey : k; }
Word decode_key(Word k) { return k == kNullKey ? kNull : k; }

// Re-derives a table's counters after its lock was taken over from a dead owner: size and used
// from the entries, and no value left behind a tombstone. REQUIRES: the lock.
void recount(HashObject* ho) {
  Word table = ho->table.load(std::memory_order_acquire);
  std::size_t live = 0, used = 0;
  if (table != kNull) {
    TableObject* t = as_table(table);
    for (std::size_t i = 0; i < t->capacity; ++i) {
      Word k = t->entries[i].key.load(std::memory_order_acquire);
      if (k == kNull) continue;
      ++used;
      if (k == kTombstone) {
        if (t->entries[i].value.load(std::memory_order_acquire) != kNull) store_ref(&t->entries[i].value, kNull);
      } else {
        ++live;
      }
    }
    t->used.store(used, std::memory_order_relaxed);
  }
  ho->size.store(live, std::memory_order_release);
}

// A set's or map's lock for one operation; repairs the counters after a dead owner.
class HashLock {
 public:
  HashLock(HashObject* ho, TxAccess a) : tx_(ho, a), guard_(&ho->lock) {
    for (;;) {
      if (guard_.recovered()) recount(ho);
      if (tx_.admitted()) return;
      guard_.relock_after([&] { tx_.wait(); });
    }
  }

 private:
  TxContainerScope tx_;  // first: a transaction takes the container's orec before its lock word
  ContainerGuard guard_;
};

// Finds the entry holding `key`, or nullptr.
TableEntry* find_entry(TableObject* t, Word key, std::uint64_t h) {
  std::size_t mask = t->capacity - 1;
  for (std::size_t probe = 0, i = h & mask; probe < t->capacity; ++probe, i = (i + 1) & mask) {
    TableEntry& e = t->entries[i];
    Word k = e.key.load(std::memory_order_acquire);
    if (k == kNull) return nullptr;
    if (k == kTombstone) continue;
    if (e.hash.load(std::memory_order_relaxed) == h && values_equal(decode_key(k), decode_key(key))) return &e;
  }
  return nullptr;
}

TableEntry* find(HashObject* ho, Word key) {
  Word table = ho->table.load(std::memory_order_acquire);
  if (table == kNull) return nullptr;
  return find_entry(as_table(table), encode_key(key), value_hash(key));
}

// Inserts a key known to be absent into a table with room. Returns false if there is no room.
bool insert_new(TableObject* t, Word key, Word value, std::uint64_t h) {
  std::size_t mask = t->capacity - 1;
  for (std::size_t probe = 0, i = h & mask; probe < t->capacity; ++probe, i = (i + 1) & mask) {
    TableEntry& e = t->entries[i];
    Word k = e.key.load(std::memory_order_acquire);
    // Inside a transaction a tombstone is not reused: it may be the entry of a key this
    // transaction removed, which a rollback restores, and that key's hash must then still be there
    // (the hash is no Word: it is not logged). Taking only empty slots keeps `used` exact, and a
    // table without one is rehashed by the caller.
    if (k == kNull || (k == kTombstone && !in_transaction())) {
      store_ref_logged(&e.value, value);
      // Not logged: a rollback restores the key to empty, or (outside a transaction's own removal)
      // to a tombstone, whose hash nobody reads.
      e.hash.store(h, std::memory_order_relaxed);
      // The key is written last (release): whoever sees it also sees hash and value.
      store_ref_logged(&e.key, key);
      if (k == kNull) store_count_logged(&t->used, t->used.load(std::memory_order_relaxed) + 1);
      return true;
    }
  }
  return false;
}

// Replaces the table by one sized for `need` live entries, dropping tombstones: `ahead`
// (with_room_for's) when it is as large as that, else one allocated here.
Word rehash(Metadata* m, HashObject* ho, Word table, std::size_t need, Rooted& ahead) {
  Rooted fresh_root = ahead.word() != kNull && as_table(ahead.word())->capacity >= table_entries_for(need * 2)
                          ? std::move(ahead)
                          : new_table(m, need * 2);
  Word fresh = fresh_root.word();
  TableObject* nt = as_table(fresh);
  if (table != kNull) {
    TableObject* t = as_table(table);
    for (std::size_t i = 0; i < t->capacity; ++i) {
      Word k = t->entries[i].key.load(std::memory_order_acquire);
      if (k == kNull || k == kTombstone) continue;
      insert_new(nt, k, t->entries[i].value.load(std::memory_order_acquire), t->entries[i].hash.load(std::memory_order_relaxed));
    }
  }
  store_ref_logged(&ho->table, fresh);
  return fresh;
}

// `ahead`: with_room_for's. REQUIRES: the lock.
bool put(Metadata* m, HashObject* ho, Word key, Word value, Rooted* old, Rooted& ahead) {
  Word ekey = encode_key(key);
  std::uint64_t hv = value_hash(key);
  Word table = ho->table.load(std::memory_order_acquire);
  if (table != kNull) {
    if (TableEntry* e = find_entry(as_table(table), ekey, hv)) {
      if (old != nullptr) *old = root_locked(&e->value);
      store_ref_logged(&e->value, value);
      return false;
    }
  }
  std::size_t size = ho->size.load(std::memory_order_relaxed);
  if (table == kNull || (as_table(table)->used.load(std::memory_order_relaxed) + 1) * 4 > as_table(table)->capacity * 3) {
    table = rehash(m, ho, table, size + 1, ahead);
  }
  if (!insert_new(as_table(table), ekey, value, hv)) {
    table = rehash(m, ho, table, size + 1, ahead);
    insert_new(as_table(table), ekey, value, hv);
  }
  store_count_logged(&ho->size, size + 1);
  return true;
}

// Removes the live entry e. REQUIRES: the lock.
void remove_entry(HashObject* ho, TableEntry* e, Rooted* value) {
  if (value != nullptr) *value = root_locked(&e->value);
  store_ref_logged(&e->key, kTombstone);  // the publishing store: the entry is gone
  store_ref_logged(&e->value, kNull);
  std::size_t n = ho->size.load(std::memory_order_relaxed);
  store_count_logged(&ho->size, n == 0 ? 0 : n - 1);
}

}  // namespace

// ---- list ----

// The lock-free reads (list_seqlock.hpp) serve only readers outside a transaction: a transaction's
// read of a container goes through its ownership record, under the lock word.

void (*g_list_read_pause)() = nullptr;

namespace {

// The list's size and storage read without the lock (list_try_storage): false when a change was
// under way.
bool try_state(const ListObject* l, std::uint64_t& v, ListState& s) {
  ListStorage st;
  if (!list_try_storage(l, v, st)) return false;
  s = {st.n, reinterpret_cast<Word>(st.array)};
  return true;
}

// list_load without the lock: false when a change was under way or i is out of range (the locked
// path then reports it). `v` validated before the root is taken: only a word that was in the list
// is ever published as a root. Validated again after the root is published (root_fence), as
// root_load re-reads its slot: the value was in the list at an instant when this process already
// held it as a root, so no collector cycle can miss it.
// A negative `i` counts from the end, as list_load_signed's.
bool try_load(const ListObject* l, std::int64_t i, Rooted& out) {
  std::uint64_t v;
  ListState s;
  if (!try_state(l, v, s)) return false;
  const std::int64_t j = i < 0 ? i + static_cast<std::int64_t>(s.n) : i;
  if (j < 0 || static_cast<std::size_t>(j) >= s.n) return false;
  if (__builtin_expect(g_list_read_pause != nullptr, 0)) g_list_read_pause();
  const Word w = s.arr()->slots[j].load(std::memory_order_acquire);
  if (!list_still_unchanged(l, v)) return false;
  if (!is_ref(w)) {
    out = Rooted(w, nullptr);
    return true;
  }
  std::atomic<Word>* r = root_acquire(w);  // root_fence: the root is published before the check
  if (l->version.load(std::memory_order_relaxed) != v) {
    root_release(r);
    return false;
  }
  out = Rooted(w, r);
  return true;
}

// list_snapshot without the lock: false when a change came between the reads (the locked path
// then runs). As try_load for every element: the words are validated before any of them is
// rooted, and again after every root is published, so each value was in the list at one instant
// when this process already held it as a root. `out` is empty on false.
bool try_snapshot(const ListObject* l, std::vector<Rooted>& out, std::uint64_t* version) {
  std::uint64_t v;
  ListState s;
  if (!try_state(l, v, s)) return false;
  out.reserve(s.n);
  if (__builtin_expect(g_list_read_pause != nullptr, 0)) g_list_read_pause();
  for (std::size_t i = 0; i < s.n; ++i) out.emplace_back(s.arr()->slots[i].load(std::memory_order_acquire), nullptr);
  if (!list_still_unchanged(l, v)) {
    out.clear();
    return false;
  }
  for (Rooted& r : out) {
    const Word w = r.word();
    if (is_ref(w)) r = Rooted(w, root_acquire(w));  // root_fence: published before the check below
  }
  if (l->version.load(std::memory_order_relaxed) != v) {
    out.clear();  // releases the roots taken
    return false;
  }
  if (version != nullptr) *version = v;
  return true;
}

}  // namespace

std::size_t list_size(Word list, TxAccess a) {
  if (!in_transaction() && a == TxAccess::kRead) {  // the lock-free read waits for nobody
    std::uint64_t v;
    ListState s;
    if (try_state(as_list(list), v, s)) return s.n;
  }
  ListLock lock(as_list(list), a);
  return state(as_list(list)).n;
}

Word list_get(Word list, std::size_t i) {
  ListLock lock(as_list(list), TxAccess::kRead);
  ListState s = state(as_list(list));
  return s.arr()->slots[checked(i, s)].load(std::memory_order_acquire);
}

Rooted list_load(Word list, std::size_t i) {
  Rooted r;
  if (!in_transaction() && i <= static_cast<std::size_t>(INT64_MAX) && try_load(as_list(list), static_cast<std::int64_t>(i), r))
    return r;
  ListLock lock(as_list(list), TxAccess::kRead);
  ListState s = state(as_list(list));
  return root_locked(&s.arr()->slots[checked(i, s)]);
}

Word list_load_borrowed(Word list, std::size_t i) {
  Word w = kNull;
  std::size_t size = 0;
  if (list_read_borrowed(list, i, 1, size, [&w](std::size_t, Word x) { w = x; }) == 0) index_error(static_cast<std::int64_t>(i), size);
  return w;
}

std::size_t list_read_locked(Word list, std::size_t from, std::size_t max, std::size_t& size,
                             void (*put)(void*, std::size_t, Word), void* ctx) {
  ListLock lock(as_list(list), TxAccess::kRead);
  ListState s = state(as_list(list));
  const std::size_t k = from >= s.n ? 0 : std::min(max, s.n - from);
  for (std::size_t i = 0; i < k; ++i) put(ctx, i, s.arr()->slots[from + i].load(std::memory_order_acquire));
  size = s.n;
  return k;
}

Rooted list_load_signed(Word list, std::int64_t i) {
  Rooted r;
  if (!in_transaction() && try_load(as_list(list), i, r)) return r;
  ListLock lock(as_list(list), TxAccess::kRead);
  ListState s = state(as_list(list));
  return root_locked(&s.arr()->slots[checked_signed(i, s)]);
}

void list_set(Word list, std::size_t i, Word v) {
  ListLock lock(as_list(list), TxAccess::kWrite);
  ListState s = state(as_list(list));
  store_ref_logged(&s.arr()->slots[checked(i, s)], v);
}

void list_set_signed(Word list, std::int64_t i, Word v) {
  ListLock lock(as_list(list), TxAccess::kWrite);
  ListState s = state(as_list(list));
  store_ref_logged(&s.arr()->slots[checked_signed(i, s)], v);
}

Rooted list_exchange(Word list, std::size_t i, Word v) {
  ListLock lock(as_list(list), TxAccess::kWrite);
  ListState s = state(as_list(list));
  std::atomic<Word>* slot = &s.arr()->slots[checked(i, s)];
  Rooted old = root_locked(slot);
  store_ref_logged(slot, v);
  return old;
}

void list_append(Metadata* m, Word list, Word v) {
  Rooted ahead = storage_ahead(m, as_list(list), [](std::size_t n) { return n + 1; });
  ListLock lock(as_list(list), TxAccess::kWrite);
  append_at_end(m, as_list(list), state(as_list(list)), &v, 1, ahead);
}

void list_append_all(Metadata* m, Word list, const Word* v, std::size_t n) {
  Rooted ahead = storage_ahead(m, as_list(list), [n](std::size_t have) { return have + n; });
  ListLock lock(as_list(list), TxAccess::kWrite);
  append_at_end(m, as_list(list), state(as_list(list)), v, n, ahead);
}

void list_insert(Metadata* m, Word list, std::size_t i, Word v) {
  Rooted ahead = storage_ahead(m, as_list(list), [](std::size_t n) { return n + 1; });
  ListLock lock(as_list(list), TxAccess::kWrite);
  ListState s = state(as_list(list));
  if (i > s.n) index_error(static_cast<std::int64_t>(i), s.n);
  insert_at(m, lock, as_list(list), s, i, &v, 1, ahead);
}

void list_insert_all(Metadata* m, Word list, std::size_t i, const Word* v, std::size_t n) {
  Rooted ahead = storage_ahead(m, as_list(list), [n](std::size_t have) { return have + n; });
  ListLock lock(as_list(list), TxAccess::kWrite);
  ListState s = state(as_list(list));
  if (i > s.n) index_error(static_cast<std::int64_t>(i), s.n);
  if (n != 0) insert_at(m, lock, as_list(list), s, i, v, n, ahead);
}

void list_insert_clamped(Metadata* m, Word list, std::int64_t i, Word v) {
  Rooted ahead = storage_ahead(m, as_list(list), [](std::size_t n) { return n + 1; });
  ListLock lock(as_list(list), TxAccess::kWrite);
  ListState s = state(as_list(list));
  const auto n = static_cast<std::int64_t>(s.n);
  std::int64_t j = i < 0 ? i + n : i;
  if (j < 0) j = 0;
  if (j > n) j = n;
  insert_at(m, lock, as_list(list), s, static_cast<std::size_t>(j), &v, 1, ahead);
}

Rooted list_pop(Word list, std::size_t i) {
  ListLock lock(as_list(list), TxAccess::kWrite);
  ListState s = state(as_list(list));
  return erase_at(lock, as_list(list), s, checked(i, s));
}

Rooted list_pop_signed(Word list, std::int64_t i) {
  ListLock lock(as_list(list), TxAccess::kWrite);
  ListState s = state(as_list(list));
  return erase_at(lock, as_list(list), s, checked_signed(i, s));
}

bool list_erase_if(Word list, std::size_t i, Word expected) {
  ListLock lock(as_list(list), TxAccess::kWrite);
  ListState s = state(as_list(list));
  if (i >= s.n || !same_value(s.arr()->slots[i].load(std::memory_order_acquire), expected)) return false;
  erase_at(lock, as_list(list), s, i);
  return true;
}

void list_clear(Word list) {
  ListLock lock(as_list(list), TxAccess::kWrite);
  ListObject* l = as_list(list);
  ListState s = state(l);
  store_count_logged(&l->size, 0);  // first: a crash leaves stale slots past the end
  for (std::size_t k = 0; k < s.n; ++k) store_ref_logged(&s.arr()->slots[k], kNull);
}

bool list_replace_if(Metadata* m, Word list, std::uint64_t version, const Word* v, std::size_t k) {
  Rooted ahead = storage_ahead(m, as_list(list), [k](std::size_t) { return k; });
  ListLock lock(as_list(list), TxAccess::kWrite, /*begin_write=*/false);
  ListObject* l = as_list(list);
  // Under the lock, after a dead writer's repair: even, and only a holder of the lock moves it.
  if (l->version.load(std::memory_order_relaxed) != version) return false;
  lock.begin_write();
  ListState s = state(l);
  Word a = grow(m, l, s, k, ahead);
  ArrayObject* arr = as_array(a);
  lock.guard().begin_torn();
  for (std::size_t j = 0; j < k; ++j) store_ref_logged(&arr->slots[j], v[j]);
  store_count_logged(&l->size, k);
  lock.guard().end_torn();
  for (std::size_t j = k; j < s.n; ++j) store_ref_logged(&arr->slots[j], kNull);
  return true;
}

std::vector<Rooted> list_snapshot(Word list, TxAccess a, std::uint64_t* version) {
  if (!in_transaction() && a == TxAccess::kRead) {  // the lock-free read waits for nobody
    std::vector<Rooted> out;
    if (try_snapshot(as_list(list), out, version)) return out;
  }
  ListLock lock(as_list(list), a);
  if (version != nullptr) *version = as_list(list)->version.load(std::memory_order_relaxed);
  ListState s = state(as_list(list));
  std::vector<Rooted> out;
  out.reserve(s.n);
  for (std::size_t i = 0; i < s.n; ++i) {
    Word w = s.arr()->slots[i].load(std::memory_order_acquire);
    out.push_back(is_ref(w) ? root_locked(&s.arr()->slots[i]) : Rooted(w, nullptr));
  }
  return out;
}

// ---- set and map ----

std::size_t hash_size(Word h) {
  HashLock lock(as_hash(h), TxAccess::kRead);
  return as_hash(h)->size.load(std::memory_order_acquire);
}

bool hash_contains(Word h, Word key) {
  HashLock lock(as_hash(h), TxAccess::kRead);
  return find(as_hash(h), key) != nullptr;
}

bool map_get(Word map, Word key, Word* value) {
  HashLock lock(as_hash(map), TxAccess::kRead);
  TableEntry* e = find(as_hash(map), key);
  if (e == nullptr) return false;
  *value = e->value.load(std::memory_order_acquire);
  return true;
}

bool map_load(Word map, Word key, Rooted* value) {
  HashLock lock(as_hash(map), TxAccess::kRead);
  TableEntry* e = find(as_hash(map), key);
  if (e == nullptr) return false;
  *value = root_locked(&e->value);
  return true;
}

namespace {

// Runs `op(ho, ahead)` under the set's or map's lock once adding `key` needs no allocation there:
// when the key is absent and the table has no room for it, the lock is let go, the table a rehash
// needs is allocated (and may wait for a collector cycle) with no lock held, and the lock is taken
// again. An allocation may wait for a cycle, a cycle waits for the read scopes open at its flip,
// and a thread in a scope may wait for this lock, so nothing waits for the collector while holding
// it (as storage_ahead for lists). Nothing is changed before the lock is let go.
template <class Op>
bool with_room_for(Metadata* m, Word h, Word key, Op&& op) {
  Rooted ahead;
  for (;;) {
    std::size_t need;
    {
      HashLock lock(as_hash(h), TxAccess::kWrite);
      HashObject* ho = as_hash(h);
      const Word table = ho->table.load(std::memory_order_acquire);
      const bool full =
          table == kNull || (as_table(table)->used.load(std::memory_order_relaxed) + 1) * 4 > as_table(table)->capacity * 3;
      need = ho->size.load(std::memory_order_relaxed) + 1;
      const bool ready = ahead.word() != kNull && as_table(ahead.word())->capacity >= table_entries_for(need * 2);
      if (!full || ready || find(ho, key) != nullptr) return op(ho, ahead);
    }
    ahead = new_table(m, need * 2);
  }
}

}  // namespace

bool map_put(Metadata* m, Word map, Word key, Word value, Rooted* old) {
  return with_room_for(m, map, key, [&](HashObject* ho, Rooted& ahead) { return put(m, ho, key, value, old, ahead); });
}

bool map_put_if_absent(Metadata* m, Word map, Word key, Word value, Rooted* existing) {
  return with_room_for(m, map, key, [&](HashObject* ho, Rooted& ahead) {
    if (TableEntry* e = find(ho, key)) {
      *existing = root_locked(&e->value);
      return false;
    }
    return put(m, ho, key, value, nullptr, ahead);
  });
}

bool set_add(Metadata* m, Word set, Word key) {
  return with_room_for(m, set, key, [&](HashObject* ho, Rooted& ahead) {
    if (find(ho, key) != nullptr) return false;
    return put(m, ho, key, kNull, nullptr, ahead);
  });
}

bool hash_remove(Word h, Word key, Rooted* value) {
  HashLock lock(as_hash(h), TxAccess::kWrite);
  TableEntry* e = find(as_hash(h), key);
  if (e == nullptr) return false;
  remove_entry(as_hash(h), e, value);
  return true;
}

std::size_t hash_remove_all(Word h, const Word* keys, std::size_t n) {
  HashLock lock(as_hash(h), TxAccess::kWrite);
  std::size_t removed = 0;
  for (std::size_t i = 0; i < n; ++i) {
    TableEntry* e = find(as_hash(h), keys[i]);
    if (e == nullptr) continue;
    remove_entry(as_hash(h), e, nullptr);
    ++removed;
  }
  return removed;
}

bool hash_pop_any(Word h, Rooted* key, Rooted* value) {
  HashLock lock(as_hash(h), TxAccess::kWrite);
  HashObject* ho = as_hash(h);
  Word table = ho->table.load(std::memory_order_acquire);
  if (table == kNull) return false;
  TableObject* t = as_table(table);
  for (std::size_t i = 0; i < t->capacity; ++i) {
    TableEntry& e = t->entries[i];
    Word k = e.key.load(std::memory_order_acquire);
    if (k == kNull || k == kTombstone) continue;
    *key = k == kNullKey ? Rooted(kNull, nullptr) : root_locked(&e.key);
    remove_entry(ho, &e, value);
    return true;
  }
  return false;
}

void hash_clear(Word h) {
  HashLock lock(as_hash(h), TxAccess::kWrite);
  HashObject* ho = as_hash(h);
  store_count_logged(&ho->size, 0);
  store_ref_logged(&ho->table, kNull);
}

void hash_for_each_rooted(Word h, const std::function<void(Rooted, Rooted)>& f, TxAccess a) {
  std::vector<std::pair<Rooted, Rooted>> entries;
  {
    HashLock lock(as_hash(h), a);
    Word table = as_hash(h)->table.load(std::memory_order_acquire);
    if (table != kNull) {
      TableObject* t = as_table(table);
      entries.reserve(as_hash(h)->size.load(std::memory_order_relaxed));
      for (std::size_t i = 0; i < t->capacity; ++i) {
        Word k = t->entries[i].key.load(std::memory_order_acquire);
        if (k == kNull || k == kTombstone) continue;
        Rooted rk = k == kNullKey ? Rooted(kNull, nullptr) : root_locked(&t->entries[i].key);
        entries.emplace_back(std::move(rk), root_locked(&t->entries[i].value));
      }
    }
  }
  for (auto& [k, v] : entries) f(std::move(k), std::move(v));
}

}  // namespace colors::detail
