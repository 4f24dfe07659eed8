// The small file helpers the checkpoint and log formats share.
#pragma once
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace colors::server {

// "what: <strerror(errno)>".
inline std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// Reads exactly `n` bytes at `off`; false on an error or a file that ends first.
inline bool read_exact(int fd, void* p, std::size_t n, std::uint64_t off) {
  auto* b = static_cast<unsigned char*>(p);
  while (n > 0) {
    ssize_t got = ::pread(fd, b, n, static_cast<off_t>(off));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    b += got;
    n -= static_cast<std::size_t>(got);
    off += static_cast<std::uint64_t>(got);
  }
  return true;
}

}  // namespace colors::server
