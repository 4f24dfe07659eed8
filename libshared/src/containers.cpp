#include "containers.hpp"

#include <string>

#include "barrier.hpp"
#include "colors/errors.hpp"
#include "objects.hpp"

namespace colors::detail {

namespace {

ListObject* as_list(Word w) { return reinterpret_cast<ListObject*>(w); }
HashObject* as_hash(Word w) { return reinterpret_cast<HashObject*>(w); }
ArrayObject* as_array(Word w) { return reinterpret_cast<ArrayObject*>(w); }
TableObject* as_table(Word w) { return reinterpret_cast<TableObject*>(w); }

[[noreturn]] void index_error(std::size_t i, std::size_t n) {
  throw IndexError("list index " + std::to_string(i) + " out of range (size " + std::to_string(n) + ")");
}

std::size_t array_capacity(Word a) { return a == kNull ? 0 : as_array(a)->capacity; }

// Makes room for `need` elements, copying into a larger array. Returns the array to use.
Word grow(Metadata* m, ListObject* l, Word array, std::size_t need) {
  std::size_t cap = array_capacity(array);
  if (need <= cap) return array;
  std::size_t ncap = cap < 4 ? 4 : cap * 2;
  if (ncap < need) ncap = need;
  Rooted fresh_root = new_array(m, TypeKind::kArray, ncap);
  Word fresh = fresh_root.word();
  std::size_t n = l->size.load(std::memory_order_acquire);
  if (n > cap) n = cap;
  for (std::size_t i = 0; i < n; ++i) init_ref(&as_array(fresh)->slots[i], as_array(array)->slots[i].load(std::memory_order_acquire));
  store_ref(&l->array, fresh);
  return fresh;
}

Word encode_key(Word k) { return k == kNull ? kNullKey : k; }
Word decode_key(Word k) { return k == kNullKey ? kNull : k; }

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

// Inserts a key known to be absent into a table with room. Returns false if no room (racing).
bool insert_new(TableObject* t, Word key, Word value, std::uint64_t h) {
  std::size_t mask = t->capacity - 1;
  for (std::size_t probe = 0, i = h & mask; probe < t->capacity; ++probe, i = (i + 1) & mask) {
    TableEntry& e = t->entries[i];
    Word k = e.key.load(std::memory_order_acquire);
    if (k == kNull || k == kTombstone) {
      store_ref(&e.value, value);
      e.hash.store(h, std::memory_order_relaxed);
      // The key is written last (release): a reader that sees it also sees hash and value.
      store_ref(&e.key, key);
      if (k == kNull) t->used.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  return false;
}

// Replaces the table by one sized for `need` live entries, dropping tombstones.
Word rehash(Metadata* m, HashObject* ho, Word table, std::size_t need) {
  Rooted fresh_root = new_table(m, need * 2);
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
  store_ref(&ho->table, fresh);
  return fresh;
}

bool put(Metadata* m, Word h, Word key, Word value) {
  HashObject* ho = as_hash(h);
  Word ekey = encode_key(key);
  std::uint64_t hv = value_hash(key);
  Word table = ho->table.load(std::memory_order_acquire);
  if (table != kNull) {
    if (TableEntry* e = find_entry(as_table(table), ekey, hv)) {
      store_ref(&e->value, value);
      return false;
    }
  }
  std::size_t size = ho->size.load(std::memory_order_relaxed);
  if (table == kNull || (as_table(table)->used.load(std::memory_order_relaxed) + 1) * 4 > as_table(table)->capacity * 3) {
    table = rehash(m, ho, table, size + 1);
  }
  if (!insert_new(as_table(table), ekey, value, hv)) {
    table = rehash(m, ho, table, size + 1);
    insert_new(as_table(table), ekey, value, hv);
  }
  ho->size.store(size + 1, std::memory_order_release);
  return true;
}

}  // namespace

// ---- list ----

std::size_t list_size(Word list) { return as_list(list)->size.load(std::memory_order_acquire); }

Word list_get(Word list, std::size_t i) {
  ListObject* l = as_list(list);
  std::size_t n = l->size.load(std::memory_order_acquire);
  Word a = l->array.load(std::memory_order_acquire);
  if (i >= n || i >= array_capacity(a)) index_error(i, n);
  return as_array(a)->slots[i].load(std::memory_order_acquire);
}

Rooted list_load(Word list, std::size_t i) {
  ListObject* l = as_list(list);
  std::size_t n = l->size.load(std::memory_order_acquire);
  Word a = l->array.load(std::memory_order_acquire);
  if (i >= n || i >= array_capacity(a)) index_error(i, n);
  return root_load(&as_array(a)->slots[i]);
}

void list_set(Word list, std::size_t i, Word v) {
  ListObject* l = as_list(list);
  std::size_t n = l->size.load(std::memory_order_acquire);
  Word a = l->array.load(std::memory_order_acquire);
  if (i >= n || i >= array_capacity(a)) index_error(i, n);
  store_ref(&as_array(a)->slots[i], v);
}

void list_append(Metadata* m, Word list, Word v) {
  ListObject* l = as_list(list);
  std::size_t n = l->size.load(std::memory_order_acquire);
  Word a = grow(m, l, l->array.load(std::memory_order_acquire), n + 1);
  store_ref(&as_array(a)->slots[n], v);
  l->size.store(n + 1, std::memory_order_release);
}

void list_insert(Metadata* m, Word list, std::size_t i, Word v) {
  ListObject* l = as_list(list);
  std::size_t n = l->size.load(std::memory_order_acquire);
  if (i > n) index_error(i, n);
  Word a = grow(m, l, l->array.load(std::memory_order_acquire), n + 1);
  ArrayObject* arr = as_array(a);
  for (std::size_t k = n; k > i; --k) store_ref(&arr->slots[k], arr->slots[k - 1].load(std::memory_order_acquire));
  store_ref(&arr->slots[i], v);
  l->size.store(n + 1, std::memory_order_release);
}

Word list_erase(Word list, std::size_t i) {
  ListObject* l = as_list(list);
  std::size_t n = l->size.load(std::memory_order_acquire);
  Word a = l->array.load(std::memory_order_acquire);
  std::size_t cap = array_capacity(a);
  if (i >= n || i >= cap) index_error(i, n);
  if (n > cap) n = cap;
  ArrayObject* arr = as_array(a);
  Word removed = arr->slots[i].load(std::memory_order_acquire);
  for (std::size_t k = i; k + 1 < n; ++k) store_ref(&arr->slots[k], arr->slots[k + 1].load(std::memory_order_acquire));
  store_ref(&arr->slots[n - 1], kNull);
  l->size.store(n - 1, std::memory_order_release);
  return removed;
}

void list_clear(Word list) {
  ListObject* l = as_list(list);
  std::size_t n = l->size.load(std::memory_order_acquire);
  Word a = l->array.load(std::memory_order_acquire);
  std::size_t cap = array_capacity(a);
  l->size.store(0, std::memory_order_release);
  for (std::size_t k = 0; k < n && k < cap; ++k) store_ref(&as_array(a)->slots[k], kNull);
}

// ---- set and map ----

std::size_t hash_size(Word h) { return as_hash(h)->size.load(std::memory_order_acquire); }

bool hash_contains(Word h, Word key) {
  Word table = as_hash(h)->table.load(std::memory_order_acquire);
  return table != kNull && find_entry(as_table(table), encode_key(key), value_hash(key)) != nullptr;
}

bool map_get(Word map, Word key, Word* value) {
  Word table = as_hash(map)->table.load(std::memory_order_acquire);
  if (table == kNull) return false;
  TableEntry* e = find_entry(as_table(table), encode_key(key), value_hash(key));
  if (e == nullptr) return false;
  *value = e->value.load(std::memory_order_acquire);
  return true;
}

bool map_load(Word map, Word key, Rooted* value) {
  Word table = as_hash(map)->table.load(std::memory_order_acquire);
  if (table == kNull) return false;
  TableEntry* e = find_entry(as_table(table), encode_key(key), value_hash(key));
  if (e == nullptr) return false;
  *value = root_load(&e->value);
  return true;
}

bool map_put(Metadata* m, Word map, Word key, Word value) { return put(m, map, key, value); }

bool set_add(Metadata* m, Word set, Word key) {
  if (hash_contains(set, key)) return false;
  return put(m, set, key, kNull);
}

bool hash_remove(Word h, Word key, Word* value) {
  HashObject* ho = as_hash(h);
  Word table = ho->table.load(std::memory_order_acquire);
  if (table == kNull) return false;
  TableEntry* e = find_entry(as_table(table), encode_key(key), value_hash(key));
  if (e == nullptr) return false;
  if (value != nullptr) *value = e->value.load(std::memory_order_acquire);
  store_ref(&e->key, kTombstone);
  store_ref(&e->value, kNull);
  std::size_t n = ho->size.load(std::memory_order_relaxed);
  ho->size.store(n == 0 ? 0 : n - 1, std::memory_order_release);
  return true;
}

void hash_clear(Word h) {
  HashObject* ho = as_hash(h);
  ho->size.store(0, std::memory_order_release);
  store_ref(&ho->table, kNull);
}

void hash_for_each(Word h, const std::function<void(Word, Word)>& f) {
  Word table = as_hash(h)->table.load(std::memory_order_acquire);
  if (table == kNull) return;
  TableObject* t = as_table(table);
  for (std::size_t i = 0; i < t->capacity; ++i) {
    Word k = t->entries[i].key.load(std::memory_order_acquire);
    if (k == kNull || k == kTombstone) continue;
    f(decode_key(k), t->entries[i].value.load(std::memory_order_acquire));
  }
}

}  // namespace colors::detail

namespace colors::detail {

void hash_for_each_rooted(Word h, const std::function<void(Rooted, Rooted)>& f) {
  Word table = as_hash(h)->table.load(std::memory_order_acquire);
  if (table == kNull) return;
  TableObject* t = as_table(table);
  for (std::size_t i = 0; i < t->capacity; ++i) {
    Rooted k = root_load(&t->entries[i].key);
    if (k.word() == kNull || k.word() == kTombstone) continue;
    Rooted v = root_load(&t->entries[i].value);
    if (k.word() == kNullKey) k = Rooted(kNull, nullptr);
    f(std::move(k), std::move(v));
  }
}

}  // namespace colors::detail
