// The FNV fold of SPEC.md "Checks": integers fold as their 64-bit two's complement, strings as
// their UTF-8 length then each byte.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace oo7 {

class Fnv {
 public:
  void i(std::int64_t v) { h_ = (h_ ^ static_cast<std::uint64_t>(v)) * 1099511628211ULL; }
  void s(std::string_view str) {
    i(static_cast<std::int64_t>(str.size()));
    for (unsigned char b : str) i(b);
  }
  std::uint64_t value() const { return h_; }

 private:
  std::uint64_t h_ = 14695981039346656037ULL;
};

// The bytes of a string read from either database (the shared one has its own overload).
inline std::string_view view(std::string_view s) { return s; }

// 16 lowercase hex digits.
inline std::string hex16(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace oo7
