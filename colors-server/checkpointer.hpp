// The checkpoint thread of a server with --data-dir: takes checkpoints periodically
// (--checkpoint-interval), when a client asks (colors::checkpoint(), the `colors checkpoint`
// command), and once more at a clean shutdown.
//
// One checkpoint: the server's capture callback stops the collector's cycles and the clients
// (freezer.hpp) and copies the segment's pages holding data into this thread's image buffer
// (the only stop, as long as that copy); then this thread, with everybody running again, writes
// the image to DIR/checkpoint-<seq>.tmp, fsyncs it, renames it into place and keeps the newest
// two (data_dir.hpp). Requests that arrive while one is being taken are served by the next, so a
// request's answer always covers everything written before it was made.
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

namespace colors::server {

struct CaptureStats {
  std::int64_t stop_ns = 0;    // how long the clients were stopped
  std::size_t processes = 0;   // how many were stopped
};

class Checkpointer {
 public:
  // Fills `image` (segment-sized) and `info` (everything but seq) at one instant; "" or why not.
  using Capture = std::function<std::string(unsigned char* image, CheckpointInfo& info, CaptureStats& stats)>;

  struct Outcome {
    std::uint64_t token = 0;  // the requester's (0: periodic or shutdown)
    std::uint64_t seq = 0;    // the checkpoint written; 0 on failure
    int error_number = 0;     // errno of a failed write, else 0
    std::string error;        // empty on success
  };

  // `wake_fd` (an eventfd) is written whenever outcomes wait in take_outcomes().
  Checkpointer(DataDir& dir, std::size_t segment_size, std::int64_t interval_ns, Capture capture, int wake_fd);
  ~Checkpointer();
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  void start();
  void stop();  // waits for a checkpoint in progress
  void request(std::uint64_t token);
  std::vector<Outcome> take_outcomes();
  // Takes one checkpoint on the calling thread. REQUIRES: the thread is stopped (shutdown).
  Outcome run_once();

 private:
  void loop();

  DataDir& dir_;
  std::size_t size_;
  std::int64_t interval_ns_;
  Capture capture_;
  int wake_fd_;
  unsigned char* image_ = nullptr;  // segment-sized, private, pages touched only where data was
  WriteFault fault_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;                 // GUARDED_BY(mu_)
  std::vector<std::uint64_t> pending_;    // GUARDED_BY(mu_): tokens waiting for a checkpoint
  std::vector<Outcome> outcomes_;         // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace colors::server
