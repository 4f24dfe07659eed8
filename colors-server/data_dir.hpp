// The data directory of --data-dir: where a server keeps its heap's checkpoints.
//
//   DIR/lock                          the InstanceLock of the server using DIR (one at a time)
//   DIR/checkpoint-<seq>.ckpt         complete checkpoints (checkpoint_file.hpp), <seq> 20 digits
//   DIR/checkpoint-<seq>.tmp          one being written; a leftover of a crash is removed at start
//   DIR/log-<seq>.wal                 the durability log after checkpoint <seq> (delta_log.hpp)
//
// A checkpoint's number is one more than the highest on disk, so a number can come back after its
// checkpoint was deleted; a log left under it is removed before the new checkpoint appears, so a
// log never meets a checkpoint it does not follow.
//
// Invariants: DIR is a directory of the server's user, mode 0700 (made so at open, as the heap
// directory is), and every file in it is created 0600 with O_EXCL | O_NOFOLLOW. A checkpoint file
// appears under its final name only by rename() after it was fsync'ed, and the directory is
// fsync'ed after each rename and unlink, so after a crash or power loss every *.ckpt is whole.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "instance_lock.hpp"

namespace colors::server {

class DataDir {
 public:
  // Creates DIR if needed, checks it and takes its lock. Returns "" or why it cannot be used
  // (another server holds it: its pid is named).
  std::string open(const std::string& dir);
  const std::string& path() const { return dir_; }

  // The sequence numbers of the complete checkpoints, newest first.
  std::vector<std::uint64_t> checkpoints() const;
  std::string checkpoint_path(std::uint64_t seq) const;
  std::string temp_path(std::uint64_t seq) const;
  std::uint64_t next_seq() const;

  // Opens a new temporary file for checkpoint `seq` (0600, O_EXCL); -1 with `error` set.
  int create_temp(std::uint64_t seq, std::string& error) const;
  // Removes a log left under `seq`, then renames the finished temporary file of `seq` to its final
  // name and syncs the directory.
  std::string commit(std::uint64_t seq) const;
  std::string log_path(std::uint64_t seq) const;
  // Creates the (empty) log after checkpoint `seq`, 0600, and syncs the directory; -1 with `error`.
  int open_log(std::uint64_t seq, std::string& error) const;
  // Removes checkpoint files beyond the newest `keep`, with their logs.
  void prune(std::size_t keep) const;
  void remove_temp(std::uint64_t seq) const;

 private:
  void sync_dir() const;

  std::string dir_;
  InstanceLock lock_;
};

}  // namespace colors::server
