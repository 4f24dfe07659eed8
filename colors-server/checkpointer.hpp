// The checkpoint thread of a server with --data-dir: full checkpoints (checkpoint_file.hpp)
// periodically (--checkpoint-interval), when a client or the `colors` command asks, when the log
// has grown past twice the heap's data, and once more at a clean shutdown; and, with --durability
// full or async, the records of the durability log between them (delta_log.hpp).
//
// Both are taken the same way: the server's stop_world callback stops the collector's cycles,
// the event loop's writes and every client process (freezer.hpp) and runs a copy step meanwhile,
// which is the only stop; then this thread, with everybody running again, writes what it copied
// and fsyncs it. `image_` is always the segment as of the last capture.
//
// What the stop copies: with write tracking (written_pages.hpp), only the pages written since the
// last scan. A checkpoint first copies every page holding data while the clients run, then, in a
// few passes, the pages written meanwhile, and stops them only for the last few; a log record
// copies the written pages that differ from `image_`. Without it (a kernel before 6.7, an
// untracked client, a client that left since the last scan), a checkpoint copies every page
// holding data in the stop and a log record compares each with `image_`.
//
// Invariants:
//  * have_base_ holds exactly when image_ equals what the data directory restores (the newest
//    checkpoint plus its log): a failed write clears it, and then the next capture is a full
//    checkpoint, never a record relative to an image the disk does not have.
//  * tracking_valid_ holds exactly when image_ differs from the segment only in pages that the
//    next scan_written call will list: a capture whose stop included a successful scan sets it,
//    any failed scan clears it (a failed scan may have protected some mappings and not others).
//  * Requests are served only by a capture that began after they were queued, so an answer covers
//    everything its requester wrote (and committed) before asking; all requests queued before a
//    capture are answered by it (group commit). Requests come two ways: over the event loop
//    (request_checkpoint, request_sync: the link's kCheckpoint and kSync) and, under kFull, as
//    tickets on the durable-commit channel (libshared/src/durable_commit.hpp), read the same way:
//    before the capture begins.
//  * The thread sleeps only on the channel's bell (a futex word in the segment), so every request,
//    however it comes, and stop() ring it after making their change visible.
#pragma once
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint_file.hpp"
#include "data_dir.hpp"
#include "delta_log.hpp"
#include "durable_commit.hpp"
#include "layout.hpp"

namespace colors::server {

struct CaptureStats {
  bool frozen = false;         // whether the clients were stopped
  std::int64_t stop_ns = 0;    // how long
  std::size_t processes = 0;   // how many
};

std::string capture_summary(const CaptureStats& st, std::size_t stop_pages);

class Checkpointer {
 public:
  // Holds off the collector's cycles and the event loop's writes, and meanwhile runs `unfrozen`;
  // unless that returns true (the capture is complete), stops every client process, runs
  // `step`, resumes them. "" or why it could not stop them.
  using StopWorld = std::function<std::string(const std::function<bool()>& unfrozen, const std::function<void()>& step,
                                              CaptureStats& stats)>;

  struct Config {
    const unsigned char* segment = nullptr;  // the server's mapping
    detail::Metadata* meta = nullptr;        // its Metadata: the durable-commit channel
    int segment_fd = -1;
    std::size_t segment_size = 0;
    std::uint32_t layout_version = 0;
    std::uint64_t heap_id = 0;
    std::int64_t interval_ns = 0;        // periodic checkpoints; 0: none
    detail::DurabilityLevel durability = detail::DurabilityLevel::kNone;
    std::int64_t async_delay_ns = 0;     // kAsync: a commit is on disk within about this long
    std::function<std::uint64_t()> clock;  // the transaction clock
    // Appends the pages within the extents written since its previous call, and protects them
    // again (WrittenPages::scan); "" or why the list cannot be trusted. Empty: no write tracking.
    std::function<std::string(const std::vector<Extent>&, std::vector<std::uint64_t>&)> scan_written;
  };

  struct Outcome {
    std::uint64_t token = 0;  // the requester's (0: the server's own)
    std::uint64_t seq = 0;    // the checkpoint or log record written; 0 on failure
    int error_number = 0;     // errno of a failed write, else 0
    std::string error;        // empty on success
  };

  // `wake_fd` (an eventfd) is written whenever outcomes wait in take_outcomes().
  Checkpointer(DataDir& dir, Config config, StopWorld stop_world, int wake_fd);
  ~Checkpointer();
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  void start();
  void stop();  // waits for a capture in progress
  void request_checkpoint(std::uint64_t token);
  void request_sync(std::uint64_t token);  // a log record (or a checkpoint) after this call
  std::vector<Outcome> take_outcomes();
  // Takes one checkpoint on the calling thread. REQUIRES: the thread is stopped (shutdown).
  Outcome run_checkpoint();

 private:
  void loop();
  Outcome run_record();
  bool log_too_long() const;
  std::vector<Extent> current_extents();
  bool scan(const std::vector<Extent>& extents, std::vector<std::uint64_t>& pages);
  bool precopy();
  // The two steps of a capture's stop_world_: without stopping the clients, a scan, the copies
  // (`take`) of the pages it lists and another scan, complete once one lists nothing (a few
  // tries); else,
  // with them stopped, the copies of what the second scan listed (`pending`) and a last scan's,
  // or of every page holding data when tracking cannot vouch (`every_page_compared`: each taken,
  // else copied). Both leave the extents and the transaction clock of the capture's instant.
  bool capture_unfrozen(const std::function<void(std::uint64_t)>& take, std::vector<std::uint64_t>& pending,
                        std::vector<Extent>& extents, std::uint64_t& clock);
  void capture_frozen(const std::function<void(std::uint64_t)>& take, const std::vector<std::uint64_t>& pending,
                      bool every_page_compared, std::vector<Extent>& extents, std::uint64_t& clock, std::size_t& copied);
  void log_tracking_change();
  void gather_commits();

  DataDir& dir_;
  Config cfg_;
  StopWorld stop_world_;
  int wake_fd_;
  unsigned char* image_ = nullptr;  // segment-sized, private, pages touched only where data was
  WriteFault fault_;

  // Touched by the capturing thread only (the checkpoint thread, or the shutdown's).
  bool have_base_ = false;
  std::uint64_t base_seq_ = 0;       // checkpoint the log follows
  std::uint64_t base_bytes_ = 0;     // its data
  int log_fd_ = -1;
  std::uint64_t log_seq_ = 0;        // records in the log
  std::uint64_t log_bytes_ = 0;      // where the next record goes
  std::uint64_t log_allocated_ = 0;  // bytes grow_log made
  std::uint64_t last_clock_ = 0;     // the transaction clock at the last capture
  bool tracking_valid_ = false;
  std::vector<Extent> extents_;      // data_extents() when the file had extents_blocks_ blocks
  long long extents_blocks_ = -1;
  // Test hook (COLORS_CHECKPOINT_FAULT_HOLD_MS, server.cpp): every capture stops the clients.
  bool no_unfrozen_ = false;
  std::string untracked_;            // why the last scan failed ("" if it did not)
  std::string untracked_logged_;     // the reason last logged
  // Failed log records are logged at most once a second (each failed commit would make one line):
  // when the last one was, and how many failed since without a line.
  std::int64_t failure_logged_ns_ = 0;
  std::uint64_t failures_unlogged_ = 0;

  detail::ChannelServer channel_;
  // gather_commits: the committers seen at each of the last kCommittersWindow records.
  static constexpr std::size_t kCommittersWindow = 16;
  std::uint64_t committers_[kCommittersWindow] = {};
  std::uint64_t records_ = 0;
  std::mutex mu_;
  bool stopping_ = false;                    // GUARDED_BY(mu_)
  std::vector<std::uint64_t> checkpoints_;   // GUARDED_BY(mu_): tokens waiting for a checkpoint
  std::vector<std::uint64_t> syncs_;         // GUARDED_BY(mu_): tokens waiting for a record
  std::vector<Outcome> outcomes_;            // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace colors::server
