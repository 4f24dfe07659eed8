// The checkpoint thread of a server with --data-dir: full checkpoints (checkpoint_file.hpp)
// periodically (--checkpoint-interval), when a client or the `colors` command asks, when the log
// has grown past twice the heap's data, and once more at a clean shutdown; and, with --durability
// full or async, the records of the durability log between them (delta_log.hpp).
//
// Both are taken the same way: the server's stop_world callback stops the collector's cycles,
// the event loop's writes and every client process (freezer.hpp) and runs a copy step meanwhile,
// which is the only stop; then this thread, with everybody running again, writes what it copied
// and fsyncs it. A checkpoint copies every page holding data into `image_`; a log record compares
// each such page with `image_` and copies (and records) the ones that differ, so `image_` is always
// the segment as of the last capture.
//
// Invariants:
//  * have_base_ holds exactly when image_ equals what the data directory restores (the newest
//    checkpoint plus its log): a failed write clears it, and then the next capture is a full
//    checkpoint, never a record relative to an image the disk does not have.
//  * Requests are served only by a capture that began after they were queued, so an answer covers
//    everything its requester wrote (and committed) before asking; all requests queued before a
//    capture are answered by it (group commit).
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint_file.hpp"
#include "data_dir.hpp"
#include "delta_log.hpp"
#include "layout.hpp"

namespace colors::server {

struct CaptureStats {
  std::int64_t stop_ns = 0;    // how long the clients were stopped
  std::size_t processes = 0;   // how many were stopped
};

class Checkpointer {
 public:
  // Stops the world, runs `step`, resumes it; "" or why it could not stop it.
  using StopWorld = std::function<std::string(const std::function<void()>& step, CaptureStats& stats)>;

  struct Config {
    const unsigned char* segment = nullptr;  // the server's mapping
    int segment_fd = -1;
    std::size_t segment_size = 0;
    std::uint32_t layout_version = 0;
    std::uint64_t heap_id = 0;
    std::int64_t interval_ns = 0;        // periodic checkpoints; 0: none
    detail::DurabilityLevel durability = detail::DurabilityLevel::kNone;
    std::int64_t async_delay_ns = 0;     // kAsync: a commit is on disk within about this long
    std::function<std::uint64_t()> clock;  // the transaction clock
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
  // Failed log records are logged at most once a second (each failed commit would make one line):
  // when the last one was, and how many failed since without a line.
  std::int64_t failure_logged_ns_ = 0;
  std::uint64_t failures_unlogged_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;                    // GUARDED_BY(mu_)
  std::vector<std::uint64_t> checkpoints_;   // GUARDED_BY(mu_): tokens waiting for a checkpoint
  std::vector<std::uint64_t> syncs_;         // GUARDED_BY(mu_): tokens waiting for a record
  std::vector<Outcome> outcomes_;            // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace colors::server
