// CRC-32C (Castagnoli), the checksum of checkpoint files: the SSE4.2 instruction where the CPU
// has it (about 20 GB/s, well above a disk's bandwidth), a table otherwise. Both give the same
// value (the test pins the standard check value of "123456789", 0xe3069283).
#pragma once
#include <cstddef>
#include <cstdint>

namespace colors::server {

// Extends `crc` (0 to start) over `n` bytes at `p`.
std::uint32_t crc32c(std::uint32_t crc, const void* p, std::size_t n);

}  // namespace colors::server
