// Stopping every client process for the instant a checkpoint copies the segment.
//
// Why stop them: clients write the heap in place with no barrier a copy could hook (plain stores
// into fresh objects, lock words, the allocator's headers), so a copy taken while they run mixes
// states that never coexisted. Stopped (SIGSTOP, every thread in state T), the segment is exactly
// what it would be had each of them been killed -9 at that instant, and that is the state a
// successor server already knows how to recover (colors-server/README.md, "Surviving the
// server"): dead clients' transactions rolled back, their TLABs and roots reclaimed, their robust
// locks handed on. The stop lasts as long as the copy of the pages holding data (memory speed).
//
// Invariants:
//  * Every process this freezes is thawed (SIGCONT) by the same Freezer, also when the freeze
//    fails half-way, except a process that was already stopped before (job control, a debugger):
//    it is left as it was found.
//  * If the server dies while clients are frozen (kill -9 included), the guardian process (a
//    child forked at start-up that holds the read end of a pipe) sees the pipe close and sends
//    SIGCONT to the processes it was told are frozen. So no client stays stopped after its server.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace colors::server {

class Freezer {
 public:
  Freezer() = default;
  ~Freezer();
  Freezer(const Freezer&) = delete;
  Freezer& operator=(const Freezer&) = delete;

  // Forks the guardian. Call before any other thread starts. Returns "" or why it failed.
  std::string start_guardian();

  // Stops `pids` (duplicates allowed) and waits until every thread of each is stopped, at most
  // `timeout_ns`. On failure thaws what it stopped and returns why (a process that cannot be
  // signalled, e.g. another user's, or one that did not stop in time); "" on success.
  std::string freeze(const std::vector<pid_t>& pids, std::int64_t timeout_ns);
  // Resumes what freeze() stopped.
  void thaw();

 private:
  void tell_guardian(const std::string& line);

  std::vector<pid_t> frozen_;
  int guardian_fd_ = -1;
  pid_t guardian_pid_ = 0;
};

}  // namespace colors::server
