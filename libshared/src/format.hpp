// Small text helpers shared by messages and logs.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

namespace colors::detail {

// "0x600000000000": addresses in error messages, logs and --help.
inline std::string hex(std::uint64_t a) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(a));
  return buf;
}

}  // namespace colors::detail
