// The checkpoint file: an image of the segment's pages that held data at one instant, with
// checksums, written to a temporary name and renamed into place once it is on disk.
//
// Format (little-endian; version 1):
//   [0, 4096)       header: magic "CLRSCKPT", format and layout versions, heap id, base address,
//                   segment size, sequence number, creation time, extent count, chunk size,
//                   data bytes, the extent table's CRC and the header's own CRC (CRC-32C with
//                   the field zero)
//   [4096, D)       extent table: {offset, length} per extent of the segment (page-aligned,
//                   ascending, disjoint), padded to 4096
//   [D, D+data)     the extents' bytes, concatenated
//   then            one CRC-32C per chunk_bytes of that data (the last chunk may be short), the
//                   CRC of that array, and the footer: magic "CLRSCEND" and the file's size
// Invariants:
//  * A file under its final name (checkpoint-<seq>.ckpt) was complete and fsync'ed before the
//    rename, and its directory was fsync'ed after it; a crash leaves at most a *.tmp file.
//  * A file is used only after every checksum of it matched (validate_checkpoint /
//    restore_checkpoint); so a torn, truncated or bit-flipped file is skipped, never half-restored.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace colors::server {

struct Extent {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

struct CheckpointInfo {
  std::uint32_t layout_version = 0;
  std::uint64_t heap_id = 0;
  std::uint64_t base = 0;          // the segment's fixed address
  std::uint64_t segment_size = 0;  // bytes
  std::uint64_t seq = 0;           // checkpoint number in its data directory
  std::uint64_t created_ns = 0;    // CLOCK_REALTIME
  std::uint64_t data_bytes = 0;    // sum of the extents' lengths
  std::vector<Extent> extents;
};

inline constexpr std::uint32_t kCheckpointChunk = 1u << 20;

// The extents of `fd` (a tmpfs segment file of `size` bytes) that hold pages: the parts of the
// segment ever written. Pages never touched read as zero and are left out.
std::vector<Extent> data_extents(int fd, std::uint64_t size);

struct WriteFault {
  // Test hook ($COLORS_DATA_DIR_FAULT_FULL): while a file exists at this path, writes fail with
  // ENOSPC as on a full disk: a checkpoint's and a log growth's after their first `full_after`
  // bytes (a torn file, a partly grown log, are left to clean up), a log record's at once.
  // Empty: never.
  std::string full_while_exists;
  std::uint64_t full_after = 0;
  bool disk_full() const;
};

// Test hook (tests only; the server never sets it): direct I/O (O_DIRECT) of a checkpoint's data
// fails with EINVAL from the first piece written (batch read) that starts at or past this byte of
// the data, as on a file system that refuses it; the code then goes on buffered from there.
// Negative: never.
inline std::atomic<std::int64_t> g_refuse_direct_io_from{-1};

// Writes the checkpoint of `image` (the segment's copy: info.segment_size bytes, of which only
// info.extents are read) to `fd`, then fdatasync()s it. Returns "" or what failed (errno text).
std::string write_checkpoint(int fd, const CheckpointInfo& info, const unsigned char* image, const WriteFault& fault);

// Checks the whole file at `path` (sizes, every checksum, footer) and fills `info`. Returns "" when
// it is valid, else what is wrong with it.
std::string validate_checkpoint(const std::string& path, CheckpointInfo& info);

// Copies a checkpoint's extents into `segment_fd` (already sized to the segment), checking every
// checksum on the way; returns "" or what is wrong (the caller then discards `segment_fd`'s file).
std::string restore_checkpoint(const std::string& path, int segment_fd, CheckpointInfo& info);

}  // namespace colors::server
