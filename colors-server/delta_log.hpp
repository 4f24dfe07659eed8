// The durability log (--durability full|async): after checkpoint <base>, DIR/log-<base>.wal holds
// a sequence of records, each the pages of the segment that changed since the one before (or since
// the checkpoint), taken at one instant (checkpointer.hpp: a copy no process wrote during, or one
// made with every client stopped, freezer.hpp). Replaying the records in order onto the checkpoint
// rebuilds the segment as of the last record's instant, which, like a checkpoint, is the segment
// of a moment when all clients died at once.
//
// Record (little-endian):
//   header, 64 bytes: magic "CLRSWAL1", base checkpoint seq, record seq (1, 2, ... per log),
//     page count, the transaction clock at the instant, creation time, page size, header CRC-32C
//   page count x u64: the byte offsets of the pages in the segment, ascending
//   page count x 4096 bytes: their contents
//   trailer, 16 bytes: CRC-32C of the offsets and contents, 4 zero bytes, magic "CLRSWEND"
// The file is grown ahead of the records, by zeros written and synced in steps of at least
// kLogGrowth (grow_log): overwriting blocks a file already has makes each record's fdatasync a
// data flush only, with no file-size or extent change to journal (half the time on ext4, as
// SQLite's reused WAL file). So the log ends at the first all-zero header, not at the file's end.
// Invariants:
//  * A record is written with one pwritev sequence into space grow_log made, and then
//    fdatasync'ed; a commit that waits for durability (its ticket on the durable-commit channel,
//    or kSync) is answered only after that returned.
//  * Replay applies a record only after its every byte was read and both checksums matched, and
//    stops at the first record that is short, damaged, out of sequence or of another base: a torn
//    tail (the crash cut the last append) loses exactly the records no commit was told were durable.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint_file.hpp"

namespace colors::server {

inline constexpr std::uint64_t kDeltaPage = 4096;

struct DeltaRecord {
  std::uint64_t base_seq = 0;
  std::uint64_t seq = 0;
  std::uint64_t tx_clock = 0;
  std::uint64_t created_ns = 0;
  std::vector<std::uint64_t> pages;  // byte offsets, ascending, page-aligned
};

inline constexpr std::uint64_t kLogGrowth = std::uint64_t{8} << 20;

// The bytes record `r` takes in the log.
std::uint64_t delta_size(const DeltaRecord& r);

// Makes the log at least `need` bytes long with zeros written and synced, growing it from
// `allocated` (updated) by at least kLogGrowth; "" or what failed.
std::string grow_log(int fd, std::uint64_t need, std::uint64_t& allocated, const WriteFault& fault);

// Writes `r` at `offset` (its end updated), with the pages' contents read from `image`
// (segment-sized), and fdatasync()s; "" or what failed (errno text).
// REQUIRES: grow_log made offset + delta_size(r) bytes.
std::string append_delta(int fd, const DeltaRecord& r, const unsigned char* image, const WriteFault& fault,
                         std::uint64_t& offset);

struct ReplayResult {
  std::uint64_t records = 0;  // applied
  std::uint64_t pages = 0;
  std::uint64_t bytes = 0;    // of the log consumed
  std::uint64_t last_clock = 0;
  std::string stopped;        // why replay stopped before the log's end ("" = clean end: the file's, or zeros)
};

// Applies the records of the log at `path` for checkpoint `base_seq` to `segment_fd`, in order,
// until the end or the first record that fails a check (ReplayResult::stopped says which and why).
// A missing log is an empty one. Returns "" or an I/O error of the segment.
std::string replay_log(const std::string& path, std::uint64_t base_seq, int segment_fd, std::uint64_t segment_size,
                       ReplayResult& result);

}  // namespace colors::server
