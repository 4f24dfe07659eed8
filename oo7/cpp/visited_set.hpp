// The visited set of T1's depth-first search over the atomic parts of one composite part: an
// open-addressing table of part identities (an address) that is emptied in O(1) between
// searches by advancing a stamp, so a fresh set per composite part visit costs no clearing.
// Both databases use this same set, so it adds the same cost to both sides of a ratio.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

namespace oo7 {

class VisitedSet {
 public:
  VisitedSet() { resize(6); }

  // Empties the set.
  void clear() {
    count_ = 0;
    if (++stamp_ == 0) {  // the stamp wrapped: old entries could look current
      std::fill(stamps_.begin(), stamps_.end(), 0);
      stamp_ = 1;
    }
  }

  // Adds `key` (not 0). False when it was there already.
  bool insert(std::uintptr_t key) {
    if ((count_ + 1) * 2 > stamps_.size()) grow();
    std::size_t i = slot(key);
    while (stamps_[i] == stamp_) {
      if (keys_[i] == key) return false;
      i = (i + 1) & mask_;
    }
    stamps_[i] = stamp_;
    keys_[i] = key;
    ++count_;
    return true;
  }

  bool contains(std::uintptr_t key) const {
    std::size_t i = slot(key);
    while (stamps_[i] == stamp_) {
      if (keys_[i] == key) return true;
      i = (i + 1) & mask_;
    }
    return false;
  }

 private:
  std::size_t slot(std::uintptr_t key) const {
    return static_cast<std::size_t>((static_cast<std::uint64_t>(key) * 0x9E3779B97F4A7C15ULL) >> shift_);
  }
  void resize(unsigned bits) {
    stamps_.assign(std::size_t{1} << bits, 0);
    keys_.assign(std::size_t{1} << bits, 0);
    mask_ = (std::size_t{1} << bits) - 1;
    shift_ = 64 - bits;
    bits_ = bits;
  }
  void grow() {
    std::vector<std::uintptr_t> live;
    for (std::size_t i = 0; i < stamps_.size(); ++i)
      if (stamps_[i] == stamp_) live.push_back(keys_[i]);
    resize(bits_ + 1);
    stamp_ = 1;
    count_ = 0;
    for (std::uintptr_t k : live) insert(k);
  }

  std::vector<std::uint32_t> stamps_;
  std::vector<std::uintptr_t> keys_;
  std::size_t mask_ = 0;
  unsigned shift_ = 0, bits_ = 0;
  std::uint32_t stamp_ = 1;
  std::size_t count_ = 0;
};

}  // namespace oo7
