// The identity table of user proxies (classes.cpp): shared object word -> its live proxy, a
// borrowed reference (the proxy's handle erases its entry when it dies).
//
// Why not std::unordered_map: that allocates a node per insert and frees it per erase, on the path
// of every proxy made and dropped (a tree walk makes and drops one proxy per child it reads), and
// its lookups chase a pointer per bucket. This is one flat array.
//
// Linear probing with backward-shift deletion (no tombstones): a lookup of an absent word stops at
// the first empty entry whatever the history of inserts and erases, and erasing never degrades
// later probes.
//
// Invariants:
//  * keys are object addresses: 16-byte aligned, never 0; key 0 marks an empty entry;
//  * size_ <= capacity / 2 after every insert (reserve_one grows first), so an empty entry always
//    ends a probe run and runs stay short; the table shrinks when it is 1/8 full (hysteresis: a
//    size oscillating around one threshold cannot make it rehash on every call);
//  * every entry of a key sits between the key's home index and the first empty entry after it
//    (what backward-shift deletion preserves).
// REQUIRES: the GIL for every call (it is the table's only lock; nothing here releases it).
#pragma once
#include <Python.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace colors_py {

// Counts the entries that left either identity table (an erase, a clear) in this process. A
// lookup remembered together with this count (read_memo.hpp) is still the table's answer while the
// count has not moved: entries only ever leave by erase or clear, and a key's entry never changes
// to another proxy while its proxy is alive (insert replaces only a dying proxy's entry, and
// counts that as a removal).
// REQUIRES: the GIL, as every table operation.
inline std::uint64_t g_identity_removals = 0;

class IdentityTable {
 public:
  IdentityTable() { reset(kMinCapacity); }

  // The proxy of `key`, or nullptr.
  PyObject* find(std::uint64_t key) const {
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      const Entry& e = e_[i];
      if (e.key == key) return e.proxy;
      if (e.key == 0) return nullptr;
    }
  }

  // Makes room for one insert now, so that the insert that follows cannot fail (it may throw
  // std::bad_alloc; call it before creating what is to be inserted).
  void reserve_one() {
    if ((size_ + 1) * 2 > e_.size()) rehash(e_.size() * 2);
  }

  // Sets the proxy of `key` (replacing an entry of the same key: a proxy that is being destroyed
  // and was superseded). REQUIRES: reserve_one() since the last insert.
  void insert(std::uint64_t key, PyObject* proxy) {
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      Entry& e = e_[i];
      if (e.key == key) {
        if (e.proxy != proxy) ++g_identity_removals;  // the dying proxy's entry leaves
        e.proxy = proxy;
        return;
      }
      if (e.key == 0) {
        e.key = key;
        e.proxy = proxy;
        ++size_;
        return;
      }
    }
  }

  // Removes the entry of `key` if it is `proxy`'s (a newer proxy of the same object may have
  // replaced it, see insert).
  void erase(std::uint64_t key, PyObject* proxy) {
    std::size_t i = home(key);
    for (;; i = (i + 1) & mask_) {
      if (e_[i].key == key) break;
      if (e_[i].key == 0) return;
    }
    if (e_[i].proxy != proxy) return;
    ++g_identity_removals;
    // Backward shift: pull later entries of the run into the hole when that keeps them between
    // their home and their position (their probe distance may only shrink).
    for (std::size_t j = (i + 1) & mask_; e_[j].key != 0; j = (j + 1) & mask_) {
      std::size_t dist_j = (j - home(e_[j].key)) & mask_;
      if (((j - i) & mask_) <= dist_j) {
        e_[i] = e_[j];
        i = j;
      }
    }
    e_[i] = Entry{};
    --size_;
    if (e_.size() > kMinCapacity && size_ * 8 < e_.size()) {
      try {
        rehash(e_.size() / 2);
      } catch (const std::bad_alloc&) {
        // Keep the larger table: shrinking is only an economy.
      }
    }
  }

  void clear() {
    ++g_identity_removals;
    if (e_.size() > kMinCapacity) {
      reset(kMinCapacity);
    } else {
      for (Entry& e : e_) e = Entry{};
      size_ = 0;
    }
  }

  std::size_t size() const { return size_; }

 private:
  struct Entry {
    std::uint64_t key = 0;
    PyObject* proxy = nullptr;
  };
  static constexpr std::size_t kMinCapacity = 64;  // a power of two

  // Where a key's probe starts. Locality first: objects allocated together (a part, its list, its
  // connections) are read together, so within one span of capacity x 16 bytes of the heap the
  // home is the address itself (without its 4 always-zero low bits), and neighbouring objects'
  // entries share cache lines: a traversal's lookups miss the cache once per line, not once per
  // object (this took OO7 T1 from 48 to 33 ms). Each span is then rotated by its number times a
  // Fibonacci constant, so that dense spans of the heap a multiple of the table's size apart do
  // not pile up on the same entries (linear probing would make that one long run).
  std::size_t home(std::uint64_t key) const {
    const std::uint64_t k = key >> 4;
    return static_cast<std::size_t>((k + (k >> bits_) * 0x9E3779B97F4A7C15ull) & mask_);
  }

  void reset(std::size_t capacity) {
    std::vector<Entry> fresh(capacity);  // may throw: the table is unchanged then
    e_.swap(fresh);
    mask_ = capacity - 1;
    bits_ = static_cast<unsigned>(__builtin_ctzll(capacity));
    size_ = 0;
  }

  void rehash(std::size_t capacity) {
    std::vector<Entry> old(capacity);  // allocate first: on bad_alloc nothing changed
    old.swap(e_);
    mask_ = capacity - 1;
    bits_ = static_cast<unsigned>(__builtin_ctzll(capacity));
    size_ = 0;
    for (const Entry& e : old)
      if (e.key != 0) insert(e.key, e.proxy);
  }

  std::vector<Entry> e_;
  std::size_t mask_ = 0;
  unsigned bits_ = 0;
  std::size_t size_ = 0;
};

}  // namespace colors_py
