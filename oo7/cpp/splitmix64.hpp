// The OO7 generator's random source (SPEC.md "Generator"): SplitMix64 over wrapping unsigned
// 64-bit arithmetic. Every language draws the same sequence from the same seed, so the draw
// helpers here are the only place a value is drawn.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

namespace oo7 {

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    state_ += 0x9E3779B97F4A7C15ULL;
    std::uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // REQUIRES: n > 0.
  std::uint64_t rand(std::uint64_t n) { return next() % n; }
  // "type%03d" % rand(10)
  std::string type() {
    char buf[16];
    std::snprintf(buf, sizeof buf, "type%03d", static_cast<int>(rand(10)));
    return buf;
  }
  std::int64_t date() { return 1000 + static_cast<std::int64_t>(rand(1000)); }

 private:
  std::uint64_t state_;
};

}  // namespace oo7
